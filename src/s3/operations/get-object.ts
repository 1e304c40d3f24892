// GetObject and HeadObject: metadata from SQLite, bytes streamed from the backend, Range and preconditions.
import { S3Error } from '../../errors/s3-errors.js';
import { checksumHeader, type ChecksumAlgorithm } from '../../hashing/checksums.js';
import type { ObjectRecord } from '../../db/repos/objects.js';
import { checkReadPreconditions } from '../conditionals.js';
import { objectResponseHeaders } from '../object-headers.js';
import { header, requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { parseRange } from '../range.js';
import { openObjectBody } from '../object-reader.js';
import type { S3Response } from '../respond.js';

function lookup(r: S3Request, bucketId: string, key: string): ObjectRecord {
  const rec = r.ctx.objects.get(bucketId, key);
  if (!rec) throw new S3Error('NoSuchKey', undefined, { Key: key });
  return rec;
}

async function readObject(r: S3Request, head: boolean): Promise<S3Response> {
  const bucket = requireBucket(r, 'ObjectRead');
  const key = requireKey(r);
  if (r.addr.query.has('partNumber') && r.addr.query.get('partNumber') !== '1') {
    throw new S3Error('InvalidPart', 'The requested partnumber is not satisfiable');
  }
  // An overwrite may delete the blob between lookup and open: look again, it is the newer version.
  for (let attempt = 0; ; attempt++) {
    const rec = lookup(r, bucket.id, key);
    checkReadPreconditions(r.req, rec.etag, rec.lastModified);
    const range = parseRange(header(r, 'range'), rec.size);
    const headers: Record<string, string | number> = objectResponseHeaders(rec, r.addr.query);
    if (!range && header(r, 'x-amz-checksum-mode')?.toUpperCase() === 'ENABLED' && rec.checksumAlgorithm && rec.checksumValue) {
      headers[checksumHeader(rec.checksumAlgorithm as ChecksumAlgorithm)] = rec.checksumValue;
      headers['x-amz-checksum-type'] = rec.checksumType ?? 'FULL_OBJECT';
    }
    if (r.addr.query.has('partNumber')) headers['x-amz-mp-parts-count'] = 1;
    if (range) {
      headers['content-range'] = `bytes ${range.start}-${range.end}/${rec.size}`;
      headers['content-length'] = range.end - range.start + 1;
    } else {
      headers['content-length'] = rec.size;
    }
    const status = range ? 206 : 200;
    if (head || rec.size === 0) return { status, headers, body: head ? undefined : '' };
    try {
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
