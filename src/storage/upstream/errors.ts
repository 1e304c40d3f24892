// Upstream trouble as client-facing S3 errors: never the upstream's host, bucket, prefix or words.
import { S3Error } from '../../errors/s3-errors.js';

/** Seconds a client is told to wait when the upstream is unreachable or failing. */
const RETRY_AFTER_SECONDS = '1';

/** The upstream is down or overloaded (after retries): 503 SlowDown with Retry-After. */
export function upstreamUnavailable(cause: unknown): S3Error {
  const err = new S3Error('SlowDown', undefined, {}, { 'Retry-After': RETRY_AFTER_SECONDS });
  // Kept for the server log only; responses show code and the generic message.
  Object.defineProperty(err, 'cause', { value: cause, enumerable: false });
  return err;
}

/** An upstream answer that means our configuration is wrong (403, 400...): generic 503, details logged. */
export function upstreamRejected(status: number, method: string): S3Error {
  const err = new S3Error('ServiceUnavailable');
  Object.defineProperty(err, 'cause', { value: new Error(`upstream answered ${status} to ${method}`), enumerable: false });
  return err;
}

/** A blob missing upstream, in the shape the StorageBackend contract promises (code 'ENOENT'). */
export function blobMissing(): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error('blob not found');
  err.code = 'ENOENT';
  return err;
}
