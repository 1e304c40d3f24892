// Keep-alive connection pools to users' origins, one undici Pool per origin (scheme, host, port), each
// bounded (edge.connectionsPerOrigin) and dialled through the guarded connector: the address policy
// applies at connect time, after DNS, so an origin that is or resolves to loopback, a private network
// or the metadata service (169.254.169.254) is refused unless edge.allowPrivateOrigins. A pool unused
// for IDLE_MS is closed (its origin may no longer be routed), as are the least recently used ones past
// MAX_POOLS; all of them on close().
import type { lookup as dnsLookup } from 'node:dns';
import { LRUCache } from 'lru-cache';
import type { Pool } from 'undici';
import { guardedConnector } from '../net/guarded-connector.js';
import { undici } from '../net/undici-lazy.js';
import type { EdgeConfig } from '../config/schema.js';

/** A pool nobody used for this long is closed; the next request to its origin opens a new one. */
const IDLE_MS = 10 * 60_000;
/** Pools kept at most: beyond this the least recently used is closed (after its requests finish). */
const MAX_POOLS = 4096;

export type OriginPoolsConfig = Pick<EdgeConfig, 'allowPrivateOrigins' | 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs' | 'connectionsPerOrigin'>;

export class OriginPools {
  private readonly pools: LRUCache<string, Pool>;
  /** Each origin URL's pool key (its origin), as routes name it: a URL parse was ~2 µs a proxied request. */
  private readonly keys = new Map<string, string>();
  /** Pools closing (evicted or idle): close() waits for them too. */
  private readonly closing = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly config: OriginPoolsConfig,
    /** Name resolution; tests may map names to loopback. */
    private readonly lookup?: typeof dnsLookup,
  ) {
    this.pools = new LRUCache<string, Pool>({
      max: MAX_POOLS,
      ttl: IDLE_MS,
      updateAgeOnGet: true,
      ttlAutopurge: true,
      // Graceful: requests in flight on an evicted pool finish; new ones get a new pool.
      dispose: (pool) => {
        const done = pool.close().catch(() => undefined);
        this.closing.add(done);
        void done.then(() => this.closing.delete(done));
      },
    });
  }

  /** The pool of `originUrl` (`http(s)://host[:port]`, as the projects service validated it). */
  get(originUrl: string): Pool {
    if (this.closed) throw new Error('origin pools are closed');
    let key = this.keys.get(originUrl);
    if (key === undefined) {
      key = new URL(originUrl).origin;
      // Bounded like the pools: routes change, and each URL a route ever named would stay.
      if (this.keys.size >= MAX_POOLS) this.keys.clear();
      this.keys.set(originUrl, key);
    }
    let pool = this.pools.get(key);
    if (!pool) {
      // undici loads with the first pool (net/undici-lazy.ts).
      pool = new (undici().Pool)(key, {
        connections: this.config.connectionsPerOrigin,
        connect: guardedConnector({
          allowPrivateAddresses: this.config.allowPrivateOrigins,
          connectTimeoutMs: this.config.connectTimeoutMs,
          ...(this.lookup ? { lookup: this.lookup } : {}),
        }),
        headersTimeout: this.config.headersTimeoutMs,
        bodyTimeout: this.config.bodyTimeoutMs,
      });
      this.pools.set(key, pool);
    }
    return pool;
  }

  get size(): number {
    return this.pools.size;
  }

  /** Ends every pool: idle connections now, busy ones when their request ends (server.close ran first). */
  async close(): Promise<void> {
    this.closed = true;
    this.pools.clear();
    await Promise.all([...this.closing]);
  }
}
