// PutBucketPolicy, GetBucketPolicy, DeleteBucketPolicy, GetBucketPolicyStatus. The policy is checked
// whole before it is kept (MalformedPolicy says what is wrong), kept as its owner wrote it, and applies
// on every worker and node within a second (src/buckets/bucket-access.ts). Changing or removing it is
// bucket administration (root, or the owner's account key); a policy never judges these operations,
// so an owner cannot lock themselves out.
import { MalformedPolicyError, MAX_POLICY_BYTES, parseBucketPolicy } from '../../auth/bucket-policy/parse.js';
import { isPublicPolicy } from '../../auth/bucket-policy/evaluate.js';
import { S3Error } from '../../errors/s3-errors.js';
import { requireBucket, type OperationHandler } from '../operation.js';
import { readVerifiedBody } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { toXml } from '../xml.js';

export const putBucketPolicy: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  // A little over the limit is read, so that a policy too long is told so rather than cut short.
  const text = (await readVerifiedBody(r, { maxBytes: MAX_POLICY_BYTES + 1024, requireDigest: false })).toString('utf8');
  try {
    parseBucketPolicy(text, bucket.name);
  } catch (err) {
    if (err instanceof MalformedPolicyError) throw new S3Error('MalformedPolicy', err.message);
    throw err;
  }
  await r.ctx.repos.bucketPolicies.put(bucket.id, text);
  r.ctx.bucketAccess.forget(bucket);
  return { status: 204 };
};

export const getBucketPolicy: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const text = await r.ctx.repos.bucketPolicies.get(bucket.id);
  if (text === undefined) throw new S3Error('NoSuchBucketPolicy', undefined, { BucketName: bucket.name });
  return { status: 200, headers: { 'content-type': 'application/json' }, body: text };
};

export const deleteBucketPolicy: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  await r.ctx.repos.bucketPolicies.delete(bucket.id);
  r.ctx.bucketAccess.forget(bucket);
  return { status: 204 };
};

export const getBucketPolicyStatus: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const text = await r.ctx.repos.bucketPolicies.get(bucket.id);
  if (text === undefined) throw new S3Error('NoSuchBucketPolicy', undefined, { BucketName: bucket.name });
  let isPublic = false;
  try {
    isPublic = isPublicPolicy(parseBucketPolicy(text, bucket.name));
  } catch {
    // A policy this version no longer reads lets nobody in (bucket-access.ts): not public.
  }
  return xmlResponse(toXml('PolicyStatus', { IsPublic: isPublic }));
};
