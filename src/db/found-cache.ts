// A lookup whose found answers are reused for at most `ttlMs`; a miss is never cached, so something
// created elsewhere is visible at once. For rows that never change while they exist (a bucket's id and
// owner, an asset): one removed by this process is forgotten at once, one removed by another process
// is noticed within the TTL.
import { LRUCache } from 'lru-cache';

export interface FoundCacheOptions {
  ttlMs?: number;
  max?: number;
  /** Millisecond clock for the TTL (tests inject one); default performance.now. */
  now?: () => number;
}

export class FoundCache<V extends object> {
  private readonly found: LRUCache<string, V>;

  constructor(
    private readonly load: (key: string) => V | undefined,
    opts: FoundCacheOptions = {},
  ) {
    const perf = opts.now ? { now: opts.now } : undefined;
    this.found = new LRUCache({ max: opts.max ?? 10_000, ttl: opts.ttlMs ?? 1000, ttlAutopurge: false, ttlResolution: 0, perf });
  }

  get(key: string): V | undefined {
    const hit = this.found.get(key);
    if (hit) return hit;
    const value = this.load(key);
    if (value) this.found.set(key, value);
    return value;
  }

  /** Call after removing the row in this process, in the same tick. */
  forget(key: string): void {
    this.found.delete(key);
  }
}
