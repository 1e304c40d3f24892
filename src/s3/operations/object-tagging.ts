// PutObjectTagging, GetObjectTagging, DeleteObjectTagging (`?tagging` on an object). Tags live in the
// version's row: changing them rewrites neither the bytes nor the ETag nor Last-Modified, and does not
// make a new version, as on AWS. `?versionId=` addresses any version, current or noncurrent; the
// answers name the version as GetObject does. Writes need write access to the bucket, reads read access.
import type { Bucket } from '../../db/repos/index.js';
import type { ObjectRecord, ObjectTag } from '../../db/repos/objects.js';
import { S3Error } from '../../errors/s3-errors.js';
import { requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { readVerifiedBody } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { parseTaggingXml, tagSetXml } from '../tagging.js';
import { findVersion, servedVersionHeaders, versionIdParam } from '../versioning.js';
import { toXml } from '../xml.js';

/** Ten tags of 128 and 256 characters, escaped, fit many times over. */
const MAX_TAGGING_BYTES = 64 * 1024;

/** The version the request names (errors as GetObject's), and the x-amz-version-id to answer with. */
async function target(r: S3Request, bucket: Bucket, key: string): Promise<{ rec: ObjectRecord; headers: Record<string, string> }> {
  const asked = versionIdParam(r.addr.query);
  const { rec } = await findVersion(r, bucket, key, asked);
  return { rec, headers: servedVersionHeaders(bucket, rec, asked) };
}

/**
 * Sets the tags of exactly the version looked up (its id, not "whatever is current now"). Gone in
 * between (deleted by a concurrent request): answered as if the lookup had missed it.
 */
async function setTags(r: S3Request, bucket: Bucket, key: string, rec: ObjectRecord, tags: ObjectTag[] | undefined): Promise<void> {
  const versionId = rec.versionId ?? null;
  const found = await r.ctx.commits.run((tx) => tx.objects.setTagging(bucket.id, key, versionId, tags));
  if (found) return;
  if (r.addr.query.get('versionId') === undefined) throw new S3Error('NoSuchKey', undefined, { Key: key });
  throw new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: versionId ?? 'null' });
}

export const putObjectTagging: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  versionIdParam(r.addr.query); // a malformed id is refused before the body is read
  // AWS requires Content-MD5 or a checksum on this body (botocore: requestChecksumRequired).
  const tags = parseTaggingXml(await readVerifiedBody(r, { maxBytes: MAX_TAGGING_BYTES, requireDigest: true }));
  // Looked up once the body is in: the version current now is the one tagged.
  const { rec, headers } = await target(r, bucket, key);
  await setTags(r, bucket, key, rec, tags);
  return { status: 200, headers: { 'content-length': 0, ...headers } };
};

export const getObjectTagging: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectRead');
  const key = requireKey(r);
  const { rec, headers } = await target(r, bucket, key);
  return xmlResponse(toXml('Tagging', tagSetXml(rec.tagging)), 200, headers);
};

export const deleteObjectTagging: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  const { rec, headers } = await target(r, bucket, key);
  await setTags(r, bucket, key, rec, undefined);
  return { status: 204, headers };
};
