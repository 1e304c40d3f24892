// The source of CopyObject and UploadPartCopy: `x-amz-copy-source` parsed, authorized like a GET,
// looked up, and checked against the x-amz-copy-source-if-* preconditions; plus the source range.
import type { Bucket } from '../db/repos/index.js';
import type { ObjectRecord } from '../db/repos/objects.js';
import { S3Error } from '../errors/s3-errors.js';
import type { ReadRange } from '../storage/backend.js';
import { validateKey } from './addressing.js';
import { parseCopySourceHeader } from './copy-source-header.js';
import { objectPreconditions } from './preconditions.js';
import { header, requireBucket, type S3Request } from './operation.js';
import { parseVersionId } from './versioning.js';

export { parseCopySourceHeader, type CopySourceRef } from './copy-source-header.js';

/**
 * Resolves, authorizes (ObjectRead on the source bucket) and looks up the copy source, then applies
 * the copy-source preconditions: a failed if-match/if-unmodified-since and a failed if-none-match/
 * if-modified-since are both 412, with the precedence of conditional GETs.
 */
export async function resolveCopySource(r: S3Request): Promise<{ bucket: Bucket; key: string; record: ObjectRecord; versionId?: string }> {
  const ref = parseCopySourceHeader(header(r, 'x-amz-copy-source'));
  // The source may be a key stored before keys XML cannot list were refused.
  validateKey(ref.key, { existing: true });
  const bucket = await requireBucket(r, 'ObjectRead', ref.bucket);
  const record = ref.versionId === undefined ? await r.ctx.objects.get(bucket.id, ref.key) : await sourceVersion(r, bucket, ref.key, ref.versionId);
  if (!record) throw new S3Error('NoSuchKey', undefined, { Key: ref.key });
  const failure = objectPreconditions(
    {
      ifMatch: header(r, 'x-amz-copy-source-if-match'),
      ifNoneMatch: header(r, 'x-amz-copy-source-if-none-match'),
      ifModifiedSince: header(r, 'x-amz-copy-source-if-modified-since'),
      ifUnmodifiedSince: header(r, 'x-amz-copy-source-if-unmodified-since'),
    },
    record.etag,
    record.lastModified,
  );
  if (failure) {
    throw new S3Error('PreconditionFailed', undefined, { Condition: `x-amz-copy-source-${failure.condition}` });
  }
  // x-amz-copy-source-version-id: named when the source bucket has versions (or one was asked for).
  const named = ref.versionId !== undefined || bucket.versioning != null || record.versionId != null;
  return named ? { bucket, key: ref.key, record, versionId: record.versionId ?? 'null' } : { bucket, key: ref.key, record };
}

/** A copy source named by version id: NoSuchVersion when it does not exist; a delete marker is 400 (AWS). */
async function sourceVersion(r: S3Request, bucket: Bucket, key: string, raw: string): Promise<ObjectRecord> {
  const versionId = parseVersionId(raw, 'x-amz-copy-source');
  const found = await r.ctx.objects.getVersion(bucket.id, key, versionId);
  if (!found) throw new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: raw });
  if (found.deleteMarker) throw new S3Error('InvalidRequest', 'The source of a copy request may not specifically refer to a delete marker by version id.');
  return found.rec;
}

/**
 * `x-amz-copy-source-range: bytes=first-last` (both required, inclusive). Other syntax is
 * InvalidArgument; a range outside the object is InvalidRange. Absent header: undefined.
 */
export function parseCopySourceRange(header: string | undefined, size: number): ReadRange | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d+)-(\d+)$/.exec(header.trim());
  const start = m ? Number(m[1]) : NaN;
  const end = m ? Number(m[2]) : NaN;
  if (!m || !Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) {
    throw new S3Error(
      'InvalidArgument',
      'The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy',
      { ArgumentName: 'x-amz-copy-source-range', ArgumentValue: header },
    );
  }
  if (end >= size) {
    throw new S3Error('InvalidRange', `The requested range is not satisfiable: the source object is ${size} bytes long.`, {
      ActualObjectSize: String(size),
      RangeRequested: header,
    });
  }
  return { start, end };
}
