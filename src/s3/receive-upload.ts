// Receiving an upload body (PutObject, UploadPart): decode aws-chunked framing, hash while streaming,
// stage the bytes, then verify every promise the client made. The caller commits or aborts.
import { pipeline, type Readable } from 'node:stream';
import type { AppContext } from '../context.js';
import { ChunkDecoder } from '../auth/sigv4/index.js';
import { S3Error } from '../errors/s3-errors.js';
import { UploadHasher, digestBuffer, type UploadDigests } from '../hashing/upload-hasher.js';
import type { ChecksumAlgorithm } from '../hashing/checksums.js';
import type { StagedBlob } from '../storage/backend.js';
import { readSmallBody, requestBody } from './body.js';
import { inlineStaged } from '../storage/inline-stage.js';
import { stageObjectBody } from './object-writes.js';
import { reserveUploadBuffers, uploadBufferBytes } from '../storage/upload-buffers.js';
import { header, type S3Request } from './operation.js';
import { checkUpload, parseUploadExpectations, type UploadExpectations } from './upload-checks.js';
import type { QuotaReservation } from '../credits/quotas.js';

export interface ReceivedUpload {
  staged: StagedBlob;
  digests: UploadDigests;
  /**
   * Gives back the upload budget an inline body still holds (its bytes go into the metadata commit):
   * call once it is committed or aborted. A no-op for a body staged in the backend, whose buffers are
   * gone when receiveUpload returns.
   */
  release(): void;
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
 * is computed when the request names none (a part of a FULL_OBJECT multipart upload). `objectBody`:
 * the body of a whole object version, which may be kept inline in the metadata database when small.
 * `quota`: the storage quota reservation taken for it (quota.ts), which bounds it too: a body that
 * outgrows it is refused with the quota's refusal.
 */
export async function receiveUpload(
  r: S3Request,
  opts: { maxSize: number; checksumAlgorithm?: ChecksumAlgorithm; objectBody?: boolean; quota?: QuotaReservation },
): Promise<ReceivedUpload> {
  precheckUpload(r, opts.maxSize);
  const quotaBytes = opts.quota?.maxBytes ?? Infinity;
  if (quotaBytes >= opts.maxSize) return receiveWithin(r, opts);
  try {
    return await receiveWithin(r, { ...opts, maxSize: quotaBytes });
  } catch (err) {
    // The hasher stopped the body past what the quota left: at least one byte more had arrived.
    if (err instanceof S3Error && err.code === 'EntityTooLarge' && opts.quota) throw await opts.quota.refusal(quotaBytes + 1);
    throw err;
  }
}

async function receiveWithin(
  r: S3Request,
  opts: { maxSize: number; checksumAlgorithm?: ChecksumAlgorithm; objectBody?: boolean },
): Promise<ReceivedUpload> {
  const { ctx, req, auth } = r;
  const framed = auth.payload.kind === 'streaming-signed' || auth.payload.kind === 'streaming-unsigned-trailer';
  const length = declaredLength(r);
  const expect = parseUploadExpectations(req, auth.payload);
  const inline = opts.objectBody === true && length !== undefined && length <= ctx.config.inlineObjectMaxBytes;
  // Before a byte of the body is read (and before "100 Continue"): the memory it will hold.
  const need = uploadBufferBytes(ctx, length, inline ? { inline: framed ? 'streamed' : 'whole' } : {});
  const buffers = await reserveUploadBuffers(ctx, need, { req, signal: r.signal });
  try {
    const received = inline && !framed
      ? await receiveSmallObject(r, length, expect, opts.checksumAlgorithm)
      : await receiveStreamed(r, { ...opts, length, framed, expect });
    if (!received.staged.inline) {
      buffers.release();
      return { ...received, release: () => undefined };
    }
    return { ...received, release: buffers.release };
  } catch (err) {
    buffers.release();
    throw err;
  }
}

async function receiveStreamed(
  r: S3Request,
  opts: { maxSize: number; checksumAlgorithm?: ChecksumAlgorithm; objectBody?: boolean; length: number | undefined; framed: boolean; expect: UploadExpectations },
): Promise<Omit<ReceivedUpload, 'release'>> {
  const { ctx, req, auth } = r;
  const { length, framed, expect } = opts;
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
  const staged = opts.objectBody
    ? await stageObjectBody(ctx, body, { maxSize: length, signal: r.signal })
    : await ctx.storage.stage(body, { signal: r.signal, ...(length !== undefined ? { sizeHint: length } : {}) });
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

/**
 * The fast path for a small, plainly framed object body (the common 4 KiB PUT): read whole, hashed in
 * one pass, staged inline. Same checks and errors as the streaming path.
 */
async function receiveSmallObject(
  r: S3Request,
  length: number,
  expect: UploadExpectations,
  checksumAlgorithm: ChecksumAlgorithm | undefined,
): Promise<Omit<ReceivedUpload, 'release'>> {
  const body = await readSmallBody(r.req, length);
  if (body.length !== length) throw new S3Error('IncompleteBody');
  const digests = await digestBuffer(body, expect.checksumAlgorithm ?? checksumAlgorithm);
  checkUpload(expect, digests, {});
  return { staged: inlineStaged(body), digests };
}

/**
 * An object body that is not the request body itself (the file part of a POST form): the same upload
 * budget, hashing, staging (inline when `bound`, an upper bound on its size, is small) and checks as a
 * PutObject body. On failure nothing is left behind; on success the caller commits or aborts `staged`.
 */
export async function receiveObjectStream(
  ctx: AppContext,
  source: Readable,
  opts: { bound: number | undefined; maxSize: number; expect: UploadExpectations; signal: AbortSignal },
): Promise<ReceivedUpload> {
  const { bound, expect } = opts;
  const inline = bound !== undefined && bound <= ctx.config.inlineObjectMaxBytes;
  // No request to pause while it waits: the parser holding the unread part holds the socket back.
  const buffers = await reserveUploadBuffers(ctx, uploadBufferBytes(ctx, bound, inline ? { inline: 'streamed' } : {}), { signal: opts.signal });
  try {
    const hasher = new UploadHasher({ checksumAlgorithm: expect.checksumAlgorithm, maxSize: opts.maxSize, pool: ctx.hashPool, expectedSize: bound });
    // pipeline: an error of the source (also one it had before this point) fails the hasher and the stage.
    const body = pipeline(source, hasher, () => undefined) as UploadHasher;
    const staged = await stageObjectBody(ctx, body, { maxSize: bound, signal: opts.signal });
    try {
      const digests = await hasher.digests();
      checkUpload(expect, digests, {});
      if (!staged.inline) buffers.release();
      return { staged, digests, release: staged.inline ? buffers.release : () => undefined };
    } catch (err) {
      await staged.abort();
      throw err;
    }
  } catch (err) {
    source.destroy();
    buffers.release();
    throw err;
  }
}
