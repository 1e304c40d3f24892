// Receiving an upload body (PutObject, UploadPart): decode aws-chunked framing, hash while streaming,
// stage the bytes, then verify every promise the client made. The caller commits or aborts.
import { ChunkDecoder } from '../auth/sigv4/index.js';
import { S3Error } from '../errors/s3-errors.js';
import { UploadHasher, type UploadDigests } from '../hashing/upload-hasher.js';
import type { ChecksumAlgorithm } from '../hashing/checksums.js';
import type { StagedBlob } from '../storage/backend.js';
import { requestBody } from './body.js';
import { header, type S3Request } from './operation.js';
import { checkUpload, parseUploadExpectations } from './upload-checks.js';

export interface ReceivedUpload {
  staged: StagedBlob;
  digests: UploadDigests;
}

function declaredLength(r: S3Request): number | undefined {
  const raw = header(r, 'x-amz-decoded-content-length') ?? header(r, 'content-length');
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new S3Error('InvalidArgument', 'Invalid content length.');
  return Number(raw);
}

/** Everything about the request that can be refused before a byte of the body is read. */
export function precheckUpload(r: S3Request, maxSize: number): void {
  if (r.req.headers['content-length'] === undefined && r.req.headers['transfer-encoding'] === undefined) {
    throw new S3Error('MissingContentLength');
  }
  const length = declaredLength(r);
  if (length !== undefined && length > maxSize) throw new S3Error('EntityTooLarge');
}

/**
 * Streams the body into a staged blob and verifies it. On any failure nothing is left behind and the
 * AWS error is thrown; on success the caller owns `staged` (commit it or abort it). `checksumAlgorithm`
 * is computed when the request names none (a part of a FULL_OBJECT multipart upload).
 */
export async function receiveUpload(r: S3Request, opts: { maxSize: number; checksumAlgorithm?: ChecksumAlgorithm }): Promise<ReceivedUpload> {
  const { ctx, req, auth } = r;
  precheckUpload(r, opts.maxSize);
  const framed = auth.payload.kind === 'streaming-signed' || auth.payload.kind === 'streaming-unsigned-trailer';
  const length = declaredLength(r);
  const expect = parseUploadExpectations(req, auth.payload);
  const hasher = new UploadHasher({
    checksumAlgorithm: expect.checksumAlgorithm ?? opts.checksumAlgorithm,
    maxSize: opts.maxSize,
    pool: ctx.hashPool,
    expectedSize: length,
  });
  const decodedRaw = header(r, 'x-amz-decoded-content-length');
  const decoder = framed
    ? new ChunkDecoder({ auth, decodedContentLength: decodedRaw === undefined ? undefined : Number(decodedRaw) })
    : undefined;
  const body = requestBody(req, decoder ? [decoder, hasher] : [hasher]);
  const staged = await ctx.storage.stage(body, { signal: r.signal });
  try {
    const digests = await hasher.digests();
    if (!framed && length !== undefined && digests.size !== length) throw new S3Error('IncompleteBody');
    checkUpload(expect, digests, decoder?.trailers ?? {});
    return { staged, digests };
  } catch (err) {
    await staged.abort();
    throw err;
  }
}
