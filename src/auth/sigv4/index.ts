// AWS Signature Version 4 verification for S3: public API.
export type {
  ChunkDecoderOptions,
  PayloadMode,
  SigV4Request,
  VerifiedAuth,
  VerifyOptions,
} from './types.js';
export { verifyRequest, signatureMatches, DEFAULT_MAX_SKEW_MS, MAX_PRESIGNED_EXPIRES } from './verify.js';
export { ChunkDecoder } from './chunked-decoder.js';
export { PresignedMemo } from './presigned-memo.js';
export {
  ALGORITHM,
  EMPTY_SHA256,
  awsUriEncode,
  canonicalHeaders,
  canonicalQueryString,
  canonicalRequest,
  parseQuery,
  reencodePath,
  stringToSign,
  type QueryParam,
} from './canonical.js';
export { deriveSigningKey, computeSigningKey, signWithKey } from './signing-key.js';
export { parseAuthorizationHeader, parsePayloadMode } from './parse.js';
