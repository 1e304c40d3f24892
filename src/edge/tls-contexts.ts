// The HTTPS listener's certificate per SNI name: a project hostname's own, from its route (which the
// route table loads with its TLS row, so a certificate issued or uploaded by any process is served by
// every worker once the table reloads), else the operator's (the listener's default context). A
// SecureContext is made once per certificate (its key unsealed then) and kept while the fingerprint holds.
import { createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import { decryptSecret } from '../auth/secrets.js';
import type { EdgeRoute } from '../db/repos/hostname-model.js';

/**
 * Mozilla's "intermediate" TLS 1.2 suites (ECDHE, AEAD only); TLS 1.3's are node's defaults. The
 * listener's own context uses them too (server.ts).
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

export type RouteOf = (servername: string) => EdgeRoute | undefined | Promise<EdgeRoute | undefined>;

/** How often contexts of hostnames that are gone (or lost their certificate) are dropped. */
const PRUNE_EVERY_MS = 60_000;

export class HostnameTlsContexts {
  /** By hostname id: kept across the route table's reloads while the certificate is the same. */
  private readonly held = new Map<string, { hostname: string; fingerprint: string; context: SecureContext }>();
  private prunedAt = performance.now();

  constructor(
    private readonly masterKey: Buffer,
    private readonly routeOf: RouteOf,
  ) {}

  /** The context of a route's certificate; undefined when it has none (the listener's default serves). */
  contextOf(route: EdgeRoute | undefined): SecureContext | undefined {
    const cert = route?.tls?.certificate;
    if (!route || !cert) return undefined;
    const held = this.held.get(route.hostnameId);
    if (held && held.fingerprint === cert.fingerprint) return held.context;
    const context = createSecureContext({ cert: cert.pem, key: decryptSecret(this.masterKey, cert.keyEnc), minVersion: 'TLSv1.2', ciphers: TLS12_CIPHERS });
    this.held.set(route.hostnameId, { hostname: route.hostname, fingerprint: cert.fingerprint, context });
    return context;
  }

  /** Drops the contexts (and unsealed keys) of hostnames removed, renamed or left without a certificate. */
  private prune(): void {
    const now = performance.now();
    if (now - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = now;
    for (const [id, entry] of this.held) {
      const route = this.routeOf(entry.hostname);
      // A table being reloaded answers later: keep the entry until the next prune.
      if (route instanceof Promise) continue;
      if (route?.hostnameId !== id || route.tls?.certificate?.fingerprint !== entry.fingerprint) this.held.delete(id);
    }
  }

  /** The HTTPS server's SNICallback. */
  readonly sni = (servername: string, cb: (err: Error | null, ctx?: SecureContext) => void): void => {
    this.prune();
    const answer = (route: EdgeRoute | undefined): void => {
      let context: SecureContext | undefined;
      try {
        context = this.contextOf(route);
      } catch (err) {
        cb(err as Error);
        return;
      }
      cb(null, context);
    };
    const route = this.routeOf(servername);
    if (route instanceof Promise) route.then(answer, () => cb(null, undefined));
    else answer(route);
  };

  /**
   * After the handshake: cuts a connection below its hostname's minimum TLS version. (OpenSSL settles
   * the version before it asks for the SNI context, so a context's own minimum would not apply.)
   */
  readonly checkVersion = (socket: TLSSocket): void => {
    const name = (socket as TLSSocket & { servername?: string | false }).servername;
    if (typeof name !== 'string' || name === '') return;
    const judge = (route: EdgeRoute | undefined): void => {
      if (route?.tls?.minTls === '1.3' && socket.getProtocol() !== 'TLSv1.3') socket.destroy();
    };
    const route = this.routeOf(name);
    if (route instanceof Promise) route.then(judge, () => undefined);
    else judge(route);
  };
}
