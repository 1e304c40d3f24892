// A serving process's metadata: the data directory prepared (data-dir-setup.ts: the store, the master key,
// the root user, the TLD seed) with this process's share of the row cache, and, on SQLite, the WAL as a
// serving process writes it (db/wal-mode.ts: shared flushes; checkpoints only where the jobs run). On
// PostgreSQL (nodes on one database, docs/DEPLOYMENT.md) a commit is durable when it returns.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { ProcessShare } from '../cdn/cache/shares.js';
import { META_DB_FILE } from '../db/data-dir.js';
import { prepareDataDir, type PreparedDataDir } from '../data-dir-setup.js';
import { DURABLE_AT_COMMIT, type Durability } from '../db/wal-sync.js';
import { walMode } from '../db/wal-mode.js';
import type { Closers } from './closers.js';
import type { Role } from './roles.js';
import { readCacheBytes } from './shares.js';

/**
 * How long a serving process's statement waits for another connection's lock on meta.db (a backup,
 * `sqlite3` by hand, an admin command's long transaction) before the request is refused with 503.
 */
export const SQLITE_BUSY_WAIT_MS = 5000;

export interface Metadata extends PreparedDataDir {
  /** The metadata is a PostgreSQL database (db undefined), which other nodes may share. */
  postgres: boolean;
  /** meta.db's path (SQLite). */
  dbFile: string;
  durability: Durability;
}

/** Opens the metadata for a serving process; its closers (the store first of all) go on `closers`. */
export async function openMetadata(config: Config, r: Role, opts: { share?: ProcessShare | undefined; log: Logger; closers: Closers }): Promise<Metadata> {
  const { log, closers } = opts;
  const cacheBytes = readCacheBytes(config, opts.share, r.role);
  const dir = await prepareDataDir(config, {
    postgres: { onError: (err) => log.warn({ err }, 'metadata: a PostgreSQL connection failed (the pool connects again)'), readCacheBytes: cacheBytes },
    sqliteReadCacheBytes: cacheBytes,
    // Another connection's lock is waited for on timers, never on the event loop (docs/ARCHITECTURE.md
    // "A busy database"); past the wait a write is refused with 503.
    sqliteBusyWaitMs: SQLITE_BUSY_WAIT_MS,
  });
  closers.push(() => dir.store.close());
  const dbFile = join(config.dataDir, META_DB_FILE);
  // A worker never checkpoints: the supervisor's checkpointer does it for every connection.
  const durability = dir.db ? walMode(dir.db, dbFile, { log, checkpoints: r.runsJobs, closers }) : DURABLE_AT_COMMIT;
  return { ...dir, postgres: dir.db === undefined, dbFile, durability };
}
