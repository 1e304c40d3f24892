// When and how a hostname's certificate is issued by ACME: the job (one process of a cluster, the
// singleton jobs) asks for the verified hostnames that are due (no certificate yet, a retry's time come,
// two-thirds of the certificate's lifetime gone) and issues each in turn. One issuance per hostname at a
// time across processes (a claim on its row: the CLI's `issue` and the job may both try); each order is
// counted against the hostname's and its owner's hourly limits before it starts; a failure is recorded
// with its reason and retried after a backoff that doubles, from a minute up to a day; a renewal that
// fails leaves the current certificate serving.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AcmeConfig } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import type { DueHostname } from '../db/repos/hostname-tls.js';
import { encryptSecret } from '../auth/secrets.js';
import { AcmeIssuer, IssuanceError } from './acme-issuer.js';
import { CertificateError, checkCertificate } from './certificate-pem.js';

const HOUR_MS = 3_600_000;
/** A claim outlives any issuance (acme.timeoutMs per request, a few requests), and is dropped when it ends. */
const CLAIM_MS = 10 * 60_000;
const FIRST_BACKOFF_MS = 60_000;
const MAX_BACKOFF_MS = 24 * HOUR_MS;
/** Hostnames issued per round of the job (the rest wait for the next round). */
const BATCH = 20;

/** When a certificate valid from `notBefore` to `notAfter` is renewed: two-thirds of its lifetime in. */
export function renewalTime(notBefore: number, notAfter: number): number {
  return Math.round(notBefore + ((notAfter - notBefore) * 2) / 3);
}

/** The wait before the next try after `failures` failed attempts in a row (1 -> a minute, doubling, at most a day). */
export function backoffMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.max(0, failures - 1));
}

export interface IssuanceDeps {
  config: AcmeConfig;
  repos: Repos;
  masterKey: Buffer;
  now: () => number;
  log: Logger;
  /** After a certificate is stored (the process's route table reloads at once). */
  changed?: () => void | Promise<void>;
}

export type IssuanceOutcome =
  | { outcome: 'issued'; notAfter: number }
  | { outcome: 'failed'; reason: string; nextAttemptAt: number }
  | { outcome: 'limited'; reason: string; nextAttemptAt: number }
  | { outcome: 'busy' };

export class CertificateIssuance {
  private readonly issuer: AcmeIssuer;

  constructor(private readonly deps: IssuanceDeps) {
    this.issuer = new AcmeIssuer({ config: deps.config, repos: deps.repos, masterKey: deps.masterKey, now: deps.now, log: deps.log });
  }

  /** One round of the job: every due hostname (a bounded batch), one after another. */
  async runDue(): Promise<IssuanceOutcome[]> {
    const { repos, now } = this.deps;
    const t = now();
    await repos.hostnameTls.prune(t - HOUR_MS, t);
    const due = await repos.hostnameTls.due(t, BATCH);
    const outcomes: IssuanceOutcome[] = [];
    for (const hostname of due) outcomes.push(await this.issue(hostname));
    return outcomes;
  }

  /** The issuance limit `hostname`'s next order would exceed, with when it fits again; undefined: none. */
  private async limited(h: DueHostname, t: number): Promise<{ reason: string; at: number } | undefined> {
    const { repos, config } = this.deps;
    const since = t - HOUR_MS;
    const ofHostname = await repos.hostnameTls.ordersOfHostname(h.hostnameId, since);
    if (ofHostname.n >= config.ordersPerHostnamePerHour) {
      const at = (ofHostname.oldest ?? t) + HOUR_MS;
      return { reason: `Issuance limit: ${ofHostname.n} certificate orders for ${h.hostname} in the last hour (acme.ordersPerHostnamePerHour); next try at ${new Date(at).toISOString()}`, at };
    }
    const ofUser = await repos.hostnameTls.ordersOfUser(h.userId, since);
    if (ofUser.n >= config.ordersPerUserPerHour) {
      const at = (ofUser.oldest ?? t) + HOUR_MS;
      return { reason: `Issuance limit: ${ofUser.n} certificate orders for this account's hostnames in the last hour (acme.ordersPerUserPerHour); next try at ${new Date(at).toISOString()}`, at };
    }
    return undefined;
  }

  /** Issues (or renews) `h`'s certificate now, unless another process is at it or a limit is reached. */
  async issue(h: DueHostname): Promise<IssuanceOutcome> {
    const { repos, now, log, masterKey } = this.deps;
    const started = now();
    if (!(await repos.hostnameTls.claim(h.hostnameId, started + CLAIM_MS))) return { outcome: 'busy' };
    const limit = await this.limited(h, started);
    if (limit) {
      await repos.hostnameTls.recordFailure(h.hostnameId, limit.reason, limit.at, false);
      log.warn({ hostname: h.hostname, nextAttemptAt: new Date(limit.at).toISOString() }, 'acme: issuance limit reached; waiting');
      return { outcome: 'limited', reason: limit.reason, nextAttemptAt: limit.at };
    }
    await repos.hostnameTls.addOrder(randomUUID(), h.hostnameId, h.userId, started);
    try {
      const issued = await this.issuer.issue(h.hostname);
      const cert = checkCertificate(issued.chainPem, issued.keyPem, h.hostname, now());
      const renewAt = renewalTime(cert.notBefore, cert.notAfter);
      await repos.hostnameTls.storeCertificate(
        h.hostnameId,
        { source: 'acme', pem: cert.pem, keyEnc: encryptSecret(masterKey, cert.keyPem), fingerprint: cert.fingerprint, notBefore: cert.notBefore, notAfter: cert.notAfter, issuedAt: now() },
        renewAt,
      );
      log.info({ hostname: h.hostname, notAfter: new Date(cert.notAfter).toISOString(), renewAt: new Date(renewAt).toISOString(), ms: now() - started }, 'acme: certificate issued');
      await this.deps.changed?.();
      return { outcome: 'issued', notAfter: cert.notAfter };
    } catch (err) {
      const reason = err instanceof IssuanceError || err instanceof CertificateError ? err.message : 'The certificate could not be issued (an internal error, logged)';
      if (!(err instanceof IssuanceError || err instanceof CertificateError)) log.error({ err, hostname: h.hostname }, 'acme: issuance failed');
      const failures = ((await repos.hostnameTls.get(h.hostnameId))?.failures ?? 0) + 1;
      const nextAttemptAt = now() + backoffMs(failures);
      await repos.hostnameTls.recordFailure(h.hostnameId, reason, nextAttemptAt);
      log.warn({ hostname: h.hostname, reason, failures, nextAttemptAt: new Date(nextAttemptAt).toISOString() }, 'acme: certificate not issued; will try again');
      return { outcome: 'failed', reason, nextAttemptAt };
    }
  }
}
