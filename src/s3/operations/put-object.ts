// PutObject: receive and verify the body into a staged blob, then commit bytes and metadata. Nothing
// becomes visible, and nothing is left behind, unless every check passes. If-Match / If-None-Match: *
// are checked before the body is read (412) and again inside the commit (409 on a lost race).
import { checksumHeader } from '../../hashing/checksums.js';
import type { ObjectRecord } from '../../db/repos/objects.js';
import { header, requireBucket, requireKey, type OperationHandler } from '../operation.js';
import { checkWriteCondition, commitObject, type WriteCondition } from '../object-writes.js';
import { pickObjectHeaders } from '../object-headers.js';
import { precheckUpload, receiveUpload } from '../receive-upload.js';

export const putObject: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  const { ctx } = r;
  const maxSize = ctx.config.maxObjectSize;
  precheckUpload(r, maxSize);
  const meta = pickObjectHeaders(r.req);
  const cond: WriteCondition = { ifMatch: header(r, 'if-match'), ifNoneMatch: header(r, 'if-none-match') };
  checkWriteCondition(ctx.objects.get(bucket.id, key), cond, 'request');
  const { staged, digests } = await receiveUpload(r, { maxSize });
  const etag = `"${digests.md5Hex}"`;
  const record: ObjectRecord = {
    bucketId: bucket.id,
    key,
    blobId: staged.blobId,
    size: digests.size,
    etag,
    sha256: digests.sha256Hex,
    checksumAlgorithm: digests.checksum?.algorithm ?? null,
    checksumValue: digests.checksum?.value ?? null,
    checksumType: digests.checksum ? 'FULL_OBJECT' : null,
    ...meta,
    lastModified: Math.floor(ctx.clock().getTime() / 1000) * 1000,
  };
  await commitObject(ctx, record, staged, cond);
  const headers: Record<string, string> = { etag, 'content-length': '0' };
  if (digests.checksum) {
    headers[checksumHeader(digests.checksum.algorithm)] = digests.checksum.value;
    headers['x-amz-checksum-type'] = 'FULL_OBJECT';
  }
  return { status: 200, headers };
};
