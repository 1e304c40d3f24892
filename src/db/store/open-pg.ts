// Opens the PostgreSQL metadata store of a node: the pool, the migrations (under their advisory lock:
// nodes starting together migrate once), the change feed that moves changeVersion() and keeps the
// node's cache of hot rows coherent (db/metadata-cache.ts), and that cache.
import { COHERENCE_LEASE_MS, MetadataCache, leaseAfterCommit } from '../metadata-cache.js';
import { migratePostgres } from '../pg/migrate.js';
import { createPgPool, type PgPoolOptions } from '../pg/pool.js';
import { PgChangeFeed, type ChangeFeedOptions } from './pg-change-feed.js';
import { PgStore } from './pg-store.js';

export interface OpenPgStoreOptions extends PgPoolOptions {
  /** A connection of the pool or of the change feed failed (logged by the caller). */
  onError?: (err: Error) => void;
  /** Bytes of object rows (with small objects' bytes) this process's cache keeps; 0: no cache. Default 64 MiB. */
  readCacheBytes?: number;
  /**
   * Hold each write of cached rows for the caches' lease (db/metadata-cache.ts), so that every node's
   * cache reads it at once. Default true: a process without a cache of its own (a supervisor) still
   * holds its writes for the others'; false only when no node of the database has a cache.
   */
  coherenceLease?: boolean;
  /** The change feed's liveness checks (tests shorten them). */
  feed?: Pick<ChangeFeedOptions, 'livenessTimeoutMs' | 'livenessIntervalMs'>;
}

export const DEFAULT_READ_CACHE_BYTES = 64 * 1024 * 1024;

export async function openPgStore(url: string, options: OpenPgStoreOptions = {}): Promise<PgStore> {
  const pool = createPgPool(url, { ...options, onIdleError: options.onError });
  const feed = new PgChangeFeed(url, { ...options.feed, onError: options.onError, connectionTimeoutMs: options.connectionTimeoutMs });
  const cacheBytes = options.readCacheBytes ?? DEFAULT_READ_CACHE_BYTES;
  // Subscribed before the feed starts: its first connection resets the cache and makes it live.
  const readCache = cacheBytes > 0 ? new MetadataCache(feed, { maxBytes: cacheBytes }) : undefined;
  try {
    await migratePostgres(pool);
    await feed.start();
  } catch (err) {
    await feed.close();
    await pool.end();
    throw err;
  }
  return new PgStore(pool, {
    changeVersion: () => feed.version(),
    onClose: () => feed.close(),
    // The lease of db/metadata-cache.ts: every node's cache has the commit's notes before it may serve.
    ...((options.coherenceLease ?? true) ? { afterCachedWrite: () => leaseAfterCommit(COHERENCE_LEASE_MS) } : {}),
    ...(readCache ? { readCache } : {}),
  });
}
