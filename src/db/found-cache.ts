// A lookup whose found answers are reused for at most `ttlMs`; a miss is never cached, so something
// created elsewhere is visible at once. For rows that never change while they exist (a bucket's id and
// owner, an asset): one removed by this process is forgotten at once, one removed by another process
// is noticed within the TTL. Concurrent misses of one key share one load.
import type { LRUCache } from 'lru-cache';
import { lazyLru } from '../lazy-lru.js';

export interface FoundCacheOptions {
  ttlMs?: number;
  max?: number;
  /** Millisecond clock for the TTL (tests inject one); default performance.now. */
  now?: () => number;
}

export class FoundCache<V extends object> {
  private readonly found: () => LRUCache<string, V>;
  /** Loads in flight; forget() removes a key's entry so that its answer is not cached. */
  private readonly loading = new Map<string, Promise<V | undefined>>();

  constructor(
    private readonly load: (key: string) => V | undefined | Promise<V | undefined>,
    opts: FoundCacheOptions = {},
  ) {
    const perf = opts.now ? { now: opts.now } : undefined;
    this.found = lazyLru({ max: opts.max ?? 10_000, ttl: opts.ttlMs ?? 1000, ttlAutopurge: false, ttlResolution: 0, perf });
  }

  /** The found answer held now, or undefined (not held: get() loads it). */
  held(key: string): V | undefined {
    return this.found().get(key);
  }

  get(key: string): Promise<V | undefined> {
    const hit = this.found().get(key);
    if (hit) return Promise.resolve(hit);
    let pending = this.loading.get(key);
    if (pending === undefined) {
      const loaded = (async () => this.load(key))();
      pending = loaded.then(
        (value) => {
          // Cached only if no forget() came while it loaded: the row read may be one removed since.
          if (this.loading.get(key) === pending) {
            this.loading.delete(key);
            if (value) this.found().set(key, value);
          }
          return value;
        },
        (err: unknown) => {
          if (this.loading.get(key) === pending) this.loading.delete(key);
          throw err;
        },
      );
      this.loading.set(key, pending);
    }
    return pending;
  }

  /** Call after removing the row in this process. */
  forget(key: string): void {
    this.found().delete(key);
    this.loading.delete(key);
  }
}
