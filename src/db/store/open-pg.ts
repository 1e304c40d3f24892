// Opens the PostgreSQL metadata store of a node: the pool, the migrations (under their advisory lock:
// nodes starting together migrate once), and the change feed that moves changeVersion().
import { migratePostgres } from '../pg/migrate.js';
import { createPgPool, type PgPoolOptions } from '../pg/pool.js';
import { PgChangeFeed } from './pg-change-feed.js';
import { PgStore } from './pg-store.js';

export interface OpenPgStoreOptions extends PgPoolOptions {
  /** A connection of the pool or of the change feed failed (logged by the caller). */
  onError?: (err: Error) => void;
}

export async function openPgStore(url: string, options: OpenPgStoreOptions = {}): Promise<PgStore> {
  const pool = createPgPool(url, { ...options, onIdleError: options.onError });
  const feed = new PgChangeFeed(url, { onError: options.onError, connectionTimeoutMs: options.connectionTimeoutMs });
  try {
    await migratePostgres(pool);
    await feed.start();
  } catch (err) {
    await feed.close();
    await pool.end();
    throw err;
  }
  return new PgStore(pool, { changeVersion: () => feed.version(), onClose: () => feed.close() });
}
