// PutBucketTagging, GetBucketTagging, DeleteBucketTagging. Tags label a bucket for its owner (cost
// allocation, automation); setting and removing them is bucket administration (root, or the owner's
// account key), reading them needs read access to the bucket.
import { S3Error } from '../../errors/s3-errors.js';
import { requireBucket, type OperationHandler } from '../operation.js';
import { readVerifiedBody } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { parseBucketTaggingXml, tagSetXml } from '../tagging.js';
import { toXml } from '../xml.js';

/** Fifty tags of 128 and 256 characters, escaped, fit. */
const MAX_TAGGING_BYTES = 256 * 1024;

export const putBucketTagging: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  // AWS requires Content-MD5 or a checksum on this body (botocore: requestChecksumRequired).
  const tags = parseBucketTaggingXml(await readVerifiedBody(r, { maxBytes: MAX_TAGGING_BYTES, requireDigest: true }));
  await r.ctx.repos.bucketTagging.put(bucket.id, tags);
  return { status: 204 };
};

export const getBucketTagging: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const tags = await r.ctx.repos.bucketTagging.get(bucket.id);
  if (!tags || tags.length === 0) throw new S3Error('NoSuchTagSet', undefined, { BucketName: bucket.name });
  return xmlResponse(toXml('Tagging', tagSetXml(tags)));
};

export const deleteBucketTagging: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  await r.ctx.repos.bucketTagging.delete(bucket.id);
  return { status: 204 };
};
