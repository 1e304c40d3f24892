// GetObject and HeadObject: metadata from SQLite, bytes streamed from the backend, Range and preconditions.
import { S3Error } from '../../errors/s3-errors.js';
import { checksumHeader, type ChecksumAlgorithm } from '../../hashing/checksums.js';
import type { ObjectRecord } from '../../db/repos/objects.js';
import type { Bucket } from '../../db/repos/index.js';
import { checkReadPreconditions } from '../preconditions.js';
import { objectResponseHeaders } from '../object-headers.js';
import { header, requireBucketForRead, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { parseRange } from '../../http/range.js';
import { checkInlineObject, openObjectBody, parsePartNumber, partRange } from '../../storage/object-reader.js';
import type { S3Response } from '../respond.js';
import type { ReadRange } from '../../storage/backend.js';
import { findVersion, servedVersionId, versionIdParam } from '../versioning.js';
import { expirationHeader } from '../../lifecycle/rules.js';

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

/**
 * A version read by nobody the keys or the policy let in: served only when its own ACL is public-read;
 * any other answer (a private version, no such key or version) is AccessDenied, which tells nothing.
 */
async function publicVersion(r: S3Request, bucket: Bucket, key: string, versionId: string | null | undefined): ReturnType<typeof findVersion> {
  let found: Awaited<ReturnType<typeof findVersion>>;
  try {
    found = await findVersion(r, bucket, key, versionId);
  } catch (err) {
    if (err instanceof S3Error && err.status < 500) throw new S3Error('AccessDenied');
    throw err;
  }
  if (found.rec.acl !== 'public-read') throw new S3Error('AccessDenied');
  return found;
}

async function readObject(r: S3Request, head: boolean): Promise<S3Response> {
  const { bucket, byObjectAcl } = await requireBucketForRead(r);
  const key = requireKey(r);
  const versionId = versionIdParam(r.addr.query);
  const partQuery = r.addr.query.get('partNumber');
  const partNumber = partQuery === undefined ? undefined : parsePartNumber(partQuery);
  if (partNumber !== undefined && header(r, 'range') !== undefined) {
    throw new S3Error('InvalidRequest', 'Cannot specify both Range header and partNumber query parameter.');
  }
  // A rule's Expiration of the current version (a read by version id names none), read before the
  // lookup: nothing may be awaited between the lookup and the lease.
  const held = versionId === undefined ? r.ctx.lifecycleRules.held(bucket.id) : { rules: null };
  const rules = held ? held.rules : await r.ctx.lifecycleRules.rules(bucket.id);
  // Blobs are leased by openObjectBody right after the lookup; the retry is a fallback only.
  for (let attempt = 0; ; attempt++) {
    const { rec, inline } = byObjectAcl ? await publicVersion(r, bucket, key, versionId) : await findVersion(r, bucket, key, versionId);
    checkReadPreconditions(r.req, rec.etag, rec.lastModified);
    // Added to, never spread: a spread with more properties after it costs microseconds on Node 20.
    const headers: Record<string, string | number> = objectResponseHeaders(rec, r.addr.query);
    const version = servedVersionId(bucket, rec, versionId);
    if (version !== undefined) headers['x-amz-version-id'] = version;
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
    const expiry = rules ? expirationHeader(rules, rec) : undefined;
    if (expiry !== undefined) headers['x-amz-expiration'] = expiry;
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
