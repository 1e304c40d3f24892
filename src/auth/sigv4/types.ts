import type { PresignedMemo } from './presigned-memo.js';

// Public types of the SigV4 verifier. Other modules are written against these shapes: keep them stable.

export interface SigV4Request {
  /** 'GET', 'PUT', ... */
  method: string;
  /** Path exactly as sent on the wire, still percent-encoded, no query string, e.g. '/bucket/a%20b'. */
  rawPath: string;
  /** Raw query string without '?', still encoded ('' when none). */
  rawQuery: string;
  /** node IncomingMessage.headers (lower-case names). */
  headers: Record<string, string | string[] | undefined>;
}

export type PayloadMode =
  /** x-amz-content-sha256 is a 64-hex digest: the caller verifies the body hash itself. */
  | { kind: 'signed'; sha256: string }
  /** UNSIGNED-PAYLOAD (and presigned requests without the header). */
  | { kind: 'unsigned' }
  /** STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]. */
  | { kind: 'streaming-signed'; trailer: boolean }
  /** STREAMING-UNSIGNED-PAYLOAD-TRAILER. */
  | { kind: 'streaming-unsigned-trailer' };

export interface VerifiedAuth {
  accessKeyId: string;
  method: 'header' | 'presigned';
  payload: PayloadMode;
  /** kSigning, needed to verify chunk signatures. */
  signingKey: Buffer;
  /** The request's (seed) signature, hex. */
  signature: string;
  /** e.g. 20130524T000000Z */
  amzDate: string;
  /** e.g. 20130524/us-east-1/s3/aws4_request */
  scope: string;
}

export interface VerifyOptions {
  /**
   * The configured region. A credential scope with another region fails with AuthorizationHeaderMalformed
   * (header auth) or AuthorizationQueryParametersError (presigned), naming the expected region.
   */
  region: string;
  /** Default 's3'. */
  service?: string;
  /** Injected clock. */
  now: Date;
  /** Default 15 minutes. Header auth: RequestTimeTooSkewed beyond it; presigned: how far in the future X-Amz-Date may be. */
  maxSkewMs?: number;
  /** undefined -> InvalidAccessKeyId. */
  getSecret(accessKeyId: string): string | undefined;
  /** Presigned URLs verified before, to answer their repeats without the signature's work (presigned-memo.ts). */
  memo?: PresignedMemo;
}

export interface ChunkDecoderOptions {
  /** Payload kind must be streaming-signed or streaming-unsigned-trailer. */
  auth: VerifiedAuth;
  /** x-amz-decoded-content-length if sent: total decoded bytes must equal it, else IncompleteBody. */
  decodedContentLength?: number;
  /**
   * Largest accepted chunk (data bytes of one chunk). Default 16 MiB. In chunk-signed mode one whole chunk is
   * held in memory until its signature is verified, so this bounds memory per upload.
   */
  maxChunkSize?: number;
}
