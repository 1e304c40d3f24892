// Authorization as a table: for each action, what a root, account and bucket-scoped key may do.
import type { Bucket, Repos } from '../db/repos/index.js';
import { S3Error } from '../errors/s3-errors.js';
import type { Principal } from './principal.js';

export type Action =
  | 'ListBuckets'
  | 'CreateBucket'
  | 'DeleteBucket'
  | 'BucketAdmin'
  | 'BucketRead'
  | 'ObjectRead'
  | 'ObjectWrite';

/** Root and account keys: `any` = always, `owner` = buckets their user owns, `none` = never. */
type UserGrant = 'any' | 'owner' | 'none';
/** Bucket keys: `any` = always, `read` = their bucket, `write` = their bucket with read_write, `none` = never. */
type BucketKeyGrant = 'any' | 'read' | 'write' | 'none';

interface Rule {
  root: UserGrant;
  account: UserGrant;
  bucket: BucketKeyGrant;
}

export const POLICY: Readonly<Record<Action, Rule>> = {
  ListBuckets: { root: 'any', account: 'any', bucket: 'any' },
  CreateBucket: { root: 'any', account: 'any', bucket: 'none' },
  DeleteBucket: { root: 'any', account: 'owner', bucket: 'none' },
  BucketAdmin: { root: 'any', account: 'owner', bucket: 'none' },
  BucketRead: { root: 'any', account: 'owner', bucket: 'read' },
  ObjectRead: { root: 'any', account: 'owner', bucket: 'read' },
  ObjectWrite: { root: 'any', account: 'owner', bucket: 'write' },
};

type BucketRef = Pick<Bucket, 'id' | 'ownerId'>;

function allowed(principal: Principal, rule: Rule, bucket: BucketRef | undefined): boolean {
  switch (principal.kind) {
    case 'root':
    case 'account': {
      const grant = rule[principal.kind];
      return grant === 'any' || (grant === 'owner' && bucket !== undefined && bucket.ownerId === principal.userId);
    }
    case 'bucket': {
      const grant = rule.bucket;
      if (grant === 'any') return true;
      if (grant === 'none' || bucket === undefined || bucket.id !== principal.bucketId) return false;
      return grant === 'read' || principal.permission === 'read_write';
    }
    case 'anonymous':
      return false;
  }
}

/** Throws S3Error('AccessDenied') unless `principal` may do `action` (on `bucket`, for bucket actions). */
export function authorize(principal: Principal, action: Action, bucket?: BucketRef): void {
  if (!allowed(principal, POLICY[action], bucket)) throw new S3Error('AccessDenied');
}

/** Whether `principal`'s keys let it do `action` (on `bucket`, for bucket actions). */
export function isAuthorized(principal: Principal, action: Action, bucket?: BucketRef): boolean {
  return allowed(principal, POLICY[action], bucket);
}

/** The buckets a principal may see in ListBuckets: root all, account its user's, bucket key its bucket. */
export async function visibleBuckets(principal: Principal, repos: Pick<Repos, 'buckets'>): Promise<Bucket[]> {
  switch (principal.kind) {
    case 'root':
      return repos.buckets.list();
    case 'account':
      return repos.buckets.list(principal.userId);
    case 'bucket': {
      const bucket = await repos.buckets.getById(principal.bucketId);
      return bucket ? [bucket] : [];
    }
    case 'anonymous':
      return [];
  }
}
