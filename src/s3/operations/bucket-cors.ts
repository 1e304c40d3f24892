// PutBucketCors, GetBucketCors, DeleteBucketCors. Changing the rules is a bucket administration act
// (root, or the owner's account key); reading them needs only read access to the bucket, since every
// preflight reveals them anyway.
import { S3Error } from '../../errors/s3-errors.js';
import { corsConfigurationXml, parseCorsConfiguration } from '../cors.js';
import { requireBucket, type OperationHandler } from '../operation.js';
import { readVerifiedBody } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { toXml } from '../xml.js';

/** AWS's limit on the size of a CORS configuration. */
const MAX_CORS_BYTES = 64 * 1024;

export const putBucketCors: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  const rules = parseCorsConfiguration(await readVerifiedBody(r, { maxBytes: MAX_CORS_BYTES, requireDigest: true }));
  await r.ctx.repos.bucketCors.put(bucket.id, rules);
  return { status: 200, headers: { 'content-length': 0 } };
};

export const getBucketCors: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const rules = await r.ctx.repos.bucketCors.get(bucket.id);
  if (!rules) throw new S3Error('NoSuchCORSConfiguration', undefined, { BucketName: bucket.name });
  return xmlResponse(toXml('CORSConfiguration', corsConfigurationXml(rules)));
};

export const deleteBucketCors: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  await r.ctx.repos.bucketCors.delete(bucket.id);
  return { status: 204 };
};
