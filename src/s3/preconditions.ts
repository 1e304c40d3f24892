// S3's conditional reads and copy sources on the shared RFC 9110 evaluation (src/http/conditionals.ts):
// a failed If-Match/If-Unmodified-Since is 412 PreconditionFailed, a failed If-None-Match/
// If-Modified-Since is 304 on a read (a copy source answers 412 for both: src/s3/copy-source.ts).
import type { IncomingMessage } from 'node:http';
import { S3Error } from '../errors/s3-errors.js';
import { evaluatePreconditions, preconditionsOf, secondPrecision, type ConditionalOptions, type PreconditionFailure, type Preconditions } from '../http/conditionals.js';
import { httpDate } from '../http/http-date.js';

const S3_CONDITIONALS: ConditionalOptions = { etags: 'lenient' };

/** The preconditions against an object's ETag and stored (millisecond) modification time, compared by the second. */
export function objectPreconditions(p: Preconditions, etag: string, lastModified: number): PreconditionFailure | undefined {
  return evaluatePreconditions(p, { etag, lastModified: secondPrecision(lastModified) }, S3_CONDITIONALS);
}

export function checkReadPreconditions(req: IncomingMessage, etag: string, lastModified: number): void {
  const failure = objectPreconditions(preconditionsOf(req.headers), etag, lastModified);
  if (!failure) return;
  if (failure.kind === 'failed') throw new S3Error('PreconditionFailed', undefined, { Condition: failure.condition });
  throw new S3Error('NotModified', undefined, {}, { etag, 'last-modified': httpDate(lastModified) });
}
