// GetObject and HeadObject: metadata from SQLite, bytes streamed from the backend, Range and preconditions.
import { S3Error } from '../../errors/s3-errors.js';
import { checksumHeader, type ChecksumAlgorithm } from '../../hashing/checksums.js';
import type { ObjectRecord } from '../../db/repos/objects.js';
import { checkReadPreconditions } from '../conditionals.js';
import { objectResponseHeaders } from '../object-headers.js';
import { header, requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { parseRange } from '../range.js';
import { checkInlineObject, openObjectBody, parsePartNumber, partRange } from '../object-reader.js';
import type { S3Response } from '../respond.js';
import type { ReadRange } from '../../storage/backend.js';
import type { Bucket } from '../../db/repos/index.js';
import { versionIdParam } from '../versioning.js';
import { httpDate } from '../../http/http-date.js';

/**
 * The record and, for a small object, its bytes (read with the row, in one statement). On a
 * versioned bucket a key whose latest version is a delete marker is NoSuchKey with
 * x-amz-delete-marker; a version asked for by id that is a delete marker is 405 MethodNotAllowed
 * with x-amz-delete-marker and Last-Modified (AWS).
 */
function lookup(r: S3Request, bucket: Bucket, key: string, versionId: string | null | undefined): { rec: ObjectRecord; inline?: Buffer } {
  if (versionId === undefined) {
    const found = r.ctx.objects.getWithInline(bucket.id, key);
    if (found) return found;
    const marker = bucket.versioning == null ? undefined : r.ctx.objects.versions.latestDeleteMarker(bucket.id, key);
    const headers: Record<string, string> = marker ? { 'x-amz-delete-marker': 'true', 'x-amz-version-id': marker.versionId ?? 'null' } : {};
    throw new S3Error('NoSuchKey', undefined, { Key: key }, headers);
  }
  const found = r.ctx.objects.getVersion(bucket.id, key, versionId);
  if (!found) throw new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: versionId ?? 'null' });
  if (found.deleteMarker) {
    throw new S3Error('MethodNotAllowed', undefined, { Method: r.req.method ?? 'GET', ResourceType: 'DeleteMarker' }, {
      'x-amz-delete-marker': 'true',
      'x-amz-version-id': versionId ?? 'null',
      'last-modified': httpDate(found.lastModified),
    });
  }
  return found;
}

interface ReadChecksum {
  algorithm: ChecksumAlgorithm;
  value: string;
  type: string;
}

function wholeChecksum(rec: ObjectRecord): ReadChecksum | undefined {
  if (!rec.checksumAlgorithm || !rec.checksumValue) return undefined;
  return { algorithm: rec.checksumAlgorithm as ChecksumAlgorithm, value: rec.checksumValue, type: rec.checksumType ?? 'FULL_OBJECT' };
}

/**
 * The checksum a `partNumber` read answers with, as AWS: a COMPOSITE object's part has its own
 * (recorded at UploadPart); a FULL_OBJECT object has none per part, except when its only part is all
 * of it; an object not uploaded in parts is its own part 1, so its checksum covers the bytes sent.
 */
function partChecksum(rec: ObjectRecord, partNumber: number): ReadChecksum | undefined {
  const whole = wholeChecksum(rec);
  if (!whole || !rec.parts) return whole;
  if (whole.type === 'COMPOSITE') {
    const value = rec.parts[partNumber - 1]?.checksum;
    return value ? { ...whole, value } : undefined;
  }
  return rec.parts.length === 1 ? whole : undefined;
}

async function readObject(r: S3Request, head: boolean): Promise<S3Response> {
  const bucket = requireBucket(r, 'ObjectRead');
  const key = requireKey(r);
  const versionId = versionIdParam(r.addr.query);
  const partQuery = r.addr.query.get('partNumber');
  const partNumber = partQuery === undefined ? undefined : parsePartNumber(partQuery);
  if (partNumber !== undefined && header(r, 'range') !== undefined) {
    throw new S3Error('InvalidRequest', 'Cannot specify both Range header and partNumber query parameter.');
  }
  // Blobs are leased by openObjectBody in the tick of the lookup; the retry is a fallback only.
  for (let attempt = 0; ; attempt++) {
    const { rec, inline } = lookup(r, bucket, key, versionId);
    checkReadPreconditions(r.req, rec.etag, rec.lastModified);
    const headers: Record<string, string | number> = objectResponseHeaders(rec, r.addr.query);
    // Only buckets that were ever versioned name versions; the "null" one as 'null'.
    if (rec.versionId != null || bucket.versioning != null || versionId !== undefined) headers['x-amz-version-id'] = rec.versionId ?? 'null';
    let range: ReadRange | undefined;
    if (partNumber !== undefined) {
      // A part is a ranged read of the object; an object not uploaded in parts is its own part 1.
      const part = partRange(rec, partNumber);
      range = part.range;
      if (rec.parts) headers['x-amz-mp-parts-count'] = part.count;
    } else {
      range = parseRange(header(r, 'range'), rec.size);
    }
    if (header(r, 'x-amz-checksum-mode')?.toUpperCase() === 'ENABLED') {
      const checksum = partNumber === undefined ? (range ? undefined : wholeChecksum(rec)) : partChecksum(rec, partNumber);
      if (checksum) {
        headers[checksumHeader(checksum.algorithm)] = checksum.value;
        headers['x-amz-checksum-type'] = checksum.type;
      }
    }
    if (rec.tagging?.length) headers['x-amz-tagging-count'] = rec.tagging.length;
    if (range) {
      headers['content-range'] = `bytes ${range.start}-${range.end}/${rec.size}`;
      headers['content-length'] = range.end - range.start + 1;
    } else {
      headers['content-length'] = rec.size;
    }
    const status = range ? 206 : 200;
    if (head || rec.size === 0) return { status, headers, body: head ? undefined : '' };
    try {
      // A small object's bytes come with its row: no file, no stream; checked whole before any is sent.
      if (inline) {
        checkInlineObject(r.ctx, rec, inline);
        return { status, headers, body: range ? inline.subarray(range.start, range.end + 1) : inline };
      }
      const body = await openObjectBody(r.ctx, rec, { range, signal: r.signal });
      return { status, headers, body };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && attempt < 3) continue;
      throw err;
    }
  }
}

export const getObject: OperationHandler = (r) => readObject(r, false);
export const headObject: OperationHandler = (r) => readObject(r, true);
