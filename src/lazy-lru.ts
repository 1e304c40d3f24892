// lru-cache preallocates its arrays for `max` entries: one of 10,000 costs 2-5 ms to construct, and a
// serving process makes a dozen at its start (keys, buckets, assets, presigned URLs, dates, ...),
// most of them unused until the first request of their kind. Made at the first use instead.
import { LRUCache } from 'lru-cache';

/** A function that returns the same LRUCache every time, constructed at its first call. */
export function lazyLru<K extends {}, V extends {}>(options: LRUCache.Options<K, V, unknown>): () => LRUCache<K, V> {
  let made: LRUCache<K, V> | undefined;
  return () => (made ??= new LRUCache<K, V>(options));
}
