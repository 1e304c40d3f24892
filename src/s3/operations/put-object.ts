// PutObject: receive and verify the body into a staged blob, then commit bytes and metadata. Nothing
// becomes visible, and nothing is left behind, unless every check passes. If-Match / If-None-Match: *
// are checked before the body is read (412) and again inside the commit (409 on a lost race). Room under
// the storage quotas is reserved before the body is read (403 QuotaExceeded), released after the commit.
import { checksumHeader } from '../../hashing/checksums.js';
import { header, requireBucket, requireKey, type OperationHandler } from '../operation.js';
import { checkWriteCondition, commitObject, singleBlobRecord, type WriteCondition } from '../object-writes.js';
import { pickObjectHeaders } from '../object-headers.js';
import { precheckUpload, receiveUpload } from '../receive-upload.js';
import { taggingFromHeader } from '../tagging.js';
import { versionHeaders } from '../versioning.js';
import { changeEvents } from '../object-events.js';
import { cannedAcl, objectAclOf } from './acl.js';
import { reserveBody } from '../quota.js';
import type { ObjectRecord } from '../../db/repos/objects.js';
import type { UploadDigests } from '../../hashing/upload-hasher.js';

export const putObject: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  const { ctx } = r;
  const maxSize = ctx.config.maxObjectSize;
  precheckUpload(r, maxSize);
  const meta = pickObjectHeaders(r.req);
  const tagging = taggingFromHeader(header(r, 'x-amz-tagging'));
  const acl = objectAclOf(cannedAcl(r));
  const cond: WriteCondition = { ifMatch: header(r, 'if-match'), ifNoneMatch: header(r, 'if-none-match') };
  if (cond.ifMatch !== undefined || cond.ifNoneMatch !== undefined) checkWriteCondition(await ctx.objects.get(bucket.id, key), cond, 'request');
  // Before a byte of the body is read: room under the owner's and the bucket's storage quotas.
  const quota = await reserveBody(r, bucket);
  let written: { record: ObjectRecord; digests: UploadDigests; versionId: string | undefined };
  try {
    const { staged, digests, release } = await receiveUpload(r, { maxSize, objectBody: true, quota });
    const record = singleBlobRecord({ bucketId: bucket.id, key }, staged, digests, meta, ctx.clock());
    if (tagging?.length) record.tagging = tagging;
    if (acl) record.acl = acl;
    try {
      const report = await changeEvents(r, bucket, key);
      written = { record, digests, versionId: await commitObject(ctx, record, staged, cond, report && { report, name: 's3:ObjectCreated:Put' }) };
    } finally {
      release();
    }
  } finally {
    // After the commit, whose bytes count from then on (for a moment both count), or after a failure.
    await quota.release();
  }
  const { record, digests, versionId } = written;
  const etag = record.etag;
  const headers: Record<string, string> = { etag, 'content-length': '0', ...versionHeaders(versionId) };
  const expiry = await ctx.lifecycleRules.expiration(bucket.id, record);
  if (expiry !== undefined) headers['x-amz-expiration'] = expiry;
  if (digests.checksum) {
    headers[checksumHeader(digests.checksum.algorithm)] = digests.checksum.value;
    headers['x-amz-checksum-type'] = 'FULL_OBJECT';
  }
  return { status: 200, headers };
};
