// PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration, DeleteBucketLifecycle. The rules
// are bucket administration (root, or the owner's account key) to set and remove, readable with read
// access to the bucket, as tagging is. The lifecycle job carries them out (src/lifecycle/run.ts); the
// S3 surface answers x-amz-expiration from them (src/lifecycle/rules-cache.ts), which forgets a
// bucket's rules here as soon as they change.
import { randomUUID } from 'node:crypto';
import { S3Error } from '../../errors/s3-errors.js';
import { lifecycleXml, parseLifecycleConfiguration } from '../lifecycle.js';
import { requireBucket, type OperationHandler } from '../operation.js';
import { readVerifiedBody } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { toXml } from '../xml.js';

/** 1000 rules with long IDs, prefixes and tags fit. */
const MAX_LIFECYCLE_BYTES = 2 * 1024 * 1024;

/** An ID for a rule given none, of the form S3 gives (a UUID, base64). */
const newRuleId = (): string => Buffer.from(randomUUID()).toString('base64');

export const putBucketLifecycleConfiguration: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  // AWS requires Content-MD5 or a checksum on this body (botocore: requestChecksumRequired).
  const rules = parseLifecycleConfiguration(await readVerifiedBody(r, { maxBytes: MAX_LIFECYCLE_BYTES, requireDigest: true }), newRuleId);
  await r.ctx.repos.bucketLifecycle.put(bucket.id, rules);
  r.ctx.lifecycleRules.forget(bucket.id);
  return { status: 200, headers: { 'content-length': 0 } };
};

export const getBucketLifecycleConfiguration: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const rules = await r.ctx.repos.bucketLifecycle.get(bucket.id);
  if (!rules) throw new S3Error('NoSuchLifecycleConfiguration', undefined, { BucketName: bucket.name });
  return xmlResponse(toXml('LifecycleConfiguration', lifecycleXml(rules)));
};

export const deleteBucketLifecycle: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  await r.ctx.repos.bucketLifecycle.delete(bucket.id);
  r.ctx.lifecycleRules.forget(bucket.id);
  return { status: 204 };
};
