// Dashboard sessions (migration 014): rows keyed by the SHA-256 of the cookie's token.
import type { SqlExecutor } from '../store/types.js';

export interface SessionRecord {
  tokenHash: string;
  userId: string;
  csrfToken: string;
  /** Unix milliseconds. */
  createdAt: number;
  lastSeenAt: number;
}

interface SessionRow {
  token_hash: string;
  user_id: string;
  csrf_token: string;
  created_at: number;
  last_seen_at: number;
}

const INSERT = 'INSERT INTO dashboard_sessions (token_hash, user_id, csrf_token, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)';
const GET = 'SELECT token_hash, user_id, csrf_token, created_at, last_seen_at FROM dashboard_sessions WHERE token_hash = ?';
const TOUCH = 'UPDATE dashboard_sessions SET last_seen_at = ? WHERE token_hash = ?';
const DELETE = 'DELETE FROM dashboard_sessions WHERE token_hash = ?';
const DELETE_USER = 'DELETE FROM dashboard_sessions WHERE user_id = ?';
const DELETE_EXPIRED = 'DELETE FROM dashboard_sessions WHERE last_seen_at <= ? OR created_at <= ?';

export class SessionsRepo {
  constructor(private readonly db: SqlExecutor) {}

  async insert(s: SessionRecord): Promise<void> {
    await this.db.run(INSERT, [s.tokenHash, s.userId, s.csrfToken, s.createdAt, s.lastSeenAt]);
  }

  async get(tokenHash: string): Promise<SessionRecord | undefined> {
    const r = await this.db.get<SessionRow>(GET, [tokenHash]);
    return r && { tokenHash: r.token_hash, userId: r.user_id, csrfToken: r.csrf_token, createdAt: r.created_at, lastSeenAt: r.last_seen_at };
  }

  async touch(tokenHash: string, at: number): Promise<void> {
    await this.db.run(TOUCH, [at, tokenHash]);
  }

  async delete(tokenHash: string): Promise<boolean> {
    return (await this.db.run(DELETE, [tokenHash])).changes > 0;
  }

  /** Ends every session of the user; returns how many there were. */
  async deleteForUser(userId: string): Promise<number> {
    return (await this.db.run(DELETE_USER, [userId])).changes;
  }

  /** Deletes sessions last seen at or before `idleBefore` or created at or before `createdBefore` (what resolve() refuses). */
  async deleteExpired(idleBefore: number, createdBefore: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED, [idleBefore, createdBefore])).changes;
  }
}
