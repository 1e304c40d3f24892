// PutObject: receive and verify the body into a staged blob, then commit bytes and metadata. Nothing
// becomes visible, and nothing is left behind, unless every check passes.
import { checksumHeader } from '../../hashing/checksums.js';
import type { ObjectRecord } from '../../db/repos/objects.js';
import { requireBucket, requireKey, type OperationHandler } from '../operation.js';
import { pickObjectHeaders } from '../object-headers.js';
import { precheckUpload, receiveUpload } from '../receive-upload.js';

export const putObject: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  const { ctx } = r;
  const maxSize = ctx.config.maxObjectSize;
  precheckUpload(r, maxSize);
  const meta = pickObjectHeaders(r.req);
  const { staged, digests } = await receiveUpload(r, { maxSize });
  let committed = false;
  try {
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
    await staged.commit();
    committed = true;
    const replaced = ctx.objects.put(record);
    if (replaced) void ctx.storage.remove(replaced).catch((err: unknown) => ctx.log.warn({ err }, 'blob removal failed'));
    const headers: Record<string, string> = { etag, 'content-length': '0' };
    if (digests.checksum) {
      headers[checksumHeader(digests.checksum.algorithm)] = digests.checksum.value;
      headers['x-amz-checksum-type'] = 'FULL_OBJECT';
    }
    return { status: 200, headers };
  } catch (err) {
    if (committed) await ctx.storage.remove(staged.blobId).catch(() => undefined);
    else await staged.abort();
    throw err;
  }
};
