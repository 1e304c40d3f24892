// Dashboard sessions (migration 014): rows keyed by the SHA-256 of the cookie's token.
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';

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

export class SessionsRepo {
  private readonly insertStmt: Statement<[string, string, string, number, number]>;
  private readonly getStmt: Statement<[string], SessionRow>;
  private readonly touchStmt: Statement<[number, string]>;
  private readonly deleteStmt: Statement<[string]>;
  private readonly deleteUserStmt: Statement<[string]>;
  private readonly deleteExpiredStmt: Statement<[number, number]>;

  constructor(db: Db) {
    this.insertStmt = db.prepare('INSERT INTO dashboard_sessions (token_hash, user_id, csrf_token, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)');
    this.getStmt = db.prepare('SELECT token_hash, user_id, csrf_token, created_at, last_seen_at FROM dashboard_sessions WHERE token_hash = ?');
    this.touchStmt = db.prepare('UPDATE dashboard_sessions SET last_seen_at = ? WHERE token_hash = ?');
    this.deleteStmt = db.prepare('DELETE FROM dashboard_sessions WHERE token_hash = ?');
    this.deleteUserStmt = db.prepare('DELETE FROM dashboard_sessions WHERE user_id = ?');
    this.deleteExpiredStmt = db.prepare('DELETE FROM dashboard_sessions WHERE last_seen_at <= ? OR created_at <= ?');
  }

  insert(s: SessionRecord): void {
    this.insertStmt.run(s.tokenHash, s.userId, s.csrfToken, s.createdAt, s.lastSeenAt);
  }

  get(tokenHash: string): SessionRecord | undefined {
    const r = this.getStmt.get(tokenHash);
    return r && { tokenHash: r.token_hash, userId: r.user_id, csrfToken: r.csrf_token, createdAt: r.created_at, lastSeenAt: r.last_seen_at };
  }

  touch(tokenHash: string, at: number): void {
    this.touchStmt.run(at, tokenHash);
  }

  delete(tokenHash: string): boolean {
    return this.deleteStmt.run(tokenHash).changes > 0;
  }

  /** Ends every session of the user; returns how many there were. */
  deleteForUser(userId: string): number {
    return this.deleteUserStmt.run(userId).changes;
  }

  /** Deletes sessions last seen at or before `idleBefore` or created at or before `createdBefore` (what resolve() refuses). */
  deleteExpired(idleBefore: number, createdBefore: number): number {
    return this.deleteExpiredStmt.run(idleBefore, createdBefore).changes;
  }
}
