// UploadPart and UploadPartCopy: a part is received (or copied from an object, optionally a byte
// range of it) into its own blob exactly like a PutObject body, then recorded under its number,
// replacing an earlier part with that number.
import { pipeline, type Readable } from 'node:stream';
import type { MultipartUpload } from '../../../db/repos/multipart.js';
import { S3Error } from '../../../errors/s3-errors.js';
import { checksumHeader, type ChecksumAlgorithm } from '../../../hashing/checksums.js';
import { UploadHasher, type UploadDigests } from '../../../hashing/upload-hasher.js';
import type { StagedBlob } from '../../../storage/backend.js';
import { commitStaged } from '../../../storage/commit-staged.js';
import { parseCopySourceRange, resolveCopySource } from '../../copy-source.js';
import { openObjectBody } from '../../../storage/object-reader.js';
import { header, isoDate, requireBucket, type OperationHandler, type S3Request } from '../../operation.js';
import { receiveUpload } from '../../receive-upload.js';
import { CopyBuffers } from '../../copy-buffers.js';
import { CopyQuota, reserveBody } from '../../quota.js';
import { xmlResponse } from '../../respond.js';
import { parseUploadExpectations } from '../../upload-checks.js';
import { toXml } from '../../xml.js';
import { MAX_PART_SIZE, partChecksumAlgorithm, requirePartNumber, requireUpload, scheduleTrashDrain } from './common.js';

interface CommittedPart {
  etag: string;
  lastModified: number;
}

/** Makes the staged bytes part `partNumber` of the upload; NoSuchUpload if it went away meanwhile. */
async function commitPart(r: S3Request, upload: MultipartUpload, partNumber: number, staged: StagedBlob, digests: UploadDigests): Promise<CommittedPart> {
  const { ctx } = r;
  const etag = `"${digests.md5Hex}"`;
  const lastModified = Math.floor(ctx.clock().getTime() / 1000) * 1000;
  const outcome = await commitStaged(ctx, staged, async () => {
    const added = await ctx.multipart.putPart({
      uploadId: upload.uploadId,
      partNumber,
      blobId: staged.blobId,
      size: digests.size,
      etag,
      crc32c: staged.crc32c,
      checksumAlgorithm: digests.checksum?.algorithm ?? null,
      checksumValue: digests.checksum?.value ?? null,
      lastModified,
    });
    // Completed or aborted while this part was arriving: its blob goes.
    if (added === 'missing') throw new S3Error('NoSuchUpload', undefined, { UploadId: upload.uploadId });
    return added;
  });
  if (outcome === 'replaced') scheduleTrashDrain(r);
  return { etag, lastModified };
}

function checksumHeaders(digests: UploadDigests): Record<string, string> {
  return digests.checksum ? { [checksumHeader(digests.checksum.algorithm)]: digests.checksum.value } : {};
}

export const uploadPart: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const partNumber = requirePartNumber(r);
  const upload = await requireUpload(r, bucket);
  const named = parseUploadExpectations(r.req, r.auth.payload).checksumAlgorithm;
  const checksumAlgorithm = partChecksumAlgorithm(upload, named);
  // A part counts as stored once it is committed (a part uploaded again: its new bytes in full).
  const quota = await reserveBody(r, bucket);
  try {
    // A part is never inline: its budget is back once it is received.
    const { staged, digests } = await receiveUpload(r, { maxSize: MAX_PART_SIZE, checksumAlgorithm, quota });
    const { etag } = await commitPart(r, upload, partNumber, staged, digests);
    return { status: 200, headers: { etag, 'content-length': 0, ...checksumHeaders(digests) } };
  } finally {
    await quota.release();
  }
};

export const uploadPartCopy: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const partNumber = requirePartNumber(r);
  const upload = await requireUpload(r, bucket);
  const { ctx } = r;
  const buffers = new CopyBuffers(r);
  const quota = new CopyQuota(r, bucket);
  try {
    await quota.ready();
    // An overwrite of the source may remove its blobs between lookup and open: look again.
    for (let attempt = 0; ; attempt++) {
      const source = await resolveCopySource(r);
      const range = parseCopySourceRange(header(r, 'x-amz-copy-source-range'), source.record.size);
      const length = range ? range.end - range.start + 1 : source.record.size;
      if (length > MAX_PART_SIZE) {
        throw new S3Error('InvalidRequest', `The specified copy source is larger than the maximum allowable size for a copy source: ${MAX_PART_SIZE}`);
      }
      // Room under the storage quotas for the part; when that took a query, the source is looked up again.
      if (!quota.covers(length)) {
        await quota.reserve(length);
        attempt--;
        continue;
      }
      // The memory the copy holds, reserved in this tick; if it had to wait, the source is looked up again.
      if (!buffers.cover(length, { objectBody: false })) {
        await buffers.wait();
        attempt--;
        continue;
      }
      let body: Readable;
      try {
        body = await openObjectBody(ctx, source.record, { range, signal: r.signal });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' && attempt < 3) continue;
        throw err;
      }
      // The part gets the upload's checksum, computed from the copied bytes.
      const checksumAlgorithm = (upload.checksumAlgorithm ?? undefined) as ChecksumAlgorithm | undefined;
      const hasher = new UploadHasher({ checksumAlgorithm, maxSize: MAX_PART_SIZE, pool: ctx.hashPool, expectedSize: length });
      const staged = await ctx.storage.stage(pipeline(body, hasher, () => undefined), { signal: r.signal, sizeHint: length });
      buffers.release();
      let digests: UploadDigests;
      try {
        digests = await hasher.digests();
        if (digests.size !== length) throw new Error(`copy source read ${digests.size} of ${length} bytes`);
      } catch (err) {
        await staged.abort();
        throw err;
      }
      const part = await commitPart(r, upload, partNumber, staged, digests);
      const result: Record<string, string> = { ETag: part.etag, LastModified: isoDate(part.lastModified) };
      if (digests.checksum) result[`Checksum${digests.checksum.algorithm}`] = digests.checksum.value;
      return xmlResponse(toXml('CopyPartResult', result), 200, source.versionId === undefined ? {} : { 'x-amz-copy-source-version-id': source.versionId });
    }
  } finally {
    buffers.release();
    await quota.release();
  }
};
