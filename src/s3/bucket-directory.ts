// Bucket lookup by name for the S3 hot path: a bucket's id, owner and region never change, so a found
// bucket is reused for at most `ttlMs` (a bucket deleted by another process, the admin CLI, is noticed
// within that; one deleted here is forgotten at once). A miss is never cached: a bucket created
// elsewhere is visible immediately. A write that races a deletion fails on the foreign key and is
// answered NoSuchBucket (s3/handler.ts).
import { LRUCache } from 'lru-cache';
import type { Bucket, Repos } from '../db/repos/index.js';

export interface BucketDirectoryOptions {
  ttlMs?: number;
  max?: number;
  /** Millisecond clock for the TTL (tests inject one); default performance.now. */
  now?: () => number;
}

export class BucketDirectory {
  private readonly found: LRUCache<string, Bucket>;

  constructor(
    private readonly repos: Pick<Repos, 'buckets'>,
    opts: BucketDirectoryOptions = {},
  ) {
    const perf = opts.now ? { now: opts.now } : undefined;
    this.found = new LRUCache({ max: opts.max ?? 10_000, ttl: opts.ttlMs ?? 1000, ttlAutopurge: false, ttlResolution: 0, perf });
  }

  byName(name: string): Bucket | undefined {
    const hit = this.found.get(name);
    if (hit) return hit;
    const bucket = this.repos.buckets.getByName(name);
    if (bucket) this.found.set(name, bucket);
    return bucket;
  }

  /** Call after deleting a bucket in this process. */
  forget(name: string): void {
    this.found.delete(name);
  }
}
