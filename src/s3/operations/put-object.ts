// PutObject: stream the body (through the aws-chunked decoder when framed) and the digests into a
// staged blob; verify every promise the client made; then commit bytes and metadata. Nothing becomes
// visible, and nothing is left behind, unless every check passes.
import { ChunkDecoder } from '../../auth/sigv4/index.js';
import { S3Error } from '../../errors/s3-errors.js';
import { checksumHeader } from '../../hashing/checksums.js';
import { UploadHasher } from '../../hashing/upload-hasher.js';
import type { ObjectRecord } from '../../db/repos/objects.js';
import { header, requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { checkUpload, parseUploadExpectations } from '../upload-checks.js';
import { pickObjectHeaders } from '../object-headers.js';
import { requestBody } from '../body.js';

function declaredLength(r: S3Request): number | undefined {
  const raw = header(r, 'x-amz-decoded-content-length') ?? header(r, 'content-length');
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new S3Error('InvalidArgument', 'Invalid content length.');
  return Number(raw);
}

export const putObject: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  const { ctx, req, auth } = r;
  const framed = auth.payload.kind === 'streaming-signed' || auth.payload.kind === 'streaming-unsigned-trailer';

  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
    throw new S3Error('MissingContentLength');
  }
  const length = declaredLength(r);
  if (length !== undefined && length > ctx.config.maxObjectSize) throw new S3Error('EntityTooLarge');
  const expect = parseUploadExpectations(req, auth.payload);
  const meta = pickObjectHeaders(req);

  const hasher = new UploadHasher({ checksumAlgorithm: expect.checksumAlgorithm, maxSize: ctx.config.maxObjectSize });
  let decoder: ChunkDecoder | undefined;
  const decodedRaw = header(r, 'x-amz-decoded-content-length');
  if (framed) {
    decoder = new ChunkDecoder({ auth, decodedContentLength: decodedRaw === undefined ? undefined : Number(decodedRaw) });
  }
  const body = requestBody(req, decoder ? [decoder, hasher] : [hasher]);

  const staged = await ctx.storage.stage(body, { signal: r.signal });
  let committed = false;
  try {
    const digests = await hasher.digests();
    if (!framed && length !== undefined && digests.size !== length) throw new S3Error('IncompleteBody');
    checkUpload(expect, digests, decoder?.trailers ?? {});
    const now = Math.floor(ctx.clock().getTime() / 1000) * 1000;
    const etag = `"${digests.md5Hex}"`;
    const record: ObjectRecord = {
      bucketId: bucket.id,
      key,
      blobId: staged.blobId,
      size: digests.size,
      etag,
      sha256: digests.sha256Hex,
      checksumAlgorithm: digests.checksum?.algorithm ?? null,
      checksumValue: digests.checksum?.value ?? null,
      checksumType: digests.checksum ? 'FULL_OBJECT' : null,
      ...meta,
      lastModified: now,
    };
    await staged.commit();
    committed = true;
    const replaced = ctx.objects.put(record);
    if (replaced) void ctx.storage.remove(replaced).catch((err: unknown) => ctx.log.warn({ err }, 'blob removal failed'));
    const headers: Record<string, string> = { etag };
    if (digests.checksum) {
      headers[checksumHeader(digests.checksum.algorithm)] = digests.checksum.value;
      headers['x-amz-checksum-type'] = 'FULL_OBJECT';
    }
    return { status: 200, headers: { ...headers, 'content-length': '0' } };
  } catch (err) {
    if (committed) await ctx.storage.remove(staged.blobId).catch(() => undefined);
    else await staged.abort();
    throw err;
  }
};
