// Key-value settings (string values).
import type { Statement } from 'better-sqlite3';
import type { Db } from '../open.js';

/** Where a server serves, as it recorded when it last started on this data directory. */
export interface ServerEndpoints {
  s3: string;
  s3Tls: string | null;
  cdn: string;
}

const SERVER_ENDPOINTS = 'server.endpoints';

export class SettingsRepo {
  private readonly getStmt: Statement<[string], { value: string }>;
  private readonly setStmt: Statement<[string, string]>;
  private readonly deleteStmt: Statement<[string]>;

  constructor(db: Db) {
    this.getStmt = db.prepare('SELECT value FROM settings WHERE name = ?');
    this.setStmt = db.prepare(
      'INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
    );
    this.deleteStmt = db.prepare('DELETE FROM settings WHERE name = ?');
  }

  get(name: string): string | undefined {
    return this.getStmt.get(name)?.value;
  }

  set(name: string, value: string): void {
    this.setStmt.run(name, value);
  }

  delete(name: string): boolean {
    return this.deleteStmt.run(name).changes > 0;
  }

  /** Written by the server once it listens, so admin commands (other processes) print the real endpoint. */
  setServerEndpoints(endpoints: ServerEndpoints): void {
    this.set(SERVER_ENDPOINTS, JSON.stringify(endpoints));
  }

  serverEndpoints(): ServerEndpoints | undefined {
    const raw = this.get(SERVER_ENDPOINTS);
    if (raw === undefined) return undefined;
    try {
      const e = JSON.parse(raw) as Partial<ServerEndpoints>;
      return typeof e.s3 === 'string' && typeof e.cdn === 'string' ? { s3: e.s3, s3Tls: typeof e.s3Tls === 'string' ? e.s3Tls : null, cdn: e.cdn } : undefined;
    } catch {
      return undefined;
    }
  }
}
