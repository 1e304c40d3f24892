// A bucket's lifecycle rules for the answers that carry x-amz-expiration (GetObject, HeadObject,
// PutObject): kept per process for a few seconds (db/found-cache.ts), "no rules" as well, so that a
// bucket without rules costs no query per request. Rules put or deleted through this process are
// forgotten at once; changed through another (a cluster's other worker, another node) they are seen
// within the TTL: only the header waits, never what the job does.
import type { BucketLifecycleRepo } from '../db/repos/bucket-lifecycle.js';
import { FoundCache, type FoundCacheOptions } from '../db/found-cache.js';
import { expirationHeader, type LifecycleRule, type LifecycleSubject } from './rules.js';

const TTL_MS = 5000;

/** A value for every bucket, so "no rules" is cached too. */
export interface BucketRules {
  rules: LifecycleRule[] | null;
}

const NONE: BucketRules = { rules: null };

export class LifecycleRulesCache {
  private readonly cache: FoundCache<BucketRules>;

  constructor(repo: Pick<BucketLifecycleRepo, 'get'>, opts: FoundCacheOptions = {}) {
    this.cache = new FoundCache(async (bucketId) => {
      const rules = await repo.get(bucketId);
      return rules ? { rules } : NONE;
    }, { ttlMs: TTL_MS, ...opts });
  }

  /** The bucket's rules when held now (no await: the GET path's case), else undefined: rules() loads them. */
  held(bucketId: string): BucketRules | undefined {
    return this.cache.held(bucketId);
  }

  /** The bucket's rules, null when it has none; no query while they are held. */
  async rules(bucketId: string): Promise<readonly LifecycleRule[] | null> {
    return (this.cache.held(bucketId) ?? (await this.cache.get(bucketId)) ?? NONE).rules;
  }

  /** x-amz-expiration for the bucket's current version `o`, or undefined. */
  async expiration(bucketId: string, o: LifecycleSubject): Promise<string | undefined> {
    const rules = await this.rules(bucketId);
    return rules ? expirationHeader(rules, o) : undefined;
  }

  /** Call after the bucket's rules were put or deleted in this process. */
  forget(bucketId: string): void {
    this.cache.forget(bucketId);
  }
}
