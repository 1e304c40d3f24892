// Dashboard sessions: a random token in the cookie, its SHA-256 in the database (SessionsRepo), and a
// CSRF token per session that state-changing requests echo in a header. A session ends when its user
// signs out, after `idleMs` unused or `maxMs` after sign-in, and when the user's password changes
// (`users passwd`) or an operator runs `users signout`: every use reads the row, so an end made by
// another process takes effect on the next request.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionsRepo } from '../db/repos/sessions.js';

export interface SessionPolicy {
  idleMs: number;
  maxMs: number;
}

export interface OpenedSession {
  /** The cookie's value: shown to the browser once, never stored. */
  token: string;
  csrfToken: string;
}

export interface LiveSession {
  userId: string;
  csrfToken: string;
  /** Stable id of the session (not the token): rate-limit key, logs. */
  id: string;
}

/** Tokens are 32 random bytes, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
/** last_seen_at is written at most this often per session (idle expiry has this resolution). */
const TOUCH_EVERY_MS = 30_000;

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export class DashboardSessions {
  constructor(
    private readonly repo: SessionsRepo,
    private readonly policy: SessionPolicy,
    private readonly now: () => number,
  ) {}

  async open(userId: string): Promise<OpenedSession> {
    const at = this.now();
    // Sign-ins are rare: a good moment to forget sessions that ended by expiry.
    await this.repo.deleteExpired(at - this.policy.idleMs, at - this.policy.maxMs);
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    await this.repo.insert({ tokenHash: hashToken(token), userId, csrfToken, createdAt: at, lastSeenAt: at });
    return { token, csrfToken };
  }

  /** The live session of a cookie token; undefined when unknown, ended or expired. */
  async resolve(token: string): Promise<LiveSession | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const tokenHash = hashToken(token);
    const row = await this.repo.get(tokenHash);
    if (!row) return undefined;
    const at = this.now();
    if (at - row.lastSeenAt >= this.policy.idleMs || at - row.createdAt >= this.policy.maxMs) {
      await this.repo.delete(tokenHash);
      return undefined;
    }
    if (at - row.lastSeenAt >= TOUCH_EVERY_MS) await this.repo.touch(tokenHash, at);
    return { userId: row.userId, csrfToken: row.csrfToken, id: tokenHash.slice(0, 16) };
  }

  async close(token: string): Promise<void> {
    if (TOKEN.test(token)) await this.repo.delete(hashToken(token));
  }

  /** Ends every session of the user (a new password, `users signout`); returns how many ended. */
  closeAll(userId: string): Promise<number> {
    return this.repo.deleteForUser(userId);
  }
}

/** Whether the header's CSRF token is the session's, compared in constant time. */
export function csrfMatches(session: LiveSession, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false;
  const given = Buffer.from(header);
  const expected = Buffer.from(session.csrfToken);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
