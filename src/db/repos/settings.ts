// Key-value settings (string values).
import type { SqlExecutor } from '../store/types.js';

/** Where a server serves, as it recorded when it last started on this data directory (src/server-record.ts). */
export interface ServerEndpoints {
  s3: string;
  s3Tls: string | null;
  cdn: string;
  /** The region it serves (the only one requests may be signed for). */
  region?: string;
  /** Who recorded it, to tell whether that server still runs: host name, pid, when it started. */
  host?: string;
  pid?: number;
  startedAt?: number;
  /** The process's start time as the OS counts it (Linux: /proc/<pid>/stat), to tell a reused pid. */
  processStart?: string;
  /** When it stopped cleanly; null while it runs (or if it died without stopping). */
  stoppedAt?: number | null;
}

const SERVER_ENDPOINTS = 'server.endpoints';

const GET = 'SELECT value FROM settings WHERE name = ?';
const SET = 'INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value';
const DELETE = 'DELETE FROM settings WHERE name = ?';
const MARK_STOPPED = 'UPDATE settings SET value = ? WHERE name = ? AND value = ?';

export class SettingsRepo {
  constructor(private readonly db: SqlExecutor) {}

  async get(name: string): Promise<string | undefined> {
    return (await this.db.get<{ value: string }>(GET, [name]))?.value;
  }

  async set(name: string, value: string): Promise<void> {
    await this.db.run(SET, [name, value]);
  }

  async delete(name: string): Promise<boolean> {
    return (await this.db.run(DELETE, [name])).changes > 0;
  }

  /** Written by the server once it listens, so admin commands (other processes) print the real endpoint. */
  async setServerEndpoints(endpoints: ServerEndpoints): Promise<void> {
    await this.set(SERVER_ENDPOINTS, JSON.stringify(endpoints));
  }

  /**
   * A clean stop: marks the record stopped if it is still `mine` (a later server on the same data
   * directory may have replaced it). One statement, so a concurrent start cannot be overwritten.
   */
  async markServerStopped(mine: ServerEndpoints, stoppedAt: number): Promise<boolean> {
    return (await this.db.run(MARK_STOPPED, [JSON.stringify({ ...mine, stoppedAt }), SERVER_ENDPOINTS, JSON.stringify(mine)])).changes > 0;
  }

  async serverEndpoints(): Promise<ServerEndpoints | undefined> {
    const raw = await this.get(SERVER_ENDPOINTS);
    if (raw === undefined) return undefined;
    try {
      const e = JSON.parse(raw) as Partial<Record<keyof ServerEndpoints, unknown>>;
      if (typeof e.s3 !== 'string' || typeof e.cdn !== 'string') return undefined;
      return {
        s3: e.s3,
        s3Tls: typeof e.s3Tls === 'string' ? e.s3Tls : null,
        cdn: e.cdn,
        ...(typeof e.region === 'string' ? { region: e.region } : {}),
        ...(typeof e.host === 'string' ? { host: e.host } : {}),
        ...(typeof e.pid === 'number' ? { pid: e.pid } : {}),
        ...(typeof e.startedAt === 'number' ? { startedAt: e.startedAt } : {}),
        ...(typeof e.processStart === 'string' ? { processStart: e.processStart } : {}),
        ...(typeof e.stoppedAt === 'number' ? { stoppedAt: e.stoppedAt } : { stoppedAt: null }),
      };
    } catch {
      return undefined;
    }
  }
}
