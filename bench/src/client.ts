// The load generator's HTTP client: one undici Pool per target (keep-alive, up to N connections),
// requests sent with Pool.dispatch and a bare handler, so a response body is counted chunk by chunk
// and never becomes a stream or a buffer unless asked for (LIST pages, error bodies).
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { SigV4Signer, type Credentials } from './sigv4.js';

export interface Reply {
  status: number;
  /** Response body bytes received. */
  bytes: number;
  /** The body, when `keepBody` was set, or the first KiB of an error body. */
  body?: Buffer;
}

export interface SendOptions {
  /** Escaped path, e.g. /bucket/key. */
  path: string;
  /** Canonical query string without '?', '' for none. */
  query?: string;
  body?: Buffer | Readable;
  /** x-amz-content-sha256: a precomputed hex digest or UNSIGNED-PAYLOAD. */
  payloadHash: string;
  /** Needed for a stream body. */
  contentLength?: number;
  keepBody?: boolean;
}

export class S3HttpClient {
  readonly pool: Pool;
  private readonly signer: SigV4Signer;
  private readonly host: string;

  constructor(url: string, credentials: Credentials, connections: number) {
    const u = new URL(url);
    this.host = u.host;
    this.signer = new SigV4Signer(credentials);
    this.pool = new Pool(u.origin, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 120_000,
      keepAliveMaxTimeout: 600_000,
      headersTimeout: 600_000,
      bodyTimeout: 600_000,
    });
  }

  send(method: Dispatcher.HttpMethod, opts: SendOptions): Promise<Reply> {
    const query = opts.query ?? '';
    const headers: Record<string, string> = this.signer.sign(method, this.host, opts.path, query, opts.payloadHash);
    if (opts.contentLength !== undefined) headers['content-length'] = String(opts.contentLength);
    return this.request(method, query ? `${opts.path}?${query}` : opts.path, headers, opts.body ?? null, opts.keepBody === true);
  }

  /**
   * An unsigned GET, as a browser sends it to a CDN; `host` is the Host header (e.g. cdn.localhost:9080).
   * `headers`: more request headers (the --proxy mode's X-Forwarded-For).
   */
  get(path: string, host: string, headers?: Record<string, string>): Promise<Reply> {
    return this.request('GET', path, headers ? { ...headers, host } : { host }, null, false);
  }

  private request(method: Dispatcher.HttpMethod, path: string, headers: Record<string, string>, body: Buffer | Readable | null, keep: boolean): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      let status = 0;
      let bytes = 0;
      let chunks: Buffer[] | undefined;
      let kept = 0;
      const handler: Dispatcher.DispatchHandler = {
        // Its presence tells undici this handler speaks the controller API.
        onRequestStart() {},
        onResponseStart(_controller, statusCode) {
          status = statusCode;
          if (keep || statusCode >= 300) chunks = [];
        },
        onResponseData(_controller, chunk) {
          bytes += chunk.length;
          if (chunks && (keep || kept < 1024)) {
            chunks.push(chunk);
            kept += chunk.length;
          }
        },
        onResponseEnd() {
          resolve({ status, bytes, body: chunks ? Buffer.concat(chunks) : undefined });
        },
        onResponseError(_controller, err) {
          reject(err);
        },
      };
      this.pool.dispatch(
        {
          path,
          method,
          headers,
          body,
          // undici closes the connection after every HEAD unless told otherwise; SDKs keep it.
          reset: false,
        },
        handler,
      );
    });
  }

  connected(): number {
    return this.pool.stats.connected;
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}

/** How many times `needle` occurs in `hay` (counting <Key> elements of a LIST page). */
export function countOccurrences(hay: Buffer, needle: string): number {
  const n = Buffer.from(needle);
  let count = 0;
  let at = hay.indexOf(n, 0);
  while (at >= 0) {
    count++;
    at = hay.indexOf(n, at + n.length);
  }
  return count;
}
