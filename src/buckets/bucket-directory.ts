// Bucket lookup by name for the S3 hot path (db/found-cache.ts): a bucket's id, owner and region never
// change, so a found bucket is reused for up to a second; a bucket deleted by the admin CLI (another
// process) is noticed within that, one deleted here at once. A write that races a deletion fails on the
// foreign key and is answered NoSuchBucket (s3/handler.ts). On PostgreSQL the repository's own reads are
// already cached and coherent across nodes (db/metadata-cache.ts): asked directly, so that a bucket
// deleted, made private or versioned on another node is seen at once rather than within the second.
import type { Bucket, Repos } from '../db/repos/index.js';
import { FoundCache, type FoundCacheOptions } from '../db/found-cache.js';

export class BucketDirectory extends FoundCache<Bucket> {
  private readonly coherent: Pick<Repos, 'buckets'> | undefined;

  constructor(repos: Pick<Repos, 'buckets'>, opts: FoundCacheOptions = {}) {
    super((name) => repos.buckets.getByName(name), opts);
    this.coherent = repos.buckets.cachedReads ? repos : undefined;
  }

  byName(name: string): Promise<Bucket | undefined> {
    return this.coherent ? this.coherent.buckets.getByName(name) : this.get(name);
  }
}
