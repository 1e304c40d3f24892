// Bucket lookup by name for the S3 hot path (db/found-cache.ts): a bucket's id, owner and region never
// change, so a found bucket is reused for up to a second; a bucket deleted by the admin CLI (another
// process) is noticed within that, one deleted here at once. A write that races a deletion fails on the
// foreign key and is answered NoSuchBucket (s3/handler.ts).
import type { Bucket, Repos } from '../db/repos/index.js';
import { FoundCache, type FoundCacheOptions } from '../db/found-cache.js';

export class BucketDirectory extends FoundCache<Bucket> {
  constructor(repos: Pick<Repos, 'buckets'>, opts: FoundCacheOptions = {}) {
    super((name) => repos.buckets.getByName(name), opts);
  }

  byName(name: string): Promise<Bucket | undefined> {
    return this.get(name);
  }
}
