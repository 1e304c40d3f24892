// Who may reach a bucket besides its keys: its policy and its public canned ACL (issue 35), read per
// process through a cache whose entries live at most a second (per-bucket-cache.ts). A bucket without
// either costs a cache lookup per request, and its statements are never looked at.
//
// A canned ACL is the same model as a policy: public-read (list the bucket) and public-read-write (list,
// and write and delete its objects) become Allow statements for everyone ("*"), evaluated with the
// policy's own, so an explicit Deny in the policy beats them too. Reading an object is its own ACL's
// (public-read on the object), as on AWS: s3/operation.ts requireBucketForRead.
import { parseBucketPolicy, type BucketPolicy, type PolicyStatement } from '../auth/bucket-policy/parse.js';
import { evaluatePolicy, type PolicyDecision, type PolicyRequest } from '../auth/bucket-policy/evaluate.js';
import type { FoundCacheOptions } from '../db/found-cache.js';
import type { Bucket, PublicAcl, Repos } from '../db/repos/index.js';
import { PerBucketCache } from './per-bucket-cache.js';

export interface BucketAccessRules {
  /** The policy's text as its owner put it (GetBucketPolicy), or null. */
  policyText: string | null;
  acl: PublicAcl | null;
  /** What a request is judged by: the policy's statements and the ACL's, or null when there are none. */
  judged: BucketPolicy | null;
}

/** A bucket's READ grant: listing (its objects are read by their own ACLs, as on AWS). */
const READ_ACTIONS = ['s3:ListBucket', 's3:ListBucketVersions', 's3:ListBucketMultipartUploads'];
const WRITE_ACTIONS = ['s3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'];

/** The statements a public canned ACL stands for. */
export function aclStatements(acl: PublicAcl, bucket: string): PolicyStatement[] {
  const actions = acl === 'public-read-write' ? [...READ_ACTIONS, ...WRITE_ACTIONS] : READ_ACTIONS;
  return [
    {
      sid: `canned-acl-${acl}`,
      effect: 'Allow',
      principals: '*',
      actions: { not: false, patterns: actions },
      resources: { not: false, patterns: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`] },
      conditions: [],
    },
  ];
}

/**
 * A policy stored by an earlier version that this one no longer reads: nothing but the owner's policy
 * operations (never judged by the policy) gets through until the owner puts a new one. Fail closed.
 */
const UNREADABLE: BucketPolicy = {
  version: '2012-10-17',
  statements: [
    { sid: 'unreadable-policy', effect: 'Deny', principals: '*', actions: { not: false, patterns: ['*'] }, resources: { not: false, patterns: ['*'] }, conditions: [] },
  ],
};

function judgedBy(bucket: string, policyText: string | null, acl: PublicAcl | null): BucketPolicy | null {
  if (policyText === null && acl === null) return null;
  let policy: BucketPolicy = { version: '2012-10-17', statements: [] };
  if (policyText !== null) {
    try {
      policy = parseBucketPolicy(policyText, bucket);
    } catch {
      return UNREADABLE;
    }
  }
  return acl === null ? policy : { version: policy.version, statements: [...policy.statements, ...aclStatements(acl, bucket)] };
}

/**
 * One decision for everything a request asks of one bucket: deny when any ask is denied, allow when
 * every ask is allowed, else none (the caller's keys decide).
 */
export function judge(policy: BucketPolicy, asks: readonly PolicyRequest[]): PolicyDecision {
  let allowed = asks.length > 0;
  for (const ask of asks) {
    const decision = evaluatePolicy(policy, ask);
    if (decision === 'deny') return 'deny';
    if (decision !== 'allow') allowed = false;
  }
  return allowed ? 'allow' : 'none';
}

export class BucketAccess {
  private readonly cache: PerBucketCache<BucketAccessRules>;

  constructor(repos: Pick<Repos, 'bucketPolicies' | 'bucketAcls'>, opts: FoundCacheOptions = {}) {
    this.cache = new PerBucketCache(async (bucket) => {
      const [policyText, acl] = await Promise.all([repos.bucketPolicies.get(bucket.id), repos.bucketAcls.get(bucket.id)]);
      return { policyText: policyText ?? null, acl: acl ?? null, judged: judgedBy(bucket.name, policyText ?? null, acl ?? null) };
    }, opts);
  }

  /** The rules held now for `bucket`, or undefined (rulesFor loads them): the hot path's synchronous look. */
  held(bucket: Pick<Bucket, 'id' | 'name'>): BucketAccessRules | undefined {
    return this.cache.held(bucket);
  }

  rulesFor(bucket: Pick<Bucket, 'id' | 'name'>): Promise<BucketAccessRules> {
    return this.cache.get(bucket);
  }

  /** Call after changing a bucket's policy or ACL in this process. */
  forget(bucket: Pick<Bucket, 'id' | 'name'>): void {
    this.cache.forget(bucket);
  }
}
