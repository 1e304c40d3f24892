// PutObjectTagging, GetObjectTagging, DeleteObjectTagging (`?tagging` on an object). Tags live in the
// object's row: changing them rewrites neither the bytes nor the ETag nor Last-Modified, as on AWS.
// Writes need write access to the bucket, reads read access.
import type { ObjectTag } from '../../db/repos/objects.js';
import { S3Error } from '../../errors/s3-errors.js';
import { requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { readVerifiedBody } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { parseTaggingXml, tagSetXml } from '../tagging.js';
import { toXml } from '../xml.js';

/** Ten tags of 128 and 256 characters, escaped, fit many times over. */
const MAX_TAGGING_BYTES = 64 * 1024;

/** Buckets are unversioned: `?versionId=null` names the current version, any other id none. */
function checkVersionId(r: S3Request, key: string): void {
  const versionId = r.addr.query.get('versionId');
  if (versionId !== undefined && versionId !== 'null') throw new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: versionId });
}

function noSuchKey(key: string): S3Error {
  return new S3Error('NoSuchKey', undefined, { Key: key });
}

async function setTags(r: S3Request, bucketId: string, key: string, tags: ObjectTag[] | undefined): Promise<void> {
  const found = await r.ctx.commits.run(() => r.ctx.objects.setTagging(bucketId, key, tags));
  if (!found) throw noSuchKey(key);
}

export const putObjectTagging: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  checkVersionId(r, key);
  // AWS requires Content-MD5 or a checksum on this body (botocore: requestChecksumRequired).
  const tags = parseTaggingXml(await readVerifiedBody(r, { maxBytes: MAX_TAGGING_BYTES, requireDigest: true }));
  await setTags(r, bucket.id, key, tags);
  return { status: 200, headers: { 'content-length': 0 } };
};

export const getObjectTagging: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'ObjectRead');
  const key = requireKey(r);
  checkVersionId(r, key);
  const rec = r.ctx.objects.get(bucket.id, key);
  if (!rec) throw noSuchKey(key);
  return xmlResponse(toXml('Tagging', tagSetXml(rec.tagging)));
};

export const deleteObjectTagging: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  checkVersionId(r, key);
  await setTags(r, bucket.id, key, undefined);
  return { status: 204 };
};
