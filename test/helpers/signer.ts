// SigV4 for raw requests. Header and presigned auth come from @smithy/signature-v4 (the signer the
// AWS SDK for JavaScript uses) with S3's settings: the path is signed exactly as sent
// (`uriEscapePath: false`) and no payload hash is added behind our back (`applyChecksum: false`).
// The aws-chunked encoders are our own, from the AWS documentation "Signature Calculations for the
// Authorization Header: Transferring Payload in Multiple Chunks (Chunked Upload)" and "... Including
// Trailing Headers"; checksum-selfcheck.test.ts checks them against the documented example values.
//
//   chunk:   hex(size) ";chunk-signature=" sig CRLF data CRLF   ... final chunk of size 0
//   sig_i  = HMAC(signingKey, "AWS4-HMAC-SHA256-PAYLOAD" LF date LF scope LF sig_{i-1} LF
//                             sha256hex("") LF sha256hex(chunk data))       sig_0 = seed (header) signature
//   trailer (signed): after "0;chunk-signature=..CRLF": "name:value" CRLF ... "x-amz-trailer-signature:" tsig CRLF CRLF
//   tsig   = HMAC(signingKey, "AWS4-HMAC-SHA256-TRAILER" LF date LF scope LF sig_final LF
//                             sha256hex("name:value" LF ...))
//   unsigned trailer: hex(size) CRLF data CRLF ... "0" CRLF "name:value" CRLF ... CRLF
import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '@aws-crypto/sha256-js';
import type { HeaderList } from './raw-http.js';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export const DEFAULT_REGION = 'us-east-1';
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
export const STREAMING_SIGNED = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD';
export const STREAMING_SIGNED_TRAILER = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER';
export const STREAMING_UNSIGNED_TRAILER = 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';

/** RFC 3986 escaping as the SigV4 canonical form wants it (encodeURIComponent misses !'()*). */
export function escapeUri(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** An object key as SDKs put it in a path: every byte escaped except unreserved characters and '/'. */
export function encodeKeyPath(key: string): string {
  return key.split('/').map(escapeUri).join('/');
}

/** A query string in SigV4 canonical order and escaping, so the wire form equals the signed form. */
export function encodeQuery(query: Record<string, string>): string {
  return Object.keys(query)
    .sort()
    .map((k) => `${escapeUri(k)}=${escapeUri(query[k] ?? '')}`)
    .join('&');
}

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

export function deriveSigningKey(secret: string, shortDate: string, region: string, service = 's3'): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, shortDate), region), service), 'aws4_request');
}

export interface SignInput {
  /** host[:port] as sent in the Host header. */
  host: string;
  method: string;
  /** The path that is signed; also the one sent unless `wirePath` is given. Already escaped. */
  path: string;
  /** What goes on the wire when it must differ from the signed path (tests of path handling). */
  wirePath?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  /** The value of x-amz-content-sha256 (a hex digest, UNSIGNED-PAYLOAD or a STREAMING-* marker). */
  payloadHash: string;
  credentials: Credentials;
  signingDate?: Date;
  region?: string;
}

export interface SignedRequest {
  /** request-target: path and query, ready for the request line. */
  target: string;
  headers: HeaderList;
  signature: string;
  longDate: string;
  scope: string;
  signingKey: Buffer;
}

function signer(credentials: Credentials, region: string): SignatureV4 {
  return new SignatureV4({
    credentials,
    region,
    service: 's3',
    sha256: Sha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
}

function target(path: string, query: Record<string, string>): string {
  const qs = encodeQuery(query);
  return qs ? `${path}?${qs}` : path;
}

/** Header-based SigV4 (the `Authorization: AWS4-HMAC-SHA256 ...` form). */
export async function signHeaders(input: SignInput): Promise<SignedRequest> {
  const region = input.region ?? DEFAULT_REGION;
  const query = input.query ?? {};
  const headers: Record<string, string> = { ...(input.headers ?? {}), host: input.host, 'x-amz-content-sha256': input.payloadHash };
  const signed = await signer(input.credentials, region).sign(
    { method: input.method, protocol: 'http:', hostname: input.host, path: input.path, query: { ...query }, headers },
    { signingDate: input.signingDate ?? new Date() },
  );
  const auth = signed.headers['authorization'] ?? '';
  const sigMatch = /Signature=([0-9a-f]{64})/.exec(auth);
  const credMatch = /Credential=[^/]+\/([^,]+)/.exec(auth);
  const longDate = signed.headers['x-amz-date'] ?? '';
  if (!sigMatch?.[1] || !credMatch?.[1] || !longDate) throw new Error(`unexpected signer output: ${auth}`);
  const scope = credMatch[1];
  return {
    target: target(input.wirePath ?? input.path, query),
    headers: Object.entries(signed.headers),
    signature: sigMatch[1],
    longDate,
    scope,
    signingKey: deriveSigningKey(input.credentials.secretAccessKey, longDate.slice(0, 8), region),
  };
}

export interface PresignInput extends Omit<SignInput, 'payloadHash'> {
  expiresIn: number;
}

/** Query-string (presigned URL) SigV4 with UNSIGNED-PAYLOAD, as the S3 presigners make it. */
export async function presign(input: PresignInput): Promise<{ target: string; headers: HeaderList }> {
  const region = input.region ?? DEFAULT_REGION;
  const headers: Record<string, string> = { ...(input.headers ?? {}), host: input.host, 'x-amz-content-sha256': UNSIGNED_PAYLOAD };
  const keep = new Set(['x-amz-content-sha256']);
  const signed = await signer(input.credentials, region).presign(
    { method: input.method, protocol: 'http:', hostname: input.host, path: input.path, query: { ...(input.query ?? {}) }, headers },
    { signingDate: input.signingDate ?? new Date(), expiresIn: input.expiresIn, unhoistableHeaders: keep, unsignableHeaders: keep },
  );
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.query ?? {})) {
    if (typeof v === 'string') query[k] = v;
    else if (Array.isArray(v) && typeof v[0] === 'string') query[k] = v[0];
  }
  const sendHeaders = Object.entries(signed.headers).filter(([k]) => k.toLowerCase() !== 'x-amz-content-sha256');
  return { target: target(input.wirePath ?? input.path, query), headers: sendHeaders };
}

export interface ChunkSigningContext {
  signingKey: Buffer;
  longDate: string;
  scope: string;
  seedSignature: string;
}

export function chunkSignature(ctx: ChunkSigningContext, previous: string, data: Uint8Array): string {
  const stringToSign = ['AWS4-HMAC-SHA256-PAYLOAD', ctx.longDate, ctx.scope, previous, EMPTY_SHA256, sha256Hex(data)].join('\n');
  return createHmac('sha256', ctx.signingKey).update(stringToSign, 'utf8').digest('hex');
}

export function trailerSignature(ctx: ChunkSigningContext, previous: string, trailers: HeaderList): string {
  const canonical = trailers.map(([k, v]) => `${k.toLowerCase()}:${v.trim()}\n`).join('');
  const stringToSign = ['AWS4-HMAC-SHA256-TRAILER', ctx.longDate, ctx.scope, previous, sha256Hex(canonical)].join('\n');
  return createHmac('sha256', ctx.signingKey).update(stringToSign, 'utf8').digest('hex');
}

function splitChunks(data: Buffer, chunkSize: number): Buffer[] {
  const out: Buffer[] = [];
  for (let off = 0; off < data.length; off += chunkSize) out.push(data.subarray(off, Math.min(off + chunkSize, data.length)));
  out.push(Buffer.alloc(0)); // the final, empty chunk
  return out;
}

export interface SignedChunksOptions {
  chunkSize: number;
  /** Trailing headers for the -TRAILER variant (then an x-amz-trailer-signature line follows them). */
  trailers?: HeaderList;
  /** Replace the signature of chunk `index` (0-based; the final empty chunk included) on the wire. */
  tamperSignature?: { index: number; signature: string };
  /** Replace the trailer signature on the wire. */
  tamperTrailerSignature?: string;
  /** Flip one byte of chunk `index` after signing it. */
  tamperData?: { index: number };
}

/** STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER) body. */
export function encodeSignedChunks(data: Buffer, ctx: ChunkSigningContext, opts: SignedChunksOptions): Buffer {
  const parts: Buffer[] = [];
  let previous = ctx.seedSignature;
  splitChunks(data, opts.chunkSize).forEach((chunk, index) => {
    const sig = chunkSignature(ctx, previous, chunk);
    previous = sig;
    const wireSig = opts.tamperSignature?.index === index ? opts.tamperSignature.signature : sig;
    let wireData = chunk;
    if (opts.tamperData?.index === index && chunk.length > 0) {
      wireData = Buffer.from(chunk);
      wireData[0] = (wireData[0] ?? 0) ^ 0xff;
    }
    parts.push(Buffer.from(`${chunk.length.toString(16)};chunk-signature=${wireSig}\r\n`, 'latin1'));
    if (chunk.length > 0) parts.push(wireData, Buffer.from('\r\n'));
  });
  if (opts.trailers && opts.trailers.length > 0) {
    const tsig = opts.tamperTrailerSignature ?? trailerSignature(ctx, previous, opts.trailers);
    for (const [k, v] of opts.trailers) parts.push(Buffer.from(`${k}:${v}\r\n`, 'latin1'));
    parts.push(Buffer.from(`x-amz-trailer-signature:${tsig}\r\n`, 'latin1'));
  }
  parts.push(Buffer.from('\r\n'));
  return Buffer.concat(parts);
}

/** The encoded length of a signed aws-chunked body (signatures are always 64 hex characters). */
export function signedChunksLength(data: Buffer, opts: SignedChunksOptions): number {
  const dummy: ChunkSigningContext = { signingKey: Buffer.alloc(32), longDate: '', scope: '', seedSignature: '0'.repeat(64) };
  return encodeSignedChunks(data, dummy, { chunkSize: opts.chunkSize, trailers: opts.trailers }).length;
}

/** STREAMING-UNSIGNED-PAYLOAD-TRAILER body, as the SDKs send it over TLS. */
export function encodeUnsignedTrailerChunks(data: Buffer, chunkSize: number, trailers: HeaderList): Buffer {
  const parts: Buffer[] = [];
  for (const chunk of splitChunks(data, chunkSize)) {
    parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`, 'latin1'));
    if (chunk.length > 0) parts.push(chunk, Buffer.from('\r\n'));
  }
  for (const [k, v] of trailers) parts.push(Buffer.from(`${k}:${v}\r\n`, 'latin1'));
  parts.push(Buffer.from('\r\n'));
  return Buffer.concat(parts);
}
