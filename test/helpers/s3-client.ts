// Signed raw S3 requests over a real socket (raw-http.ts + signer.ts). Every response is logged so a
// test file can assert at its end that nothing it sent ever produced a 5xx.
import { randomBytes } from 'node:crypto';
import { rawRequest, type Endpoint, type HeaderList, type RawResponse } from './raw-http.js';
import {
  encodeKeyPath,
  encodeSignedChunks,
  encodeUnsignedTrailerChunks,
  presign,
  sha256Hex,
  signHeaders,
  signedChunksLength,
  STREAMING_SIGNED,
  STREAMING_SIGNED_TRAILER,
  STREAMING_UNSIGNED_TRAILER,
  type Credentials,
  type SignedChunksOptions,
  type SignedRequest,
} from './signer.js';
import { parseListObjectsV2, parseS3Error, type ListV2Result } from './xml.js';

export interface LoggedResponse {
  method: string;
  target: string;
  status: number;
  code: string | undefined;
}

export interface SendOptions {
  method: string;
  bucket?: string;
  key?: string;
  /** Escaped path to sign and send instead of /bucket/key. */
  path?: string;
  /** Escaped path to put on the wire when it must differ from the signed path. */
  wirePath?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Buffer;
  /** x-amz-content-sha256; default: the SHA-256 of `body`. */
  payloadHash?: string;
  signingDate?: Date;
  credentials?: Credentials;
  region?: string;
  httpChunkSize?: number;
}

export function randomData(size: number): Buffer {
  return randomBytes(size);
}

export function objectPath(bucket: string, key?: string): string {
  return key === undefined ? `/${bucket}` : `/${bucket}/${encodeKeyPath(key)}`;
}

export class RawS3 {
  constructor(
    readonly endpoint: Endpoint,
    readonly credentials: Credentials,
    readonly log: LoggedResponse[] = [],
  ) {}

  get host(): string {
    return new URL(this.endpoint.url).host;
  }

  /** The same endpoint and response log, other credentials. */
  as(credentials: Credentials): RawS3 {
    return new RawS3(this.endpoint, credentials, this.log);
  }

  /** Send exactly these bytes (no signing); the response is logged. */
  async raw(method: string, target: string, headers: HeaderList, body?: Buffer, httpChunkSize?: number, writeSliceSize?: number): Promise<RawResponse> {
    const res = await rawRequest(this.endpoint, { method, target, headers, body, httpChunkSize, writeSliceSize });
    this.log.push({ method, target: target.slice(0, 300), status: res.status, code: parseS3Error(res.text).code });
    return res;
  }

  async sign(opts: SendOptions & { payloadHash: string }): Promise<SignedRequest> {
    return signHeaders({
      host: this.host,
      method: opts.method,
      path: opts.path ?? objectPath(opts.bucket ?? '', opts.key),
      wirePath: opts.wirePath,
      query: opts.query,
      headers: opts.headers,
      payloadHash: opts.payloadHash,
      credentials: opts.credentials ?? this.credentials,
      signingDate: opts.signingDate,
      region: opts.region,
    });
  }

  async send(opts: SendOptions): Promise<RawResponse> {
    const body = opts.body;
    const signed = await this.sign({ ...opts, payloadHash: opts.payloadHash ?? sha256Hex(body ?? Buffer.alloc(0)) });
    const headers = [...signed.headers];
    if (body !== undefined && opts.httpChunkSize === undefined && !headers.some(([k]) => k.toLowerCase() === 'content-length')) {
      headers.push(['content-length', String(body.length)]);
    }
    return this.raw(opts.method, signed.target, headers, body, opts.httpChunkSize);
  }

  async presignedTarget(opts: { method: string; bucket: string; key: string; expiresIn: number; signingDate?: Date; credentials?: Credentials }): Promise<{ target: string; headers: HeaderList }> {
    return presign({
      host: this.host,
      method: opts.method,
      path: objectPath(opts.bucket, opts.key),
      expiresIn: opts.expiresIn,
      signingDate: opts.signingDate,
      credentials: opts.credentials ?? this.credentials,
    });
  }

  createBucket(bucket: string): Promise<RawResponse> {
    return this.send({ method: 'PUT', bucket, body: Buffer.alloc(0) });
  }

  putObject(bucket: string, key: string, body: Buffer, headers?: Record<string, string>): Promise<RawResponse> {
    return this.send({ method: 'PUT', bucket, key, body, headers });
  }

  getObject(bucket: string, key: string, headers?: Record<string, string>): Promise<RawResponse> {
    return this.send({ method: 'GET', bucket, key, headers });
  }

  headObject(bucket: string, key: string, headers?: Record<string, string>): Promise<RawResponse> {
    return this.send({ method: 'HEAD', bucket, key, headers });
  }

  deleteObject(bucket: string, key: string): Promise<RawResponse> {
    return this.send({ method: 'DELETE', bucket, key });
  }

  async listObjectsV2(bucket: string, params: Record<string, string> = {}): Promise<{ res: RawResponse; list: ListV2Result }> {
    const res = await this.send({ method: 'GET', bucket, query: { 'list-type': '2', ...params } });
    return { res, list: parseListObjectsV2(res.text) };
  }

  /** Every key of a bucket (following continuation tokens). */
  async listAllKeys(bucket: string, params: Record<string, string> = {}): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < 100; page++) {
      const { res, list } = await this.listObjectsV2(bucket, token ? { ...params, 'continuation-token': token } : params);
      if (res.status !== 200) throw new Error(`ListObjectsV2 ${bucket}: ${res.status} ${res.text}`);
      keys.push(...list.keys);
      if (!list.isTruncated || !list.nextContinuationToken) return keys;
      token = list.nextContinuationToken;
    }
    throw new Error('ListObjectsV2 did not finish in 100 pages');
  }

  /**
   * PUT with STREAMING-AWS4-HMAC-SHA256-PAYLOAD, or the -TRAILER variant when trailers are given.
   * `httpChunkSize` sends it with Transfer-Encoding: chunked and no Content-Length.
   */
  async putSignedChunks(
    bucket: string,
    key: string,
    data: Buffer,
    opts: SignedChunksOptions & { httpChunkSize?: number; headers?: Record<string, string>; omitContentEncoding?: boolean; writeSliceSize?: number },
  ): Promise<RawResponse> {
    const trailer = opts.trailers !== undefined && opts.trailers.length > 0;
    // Caller headers come last so a test can make any of these lie.
    const headers: Record<string, string> = { 'x-amz-decoded-content-length': String(data.length) };
    if (!opts.omitContentEncoding) headers['content-encoding'] = 'aws-chunked';
    if (opts.httpChunkSize === undefined) headers['content-length'] = String(signedChunksLength(data, opts));
    if (trailer) headers['x-amz-trailer'] = (opts.trailers ?? []).map(([k]) => k).join(',');
    Object.assign(headers, opts.headers ?? {});
    const signed = await this.sign({
      method: 'PUT',
      bucket,
      key,
      headers,
      payloadHash: trailer ? STREAMING_SIGNED_TRAILER : STREAMING_SIGNED,
    });
    const body = encodeSignedChunks(
      data,
      { signingKey: signed.signingKey, longDate: signed.longDate, scope: signed.scope, seedSignature: signed.signature },
      opts,
    );
    return this.raw('PUT', signed.target, signed.headers, body, opts.httpChunkSize, opts.writeSliceSize);
  }

  /** PUT with STREAMING-UNSIGNED-PAYLOAD-TRAILER (what SDKs send over TLS with a checksum trailer). */
  async putUnsignedTrailer(
    bucket: string,
    key: string,
    data: Buffer,
    opts: { chunkSize: number; trailers: HeaderList; httpChunkSize?: number; headers?: Record<string, string>; writeSliceSize?: number },
  ): Promise<RawResponse> {
    const body = encodeUnsignedTrailerChunks(data, opts.chunkSize, opts.trailers);
    const headers: Record<string, string> = {
      'content-encoding': 'aws-chunked',
      'x-amz-decoded-content-length': String(data.length),
      'x-amz-trailer': opts.trailers.map(([k]) => k).join(','),
    };
    if (opts.httpChunkSize === undefined) headers['content-length'] = String(body.length);
    Object.assign(headers, opts.headers ?? {}); // last, so a test can make any of these lie
    const signed = await this.sign({ method: 'PUT', bucket, key, headers, payloadHash: STREAMING_UNSIGNED_TRAILER });
    return this.raw('PUT', signed.target, signed.headers, body, opts.httpChunkSize, opts.writeSliceSize);
  }
}

export function errorCode(res: RawResponse): string | undefined {
  return parseS3Error(res.text).code;
}
