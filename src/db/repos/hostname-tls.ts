// Project hostnames' TLS (migration 028): settings and certificate per hostname (hostname_tls; no row:
// the defaults and no certificate), the HTTP-01 answers of ACME challenges, and the orders the issuance
// limits count. The ACME job's rules (what is due, backoff, renewal) live in src/certificates/.
import type { SqlExecutor } from '../store/types.js';

export type MinTls = '1.2' | '1.3';
export type TlsState = 'pending' | 'issuing' | 'issued' | 'failed';

export interface TlsSettings {
  /** Plain HTTP requests are answered 308 to https:// (once the hostname has a certificate). */
  redirectHttps: boolean;
  /** Strict-Transport-Security max-age on HTTPS answers; 0: no header. */
  hstsMaxAge: number;
  hstsIncludeSubdomains: boolean;
  /** Handshakes below this version are cut. */
  minTls: MinTls;
}

export const DEFAULT_TLS_SETTINGS: TlsSettings = { redirectHttps: false, hstsMaxAge: 0, hstsIncludeSubdomains: false, minTls: '1.2' };

export interface StoredCertificate {
  source: 'acme' | 'uploaded';
  /** The leaf first, then its chain. */
  pem: string;
  /** The private key, sealed with the master key (auth/secrets.ts). */
  keyEnc: string;
  /** SHA-256 of the leaf, hex with colons (X509Certificate.fingerprint256). */
  fingerprint: string;
  notBefore: number;
  notAfter: number;
  issuedAt: number;
}

export interface HostnameTls extends TlsSettings {
  hostnameId: string;
  certificate: StoredCertificate | null;
  state: TlsState;
  lastError: string | null;
  failures: number;
  /** When the ACME job acts next (issue, retry, renew); null: never (an uploaded certificate). */
  nextAttemptAt: number | null;
  updatedAt: number;
}

/** A hostname the ACME job should act on now. */
export interface DueHostname {
  hostnameId: string;
  hostname: string;
  userId: string;
}

interface Row {
  hostname_id: string;
  redirect_https: number;
  hsts_max_age: number;
  hsts_subdomains: number;
  min_tls: MinTls;
  source: 'acme' | 'uploaded' | null;
  cert_pem: string | null;
  key_enc: string | null;
  fingerprint: string | null;
  not_before: number | null;
  not_after: number | null;
  issued_at: number | null;
  state: TlsState;
  last_error: string | null;
  failures: number;
  next_attempt_at: number | null;
  updated_at: number;
}

const COLUMN_NAMES = [
  'hostname_id', 'redirect_https', 'hsts_max_age', 'hsts_subdomains', 'min_tls', 'source', 'cert_pem', 'key_enc', 'fingerprint',
  'not_before', 'not_after', 'issued_at', 'state', 'last_error', 'failures', 'next_attempt_at', 'updated_at',
];
const COLUMNS = COLUMN_NAMES.join(', ');

export function toHostnameTls(r: Row): HostnameTls {
  const certificate: StoredCertificate | null =
    r.source !== null && r.cert_pem !== null && r.key_enc !== null
      ? {
          source: r.source,
          pem: r.cert_pem,
          keyEnc: r.key_enc,
          fingerprint: r.fingerprint ?? '',
          notBefore: Number(r.not_before),
          notAfter: Number(r.not_after),
          issuedAt: Number(r.issued_at),
        }
      : null;
  return {
    hostnameId: r.hostname_id,
    redirectHttps: Number(r.redirect_https) === 1,
    hstsMaxAge: Number(r.hsts_max_age),
    hstsIncludeSubdomains: Number(r.hsts_subdomains) === 1,
    minTls: r.min_tls,
    certificate,
    state: r.state,
    lastError: r.last_error,
    failures: Number(r.failures),
    nextAttemptAt: r.next_attempt_at === null ? null : Number(r.next_attempt_at),
    updatedAt: Number(r.updated_at),
  };
}

const GET = `SELECT ${COLUMNS} FROM hostname_tls WHERE hostname_id = ?`;
const OF_USER = `SELECT ${COLUMN_NAMES.map((c) => `t.${c}`).join(', ')} FROM hostname_tls t JOIN project_hostnames h ON h.id = t.hostname_id
  JOIN projects p ON p.id = h.project_id WHERE p.user_id = ?`;
// A row with the defaults, due now, unless one exists.
const ADD_ROW = `INSERT INTO hostname_tls (hostname_id, next_attempt_at, updated_at) VALUES (?, ?, ?) ON CONFLICT (hostname_id) DO NOTHING`;
const SET_SETTINGS = `UPDATE hostname_tls SET redirect_https = ?, hsts_max_age = ?, hsts_subdomains = ?, min_tls = ?, updated_at = ? WHERE hostname_id = ?`;
// Verified hostnames the job acts on now: those without a row, and those whose next attempt is due and
// that no process holds a claim on. Oldest first, a bounded batch.
const DUE = `SELECT h.id AS "hostnameId", h.hostname AS hostname, p.user_id AS "userId"
  FROM project_hostnames h JOIN projects p ON p.id = h.project_id LEFT JOIN hostname_tls t ON t.hostname_id = h.id
  WHERE h.verified_at IS NOT NULL AND (t.hostname_id IS NULL OR (t.next_attempt_at IS NOT NULL AND t.next_attempt_at <= ? AND (t.claimed_until IS NULL OR t.claimed_until < ?)))
  ORDER BY COALESCE(t.next_attempt_at, 0), h.id LIMIT ?`;
const CLAIM = `UPDATE hostname_tls SET state = 'issuing', claimed_until = ?, updated_at = ?
  WHERE hostname_id = ? AND (claimed_until IS NULL OR claimed_until < ?)`;
const ISSUED = `UPDATE hostname_tls SET source = ?, cert_pem = ?, key_enc = ?, fingerprint = ?, not_before = ?, not_after = ?, issued_at = ?,
  state = 'issued', last_error = NULL, failures = 0, next_attempt_at = ?, claimed_until = NULL, updated_at = ? WHERE hostname_id = ?`;
const FAILED = `UPDATE hostname_tls SET state = ?, last_error = ?, failures = failures + ?, next_attempt_at = ?, claimed_until = NULL, updated_at = ?
  WHERE hostname_id = ?`;
const REMOVE_CERT = `UPDATE hostname_tls SET source = NULL, cert_pem = NULL, key_enc = NULL, fingerprint = NULL, not_before = NULL, not_after = NULL,
  issued_at = NULL, state = 'pending', last_error = NULL, failures = 0, next_attempt_at = ?, claimed_until = NULL, updated_at = ? WHERE hostname_id = ?`;
const DUE_NOW = `UPDATE hostname_tls SET next_attempt_at = ?, updated_at = ? WHERE hostname_id = ? AND (source IS NULL OR source = 'acme')`;
const COUNTS = `SELECT
  (SELECT COUNT(*) FROM hostname_tls WHERE cert_pem IS NOT NULL) AS certificates,
  (SELECT COUNT(*) FROM hostname_tls WHERE state = 'failed') AS failing,
  (SELECT MIN(not_after) FROM hostname_tls WHERE cert_pem IS NOT NULL) AS "soonestExpiry"`;

const PUT_CHALLENGE = `INSERT INTO acme_challenges (token, hostname, key_auth, expires_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (token) DO UPDATE SET hostname = excluded.hostname, key_auth = excluded.key_auth, expires_at = excluded.expires_at`;
const CHALLENGE = 'SELECT key_auth AS "keyAuth" FROM acme_challenges WHERE token = ? AND hostname = ? AND expires_at > ?';
const DELETE_CHALLENGE = 'DELETE FROM acme_challenges WHERE token = ?';
const PRUNE_CHALLENGES = 'DELETE FROM acme_challenges WHERE expires_at <= ?';

const ADD_ORDER = 'INSERT INTO acme_orders (id, hostname_id, user_id, started_at) VALUES (?, ?, ?, ?)';
const ORDERS_OF_HOSTNAME = 'SELECT COUNT(*) AS n, MIN(started_at) AS oldest FROM acme_orders WHERE hostname_id = ? AND started_at > ?';
const ORDERS_OF_USER = 'SELECT COUNT(*) AS n, MIN(started_at) AS oldest FROM acme_orders WHERE user_id = ? AND started_at > ?';
const PRUNE_ORDERS = 'DELETE FROM acme_orders WHERE started_at <= ?';

export interface OrderCount {
  n: number;
  /** The oldest order in the window (when it leaves the window, one more fits); null: none. */
  oldest: number | null;
}

export interface TlsCounts {
  certificates: number;
  failing: number;
  /** The earliest not_after of any stored certificate; null: none. */
  soonestExpiry: number | null;
}

export class HostnameTlsRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number,
  ) {}

  private now(): number {
    return this.clock();
  }

  async get(hostnameId: string): Promise<HostnameTls | undefined> {
    const row = await this.db.get<Row>(GET, [hostnameId]);
    return row ? toHostnameTls(row) : undefined;
  }

  /** The rows of every hostname of the user's projects, by hostname id. */
  async ofUser(userId: string): Promise<Map<string, HostnameTls>> {
    const rows = await this.db.all<Row>(OF_USER, [userId]);
    return new Map(rows.map((r) => [r.hostname_id, toHostnameTls(r)]));
  }

  /** Makes the hostname's row with the defaults (due at `dueAt`) when it has none; one statement. */
  private async addRow(hostnameId: string, dueAt: number | null): Promise<void> {
    await this.db.run(ADD_ROW, [hostnameId, dueAt, this.now()]);
  }

  async setSettings(hostnameId: string, s: TlsSettings): Promise<void> {
    await this.addRow(hostnameId, this.now());
    await this.db.run(SET_SETTINGS, [s.redirectHttps ? 1 : 0, s.hstsMaxAge, s.hstsIncludeSubdomains ? 1 : 0, s.minTls, this.now(), hostnameId]);
  }

  async due(now: number, limit: number): Promise<DueHostname[]> {
    return this.db.all<DueHostname>(DUE, [now, now, limit]);
  }

  /** Takes the hostname for an issuance until `until`; false when another process holds it. */
  async claim(hostnameId: string, until: number): Promise<boolean> {
    const now = this.now();
    await this.addRow(hostnameId, now);
    return (await this.db.run(CLAIM, [until, now, hostnameId, now])).changes === 1;
  }

  /** Stores a certificate (its key sealed); `nextAttemptAt` the renewal (null: never, an uploaded one). */
  async storeCertificate(hostnameId: string, cert: StoredCertificate, nextAttemptAt: number | null): Promise<void> {
    await this.addRow(hostnameId, nextAttemptAt);
    await this.db.run(ISSUED, [
      cert.source, cert.pem, cert.keyEnc, cert.fingerprint, cert.notBefore, cert.notAfter, cert.issuedAt, nextAttemptAt, this.now(), hostnameId,
    ]);
  }

  /**
   * Records an attempt that did not issue: its reason and the next try. `counted` false for a wait that
   * is not a failure (an issuance limit reached): the failure count, which sets the backoff, stays.
   */
  async recordFailure(hostnameId: string, reason: string, nextAttemptAt: number, counted = true): Promise<void> {
    await this.db.run(FAILED, [counted ? 'failed' : 'pending', reason, counted ? 1 : 0, nextAttemptAt, this.now(), hostnameId]);
  }

  /** Drops the certificate and its key; ACME may issue again from `dueAt` (null: not). False when no row. */
  async removeCertificate(hostnameId: string, dueAt: number | null): Promise<boolean> {
    return (await this.db.run(REMOVE_CERT, [dueAt, this.now(), hostnameId])).changes === 1;
  }

  /** Makes an ACME hostname due now (issue now); false for an uploaded certificate or no row. */
  async dueNow(hostnameId: string): Promise<boolean> {
    const now = this.now();
    await this.addRow(hostnameId, now);
    return (await this.db.run(DUE_NOW, [now, now, hostnameId])).changes === 1;
  }

  async counts(): Promise<TlsCounts> {
    const row = await this.db.get<{ certificates: unknown; failing: unknown; soonestExpiry: unknown }>(COUNTS);
    const soonest = row?.soonestExpiry;
    return {
      certificates: Number(row?.certificates ?? 0),
      failing: Number(row?.failing ?? 0),
      soonestExpiry: soonest === null || soonest === undefined ? null : Number(soonest),
    };
  }

  // --- HTTP-01 challenges ---------------------------------------------------------------------------

  async putChallenge(token: string, hostname: string, keyAuth: string, expiresAt: number): Promise<void> {
    await this.db.run(PUT_CHALLENGE, [token, hostname, keyAuth, expiresAt]);
  }

  /** The key authorization to answer for `token` on `hostname`, while the challenge lasts. */
  async challenge(token: string, hostname: string, now: number): Promise<string | undefined> {
    return (await this.db.get<{ keyAuth: string }>(CHALLENGE, [token, hostname, now]))?.keyAuth;
  }

  async deleteChallenge(token: string): Promise<void> {
    await this.db.run(DELETE_CHALLENGE, [token]);
  }

  // --- orders (issuance limits) ---------------------------------------------------------------------

  async addOrder(id: string, hostnameId: string, userId: string, at: number): Promise<void> {
    await this.db.run(ADD_ORDER, [id, hostnameId, userId, at]);
  }

  async ordersOfHostname(hostnameId: string, since: number): Promise<OrderCount> {
    return orderCount(await this.db.get(ORDERS_OF_HOSTNAME, [hostnameId, since]));
  }

  async ordersOfUser(userId: string, since: number): Promise<OrderCount> {
    return orderCount(await this.db.get(ORDERS_OF_USER, [userId, since]));
  }

  /** Drops orders started at or before `before` and challenges over by `now`. */
  async prune(before: number, now: number): Promise<void> {
    await this.db.run(PRUNE_ORDERS, [before]);
    await this.db.run(PRUNE_CHALLENGES, [now]);
  }
}

function orderCount(row: unknown): OrderCount {
  const r = row as { n?: unknown; oldest?: unknown } | undefined;
  return { n: Number(r?.n ?? 0), oldest: r?.oldest === null || r?.oldest === undefined ? null : Number(r.oldest) };
}
