// Shared pieces of the multipart operations: limits, the upload lookup, checksum settings.
import type { Bucket } from '../../../db/repos/index.js';
import type { MultipartChecksumType, MultipartUpload } from '../../../db/repos/multipart.js';
import { S3Error } from '../../../errors/s3-errors.js';
import { parseChecksumAlgorithm, type ChecksumAlgorithm } from '../../../hashing/checksums.js';
import { requireKey, type S3Request } from '../../operation.js';
import { parsePartNumber } from '../../../storage/object-reader.js';
import { drainTrash } from '../../../jobs/multipart-sweep.js';

/** AWS limits: a part is at most 5 GiB; every part but the last at least 5 MiB. */
export const MAX_PART_SIZE = 5 * 1024 * 1024 * 1024;
export const MIN_PART_SIZE = 5 * 1024 * 1024;
/** AWS's largest object, which a multipart upload may reach whatever maxObjectSize (PutObject's limit) says. */
export const MAX_MULTIPART_OBJECT_SIZE = 5 * 1024 * 1024 * 1024 * 1024;
export const MAX_LIST = 1000;

/** The upload named by ?uploadId, which must belong to the addressed bucket and key: else NoSuchUpload. */
export async function requireUpload(r: S3Request, bucket: Bucket): Promise<MultipartUpload> {
  const uploadId = r.addr.query.get('uploadId') ?? '';
  const upload = uploadId ? await r.ctx.multipart.get(uploadId) : undefined;
  if (!upload || upload.bucketId !== bucket.id || upload.key !== requireKey(r)) {
    throw new S3Error('NoSuchUpload', undefined, { UploadId: uploadId });
  }
  return upload;
}

/** ?partNumber of UploadPart / UploadPartCopy: required, 1..10000. */
export function requirePartNumber(r: S3Request): number {
  const raw = r.addr.query.get('partNumber');
  if (raw === undefined) {
    throw new S3Error('InvalidArgument', 'Part number must be an integer between 1 and 10000, inclusive', { ArgumentName: 'partNumber' });
  }
  return parsePartNumber(raw);
}

export function owner(id: string): { ID: string; DisplayName: string } {
  return { ID: id, DisplayName: id };
}

export interface ChecksumSettings {
  algorithm: ChecksumAlgorithm | null;
  type: MultipartChecksumType | null;
}

/**
 * x-amz-checksum-algorithm and x-amz-checksum-type of CreateMultipartUpload. The type defaults to
 * FULL_OBJECT for CRC64NVME and COMPOSITE otherwise; FULL_OBJECT needs a CRC, COMPOSITE is not
 * offered for CRC64NVME (as on AWS).
 */
export function parseChecksumSettings(algorithmRaw: string | undefined, typeRaw: string | undefined): ChecksumSettings {
  let type: MultipartChecksumType | undefined;
  if (typeRaw !== undefined) {
    const upper = typeRaw.trim().toUpperCase();
    if (upper !== 'COMPOSITE' && upper !== 'FULL_OBJECT') throw new S3Error('InvalidRequest', 'Value for x-amz-checksum-type header is invalid.');
    type = upper;
  }
  if (algorithmRaw === undefined || algorithmRaw === '') {
    if (type) throw new S3Error('InvalidRequest', 'The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.');
    return { algorithm: null, type: null };
  }
  const algorithm = parseChecksumAlgorithm(algorithmRaw.trim());
  type ??= algorithm === 'CRC64NVME' ? 'FULL_OBJECT' : 'COMPOSITE';
  if (type === 'FULL_OBJECT' && (algorithm === 'SHA1' || algorithm === 'SHA256')) {
    throw new S3Error('InvalidRequest', `The FULL_OBJECT checksum type cannot be used with the ${algorithm.toLowerCase()} checksum algorithm.`);
  }
  if (type === 'COMPOSITE' && algorithm === 'CRC64NVME') {
    throw new S3Error('InvalidRequest', 'The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.');
  }
  return { algorithm, type };
}

/**
 * The checksum a part of `upload` is hashed with, given the one its request names (if any). A part
 * must carry the upload's algorithm; FULL_OBJECT parts without one get it computed here.
 */
export function partChecksumAlgorithm(upload: MultipartUpload, named: ChecksumAlgorithm | undefined): ChecksumAlgorithm | undefined {
  const expected = upload.checksumAlgorithm as ChecksumAlgorithm | null;
  if (!expected) return named;
  if (named === undefined && upload.checksumType === 'FULL_OBJECT') return expected;
  if (named !== expected) {
    throw new S3Error(
      'InvalidRequest',
      `Checksum Type mismatch occurred, expected checksum Type: ${expected.toLowerCase()}, actual checksum Type: ${named?.toLowerCase() ?? 'null'}`,
    );
  }
  return expected;
}

/** Removes trashed blobs in the background; a failure is logged and retried by the next sweep. */
export function scheduleTrashDrain(r: S3Request): void {
  void drainTrash(r.ctx).catch((err: unknown) => r.ctx.log.warn({ err }, 'multipart: trash drain failed'));
}
