// A bucket's configuration document as the hot path reads it (its policy, its notification rules):
// held per process for at most a TTL (a second by default), so a change made by another worker or node
// applies within it, and one made here at once (forget). "Nothing configured" is held too: it is the
// common answer, and must cost no query. Keyed by the bucket's id and name, so a bucket deleted and
// made again under its name never reads the old one's entry.
import { FoundCache, type FoundCacheOptions } from '../db/found-cache.js';
import type { Bucket } from '../db/repos/index.js';

type BucketRef = Pick<Bucket, 'id' | 'name'>;

/** Bucket ids are ours (no '/'), bucket names never hold one. */
const keyOf = (bucket: BucketRef): string => `${bucket.id}/${bucket.name}`;

export class PerBucketCache<T> {
  private readonly cache: FoundCache<{ value: T }>;

  constructor(load: (bucket: BucketRef) => Promise<T>, opts: FoundCacheOptions = {}) {
    this.cache = new FoundCache<{ value: T }>(async (key) => {
      const slash = key.indexOf('/');
      const value: T = await load({ id: key.slice(0, slash), name: key.slice(slash + 1) });
      return { value };
    }, { ttlMs: 1000, ...opts });
  }

  /** The value held now, or undefined (get() loads it): the hot path's synchronous look. */
  held(bucket: BucketRef): T | undefined {
    return this.cache.held(keyOf(bucket))?.value;
  }

  async get(bucket: BucketRef): Promise<T> {
    const entry = this.cache.held(keyOf(bucket)) ?? (await this.cache.get(keyOf(bucket)));
    return (entry as { value: T }).value;
  }

  /** Call after changing the bucket's document in this process. */
  forget(bucket: BucketRef): void {
    this.cache.forget(keyOf(bucket));
  }
}
