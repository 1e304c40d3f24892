// A project hostname's HTTPS as its owner (the API, the dashboard) and the operator (the admin CLI) see
// and change it: the status of its certificate in words, its settings (redirect, HSTS, minimum TLS
// version), an uploaded certificate, its removal, and "issue now". Input is checked here, once, for all.
// Every write tells `changed`, so this process's route table (which carries what the handshake and the
// proxy need) reloads at once; other processes see it within the route table's check (edge/route.ts).
import type { AcmeConfig } from '../config/schema.js';
import type { ProjectHostname, Repos } from '../db/repos/index.js';
import { DEFAULT_TLS_SETTINGS, type HostnameTls, type MinTls, type TlsSettings } from '../db/repos/hostname-tls.js';
import { encryptSecret } from '../auth/secrets.js';
import { invalid } from '../projects/errors.js';
import { CertificateError, checkCertificate, dnsNames } from './certificate-pem.js';
import { renewalTime } from './issuance.js';
import { X509Certificate } from 'node:crypto';

/** Two years: the longest HSTS max-age browsers' preload lists ask for. */
export const MAX_HSTS_SECONDS = 63_072_000;

export type TlsStatusState = 'unverified' | 'acme-off' | 'pending' | 'issuing' | 'issued' | 'failed' | 'uploaded';

export interface TlsStatus {
  hostname: string;
  /** What is happening, as one word (`summary` says it in a sentence). */
  state: TlsStatusState;
  summary: string;
  /** Whether this server obtains certificates by ACME (acme.directory). */
  acme: boolean;
  certificate: {
    source: 'acme' | 'uploaded';
    fingerprint: string;
    names: string[];
    notBefore: string;
    notAfter: string;
    /** When ACME renews it; null for an uploaded one. */
    renewsAt: string | null;
    expired: boolean;
  } | null;
  lastError: string | null;
  failures: number;
  nextAttemptAt: string | null;
  settings: TlsSettings;
}

export interface TlsServiceDeps {
  repos: Repos;
  acme: Pick<AcmeConfig, 'directory'>;
  masterKey: Buffer;
  now: () => number;
  changed?: () => void | Promise<void>;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function summaryOf(state: TlsStatusState, hostname: string, t: HostnameTls | undefined, now: number): string {
  const cert = t?.certificate;
  switch (state) {
    case 'unverified':
      return `Verify ${hostname} first: a certificate is requested once the hostname is verified`;
    case 'acme-off':
      return 'Automatic certificates are off on this server (the operator sets --acme-directory); upload a certificate instead';
    case 'pending':
      return t?.lastError ? `Waiting: ${t.lastError}` : 'A certificate will be requested shortly';
    case 'issuing':
      return 'A certificate is being requested from the certificate authority';
    case 'failed':
      return cert
        ? `Renewal failed: ${t?.lastError ?? 'unknown reason'}. The current certificate is served until ${iso(cert.notAfter)}`
        : `Issuance failed: ${t?.lastError ?? 'unknown reason'}`;
    case 'uploaded':
    case 'issued':
      if (cert && cert.notAfter <= now) return `The certificate expired on ${iso(cert.notAfter)}`;
      return `Served over HTTPS until ${cert ? iso(cert.notAfter) : '?'}`;
  }
}

/** A boolean field of the settings input, or the current value when absent. */
function bool(input: Record<string, unknown>, field: string, current: boolean): boolean {
  const v = input[field];
  if (v === undefined) return current;
  if (typeof v !== 'boolean') throw invalid(`${field} must be true or false`);
  return v;
}

export class TlsService {
  constructor(private readonly deps: TlsServiceDeps) {}

  private get acmeOn(): boolean {
    return this.deps.acme.directory !== '';
  }

  async status(hostname: ProjectHostname): Promise<TlsStatus> {
    const t = await this.deps.repos.hostnameTls.get(hostname.id);
    const now = this.deps.now();
    const cert = t?.certificate ?? null;
    let state: TlsStatusState;
    if (cert?.source === 'uploaded') state = 'uploaded';
    else if (t?.state === 'issuing' || t?.state === 'failed') state = t.state;
    else if (cert) state = 'issued';
    else if (hostname.verifiedAt === null) state = 'unverified';
    else if (!this.acmeOn) state = 'acme-off';
    else state = 'pending';
    let names: string[] = [];
    if (cert) {
      try {
        names = dnsNames(new X509Certificate(cert.pem));
      } catch {
        names = [];
      }
    }
    return {
      hostname: hostname.hostname,
      state,
      summary: summaryOf(state, hostname.hostname, t, now),
      acme: this.acmeOn,
      certificate: cert
        ? {
            source: cert.source,
            fingerprint: cert.fingerprint,
            names,
            notBefore: iso(cert.notBefore),
            notAfter: iso(cert.notAfter),
            renewsAt: cert.source === 'acme' && this.acmeOn ? iso(renewalTime(cert.notBefore, cert.notAfter)) : null,
            expired: cert.notAfter <= now,
          }
        : null,
      lastError: t?.lastError ?? null,
      failures: t?.failures ?? 0,
      nextAttemptAt: t?.nextAttemptAt != null && this.acmeOn && cert?.source !== 'uploaded' ? iso(t.nextAttemptAt) : null,
      settings: t ? { redirectHttps: t.redirectHttps, hstsMaxAge: t.hstsMaxAge, hstsIncludeSubdomains: t.hstsIncludeSubdomains, minTls: t.minTls } : { ...DEFAULT_TLS_SETTINGS },
    };
  }

  /** Changes the settings named in `input` (the rest stay): redirectHttps, hstsMaxAge, hstsIncludeSubdomains, minTls. */
  async updateSettings(hostname: ProjectHostname, input: unknown): Promise<TlsStatus> {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw invalid('The body must be a JSON object of settings: redirectHttps, hstsMaxAge, hstsIncludeSubdomains, minTls');
    const body = input as Record<string, unknown>;
    const known = ['redirectHttps', 'hstsMaxAge', 'hstsIncludeSubdomains', 'minTls'];
    const unknown = Object.keys(body).filter((k) => !known.includes(k));
    if (unknown.length > 0) throw invalid(`Unknown setting ${unknown[0]}: the settings are ${known.join(', ')}`);
    const current = (await this.deps.repos.hostnameTls.get(hostname.id)) ?? DEFAULT_TLS_SETTINGS;
    let hstsMaxAge = current.hstsMaxAge;
    if (body.hstsMaxAge !== undefined) {
      const v = body.hstsMaxAge;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_HSTS_SECONDS) throw invalid(`hstsMaxAge must be whole seconds from 0 (no header) to ${MAX_HSTS_SECONDS} (two years)`);
      hstsMaxAge = v;
    }
    let minTls: MinTls = current.minTls;
    if (body.minTls !== undefined) {
      if (body.minTls !== '1.2' && body.minTls !== '1.3') throw invalid("minTls must be '1.2' or '1.3'");
      minTls = body.minTls;
    }
    const settings: TlsSettings = {
      redirectHttps: bool(body, 'redirectHttps', current.redirectHttps),
      hstsMaxAge,
      hstsIncludeSubdomains: bool(body, 'hstsIncludeSubdomains', current.hstsIncludeSubdomains),
      minTls,
    };
    await this.deps.repos.hostnameTls.setSettings(hostname.id, settings);
    await this.deps.changed?.();
    return this.status(hostname);
  }

  /** Stores an uploaded certificate and key (checked: names the hostname, current, key matches); ACME leaves it alone. */
  async upload(hostname: ProjectHostname, input: { certificate?: unknown; privateKey?: unknown }): Promise<TlsStatus> {
    if (typeof input.certificate !== 'string' || typeof input.privateKey !== 'string') throw invalid('certificate and privateKey must be PEM text');
    let cert;
    try {
      cert = checkCertificate(input.certificate, input.privateKey, hostname.hostname, this.deps.now());
    } catch (err) {
      if (err instanceof CertificateError) throw invalid(err.message);
      throw err;
    }
    await this.deps.repos.hostnameTls.storeCertificate(
      hostname.id,
      { source: 'uploaded', pem: cert.pem, keyEnc: encryptSecret(this.deps.masterKey, cert.keyPem), fingerprint: cert.fingerprint, notBefore: cert.notBefore, notAfter: cert.notAfter, issuedAt: this.deps.now() },
      null,
    );
    await this.deps.changed?.();
    return this.status(hostname);
  }

  /** Drops the certificate and its key; with ACME on, a new one is requested at once. */
  async remove(hostname: ProjectHostname): Promise<TlsStatus> {
    await this.deps.repos.hostnameTls.removeCertificate(hostname.id, this.acmeOn ? this.deps.now() : null);
    await this.deps.changed?.();
    return this.status(hostname);
  }

  /** Asks for a certificate now (the ACME job takes it on its next round, within acme.checkIntervalSeconds). */
  async requestIssue(hostname: ProjectHostname): Promise<TlsStatus> {
    if (hostname.verifiedAt === null) throw invalid(`Verify ${hostname.hostname} first: certificates are issued for verified hostnames only`);
    if (!this.acmeOn) throw invalid('Automatic certificates are off on this server (the operator sets --acme-directory); upload a certificate instead');
    const t = await this.deps.repos.hostnameTls.get(hostname.id);
    if (t?.certificate?.source === 'uploaded') throw invalid('The hostname serves an uploaded certificate: remove it first to have one issued');
    await this.deps.repos.hostnameTls.dueNow(hostname.id);
    await this.deps.changed?.();
    return this.status(hostname);
  }
}
