// HTTP preconditions on reads with AWS precedence: If-Match beats If-Unmodified-Since, If-None-Match
// beats If-Modified-Since; a failed If-Match/If-Unmodified-Since is 412, a failed If-None-Match/
// If-Modified-Since is 304.
import type { IncomingMessage } from 'node:http';
import { S3Error } from '../errors/s3-errors.js';
import { httpDate } from './http-date.js';

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

/** The four precondition values, whichever request headers carried them. */
export interface Preconditions {
  ifMatch?: string;
  ifNoneMatch?: string;
  ifModifiedSince?: string;
  ifUnmodifiedSince?: string;
}

/** Which precondition failed, with AWS precedence; undefined when the request may proceed. */
export type PreconditionFailure =
  | { kind: 'failed'; condition: 'If-Match' | 'If-Unmodified-Since' }
  | { kind: 'not-modified'; condition: 'If-None-Match' | 'If-Modified-Since' };

export function evaluatePreconditions(p: Preconditions, etag: string, lastModified: number): PreconditionFailure | undefined {
  const modified = Math.floor(lastModified / 1000) * 1000;
  if (p.ifMatch !== undefined) {
    if (!matches(p.ifMatch, etag)) return { kind: 'failed', condition: 'If-Match' };
  } else {
    const since = parseDate(p.ifUnmodifiedSince);
    if (since !== undefined && modified > since) return { kind: 'failed', condition: 'If-Unmodified-Since' };
  }
  if (p.ifNoneMatch !== undefined) {
    if (matches(p.ifNoneMatch, etag)) return { kind: 'not-modified', condition: 'If-None-Match' };
  } else {
    const since = parseDate(p.ifModifiedSince);
    if (since !== undefined && modified <= since) return { kind: 'not-modified', condition: 'If-Modified-Since' };
  }
  return undefined;
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(',') : v;
}

export function checkReadPreconditions(req: IncomingMessage, etag: string, lastModified: number): void {
  const h = req.headers;
  const failure = evaluatePreconditions(
    {
      ifMatch: one(h['if-match']),
      ifNoneMatch: one(h['if-none-match']),
      ifModifiedSince: one(h['if-modified-since']),
      ifUnmodifiedSince: one(h['if-unmodified-since']),
    },
    etag,
    lastModified,
  );
  if (!failure) return;
  if (failure.kind === 'failed') throw new S3Error('PreconditionFailed', undefined, { Condition: failure.condition });
  throw new S3Error('NotModified', undefined, {}, { etag, 'last-modified': httpDate(lastModified) });
}
