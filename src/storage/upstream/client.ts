// Signed HTTP requests to the upstream S3 endpoint: one pooled undici Agent, SigV4, timeouts, and
// retries with backoff for idempotent requests only (a streamed body cannot be sent twice).
import { SignatureV4 } from '@smithy/signature-v4';
import { Agent, request, type Dispatcher } from 'undici';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Readable } from 'node:stream';
import type { UpstreamS3Config } from '../../config/schema.js';
import { awsUriEncode } from '../../auth/sigv4/canonical.js';
import { Sha256 } from './sha256.js';
import { upstreamRejected, upstreamUnavailable } from './errors.js';

/** Where and as whom (the `storage.s3` settings but the prefix), plus tuning that tests shorten. */
export interface UpstreamClientOptions extends Omit<UpstreamS3Config, 'prefix' | 'partBytes'> {
  /** Pooled connections to the upstream, at most. */
  connections?: number;
  connectTimeoutMs?: number;
  /** Waiting for response headers, and idle gaps inside a body. */
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /** Attempts for an idempotent request (1 = no retry). */
  attempts?: number;
  retryBaseMs?: number;
}

export interface UpstreamRequest {
  method: 'GET' | 'HEAD' | 'PUT' | 'POST' | 'DELETE';
  /** Object key, unencoded; '' addresses the bucket. */
  key: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  /** A function so a retried request gets a fresh body; a Readable may only be sent once. */
  body?: () => Buffer | string | Readable;
  /** Safe to send again: GET/HEAD/DELETE, or a PUT/POST of a buffered body. */
  idempotent: boolean;
  signal?: AbortSignal;
}

export type UpstreamResponse = Dispatcher.ResponseData;

const UNSIGNED = 'UNSIGNED-PAYLOAD';

/** Every status an upstream may answer transiently: worth a retry, then SlowDown. */
function transient(status: number): boolean {
  return status >= 500 || status === 429;
}

export class UpstreamClient {
  private readonly agent: Agent;
  private readonly signer: SignatureV4;
  private readonly base: URL;
  /** Fixed per client: the Host to sign and the path every key goes under. */
  private readonly target: { hostname: string; host: string; bucketPath: string };
  private readonly attempts: number;
  private readonly retryBaseMs: number;

  constructor(private readonly opts: UpstreamClientOptions) {
    this.base = new URL(opts.endpoint);
    const hostname = opts.forcePathStyle ? this.base.hostname : `${opts.bucket}.${this.base.hostname}`;
    const basePath = this.base.pathname.replace(/\/$/, '');
    this.target = {
      hostname,
      host: this.base.port ? `${hostname}:${this.base.port}` : hostname,
      bucketPath: opts.forcePathStyle ? `${basePath}/${opts.bucket}` : basePath,
    };
    this.agent = new Agent({
      connections: opts.connections ?? 32,
      keepAliveTimeout: 30_000,
      connectTimeout: opts.connectTimeoutMs ?? 5_000,
      headersTimeout: opts.headersTimeoutMs ?? 30_000,
      bodyTimeout: opts.bodyTimeoutMs ?? 30_000,
    });
    this.signer = new SignatureV4({
      credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey },
      region: opts.region,
      service: 's3',
      sha256: Sha256,
      // S3 signs the path as sent (already encoded once), unlike other AWS services.
      uriEscapePath: false,
      applyChecksum: false,
    });
    this.attempts = opts.attempts ?? 3;
    this.retryBaseMs = opts.retryBaseMs ?? 100;
  }

  /**
   * Sends the request; resolves with any non-transient response (the caller reads or dumps the body).
   * Transport failures and 5xx (after retries, when idempotent) reject with SlowDown.
   */
  private failures = 0;

  async send(req: UpstreamRequest): Promise<UpstreamResponse> {
    const tries = req.idempotent ? this.attempts : 1;
    let last: unknown;
    for (let i = 0; i < tries; i++) {
      if (i > 0) await sleep(this.retryBaseMs * 2 ** (i - 1) * (0.5 + Math.random()), undefined, { signal: req.signal });
      req.signal?.throwIfAborted();
      try {
        const res = await this.once(req);
        if (!transient(res.statusCode)) return res;
        await res.body.dump().catch(() => undefined);
        last = new Error(`upstream answered ${res.statusCode}`);
      } catch (err) {
        if (req.signal?.aborted) throw err;
        last = err;
      }
    }
    this.failures++;
    throw upstreamUnavailable(last);
  }

  /** Requests that failed for good (transport errors or 5xx, after any retries): s3edge_upstream_failures_total. */
  get failureCount(): number {
    return this.failures;
  }

  /** Sends and expects one of `ok`; anything else (body dumped) becomes an S3 error. */
  async expect(req: UpstreamRequest, ok: number[]): Promise<UpstreamResponse> {
    const res = await this.send(req);
    if (ok.includes(res.statusCode)) return res;
    await res.body.dump().catch(() => undefined);
    throw upstreamRejected(res.statusCode, req.method);
  }

  private async once(req: UpstreamRequest): Promise<UpstreamResponse> {
    const { hostname, host, bucketPath } = this.target;
    const path = `${bucketPath}/${awsUriEncode(req.key, false)}`;
    const query = req.query ?? {};
    const signed = await this.signer.sign({
      method: req.method,
      protocol: this.base.protocol,
      hostname,
      port: this.base.port ? Number(this.base.port) : undefined,
      path,
      query,
      headers: { ...req.headers, host, 'x-amz-content-sha256': UNSIGNED },
    });
    const qs = Object.entries(query)
      .map(([k, v]) => (v === '' ? awsUriEncode(k) : `${awsUriEncode(k)}=${awsUriEncode(v)}`))
      .join('&');
    const url = `${this.base.protocol}//${host}${path}${qs ? `?${qs}` : ''}`;
    return request(url, {
      dispatcher: this.agent,
      method: req.method,
      headers: signed.headers,
      body: req.body?.(),
      signal: req.signal,
    });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
