// What an upload request promises about its body (Content-MD5, x-amz-checksum-*, trailers), parsed up
// front, and the comparison with what was actually received.
import type { IncomingMessage } from 'node:http';
import { S3Error } from '../errors/s3-errors.js';
import {
  CHECKSUM_ALGORITHMS,
  checksumHeader,
  isValidChecksumValue,
  parseChecksumAlgorithm,
  type ChecksumAlgorithm,
} from '../hashing/checksums.js';
import type { UploadDigests } from '../hashing/upload-hasher.js';
import type { PayloadMode } from '../auth/sigv4/index.js';

export interface UploadExpectations {
  contentMd5?: string;
  checksumAlgorithm?: ChecksumAlgorithm;
  /** A value sent as a header; undefined when it comes in the trailer or not at all. */
  checksumValue?: string;
  /** Trailer header name carrying the checksum, e.g. x-amz-checksum-crc32. */
  trailerName?: string;
  signedSha256?: string;
}

function single(req: Pick<IncomingMessage, 'headers'>, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function parseUploadExpectations(req: Pick<IncomingMessage, 'headers'>, payload: PayloadMode): UploadExpectations {
  const out: UploadExpectations = {};
  const md5 = single(req, 'content-md5');
  if (md5 !== undefined) {
    if (Buffer.from(md5, 'base64').length !== 16 || !/^[A-Za-z0-9+/]+={0,2}$/.test(md5)) throw new S3Error('InvalidDigest');
    out.contentMd5 = Buffer.from(md5, 'base64').toString('hex');
  }

  const sent = CHECKSUM_ALGORITHMS.filter((a) => single(req, checksumHeader(a)) !== undefined);
  if (sent.length > 1) throw new S3Error('InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
  const trailer = single(req, 'x-amz-trailer')?.trim().toLowerCase();
  const named = single(req, 'x-amz-sdk-checksum-algorithm') ?? single(req, 'x-amz-checksum-algorithm');

  if (sent[0]) {
    const algo = sent[0];
    const value = single(req, checksumHeader(algo)) as string;
    if (!isValidChecksumValue(algo, value)) {
      throw new S3Error('InvalidRequest', `Value for ${checksumHeader(algo)} header is invalid.`);
    }
    out.checksumAlgorithm = algo;
    out.checksumValue = value;
  } else if (trailer) {
    if (!trailer.startsWith('x-amz-checksum-')) throw new S3Error('InvalidRequest', 'The value specified in the x-amz-trailer header is not supported');
    out.checksumAlgorithm = parseChecksumAlgorithm(trailer.slice('x-amz-checksum-'.length));
    out.trailerName = trailer;
  } else if (named) {
    out.checksumAlgorithm = parseChecksumAlgorithm(named);
  }
  if (named && out.checksumAlgorithm && parseChecksumAlgorithm(named) !== out.checksumAlgorithm) {
    throw new S3Error('InvalidRequest', 'Value for x-amz-sdk-checksum-algorithm header is invalid.');
  }
  if (trailer && payload.kind !== 'streaming-unsigned-trailer' && !(payload.kind === 'streaming-signed' && payload.trailer)) {
    throw new S3Error('InvalidRequest', 'x-amz-trailer requires a STREAMING-*-TRAILER x-amz-content-sha256.');
  }
  if (payload.kind === 'signed') out.signedSha256 = payload.sha256;
  return out;
}

/** Compares what was received with what was promised; throws the AWS error for the first mismatch. */
export function checkUpload(exp: UploadExpectations, got: UploadDigests, trailers: Record<string, string>): void {
  if (exp.signedSha256 !== undefined && exp.signedSha256 !== got.sha256Hex) throw new S3Error('XAmzContentSHA256Mismatch', undefined, { ClientComputedContentSHA256: exp.signedSha256, S3ComputedContentSHA256: got.sha256Hex });
  if (exp.contentMd5 !== undefined && exp.contentMd5 !== got.md5Hex) throw new S3Error('BadDigest');
  if (exp.checksumAlgorithm) {
    const expected = exp.trailerName ? trailers[exp.trailerName] : exp.checksumValue;
    if (exp.trailerName && expected === undefined) throw new S3Error('InvalidRequest', `The trailer ${exp.trailerName} was declared but not sent.`);
    if (expected !== undefined && expected !== got.checksum?.value) {
      throw new S3Error('BadDigest', `The ${exp.checksumAlgorithm} you specified did not match the calculated checksum.`);
    }
  }
}
