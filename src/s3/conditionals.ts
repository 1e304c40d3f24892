// HTTP preconditions on reads with AWS precedence: If-Match beats If-Unmodified-Since, If-None-Match
// beats If-Modified-Since; a failed If-Match/If-Unmodified-Since is 412, a failed If-None-Match/
// If-Modified-Since is 304.
import type { IncomingMessage } from 'node:http';
import { S3Error } from '../errors/s3-errors.js';

function etagList(v: string): string[] {
  return v.split(',').map((s) => s.trim().replace(/^W\//, ''));
}

function matches(list: string, etag: string): boolean {
  const bare = etag.replace(/"/g, '');
  return etagList(list).some((e) => e === '*' || e.replace(/"/g, '') === bare);
}

function parseDate(v: string | undefined): number | undefined {
  if (!v) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

export function checkReadPreconditions(req: IncomingMessage, etag: string, lastModified: number): void {
  const h = req.headers;
  const ifMatch = h['if-match'];
  const ifNoneMatch = h['if-none-match'];
  const modified = Math.floor(lastModified / 1000) * 1000;
  const notModifiedHeaders = { etag, 'last-modified': new Date(lastModified).toUTCString() };

  if (ifMatch !== undefined) {
    if (!matches(ifMatch, etag)) throw new S3Error('PreconditionFailed', undefined, { Condition: 'If-Match' });
  } else {
    const since = parseDate(h['if-unmodified-since']);
    if (since !== undefined && modified > since) throw new S3Error('PreconditionFailed', undefined, { Condition: 'If-Unmodified-Since' });
  }
  if (ifNoneMatch !== undefined) {
    if (matches(ifNoneMatch, etag)) throw new S3Error('NotModified', undefined, {}, notModifiedHeaders);
  } else {
    const since = parseDate(h['if-modified-since']);
    if (since !== undefined && modified <= since) throw new S3Error('NotModified', undefined, {}, notModifiedHeaders);
  }
}
