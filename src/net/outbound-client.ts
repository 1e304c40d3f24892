// The one HTTP client for requests made on behalf of users (RDAP servers, webhook deliveries):
// every connection passes the address policy after DNS (guarded-connector.ts), every request has a
// total deadline, answers are read into memory up to a cap and refused beyond it, and redirects are
// followed only when asked, at most a few, each hop dialled through the same checks.
import type { lookup as dnsLookup } from 'node:dns';
import type { Agent, Dispatcher } from 'undici';
import type { AddressPolicy } from './address-policy.js';
import { guardedConnector } from './guarded-connector.js';
import { undici } from './undici-lazy.js';

export type OutboundFailure = 'timeout' | 'aborted' | 'too-large' | 'address-refused' | 'network' | 'bad-url' | 'redirect';

/** Every way a request can fail; an answer with any HTTP status is not a failure. */
export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'OutboundError';
  }
}

export interface OutboundClientOptions extends AddressPolicy {
  /** Deadline of a whole request (connect, headers, body, redirects); per request overridable. */
  timeoutMs: number;
  /** Largest answer body read; per request overridable. */
  maxAnswerBytes: number;
  /** Default min(timeoutMs, 5000). */
  connectTimeoutMs?: number;
  /** Redirects followed; default 0 (a 3xx is returned as it is). */
  maxRedirects?: number;
  /** Pooled connections per origin. */
  connections?: number;
  userAgent?: string;
  /** Name resolution; tests may map names to loopback. */
  lookup?: typeof dnsLookup;
}

export interface OutboundRequest {
  headers?: Record<string, string>;
  /** The caller's own deadline or cancellation (kind `aborted`). */
  signal?: AbortSignal;
  timeoutMs?: number;
  maxAnswerBytes?: number;
  maxRedirects?: number;
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function target(raw: string, from?: URL): URL {
  let url: URL;
  try {
    url = from ? new URL(raw, from) : new URL(raw);
  } catch {
    throw new OutboundError(from ? 'redirect' : 'bad-url', `not a URL: ${raw.slice(0, 200)}`);
  }
  const kind = from ? 'redirect' : 'bad-url';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundError(kind, `scheme not allowed: ${url.protocol}`);
  if (url.username || url.password) throw new OutboundError(kind, 'credentials in URL');
  if (from?.protocol === 'https:' && url.protocol === 'http:') throw new OutboundError('redirect', 'redirect from https to http');
  return url;
}

type Body = Dispatcher.ResponseData['body'];

/** Drops an unread body and its connection; the abort it causes is expected, not an uncaught error. */
function discard(body: Body): void {
  body.on('error', () => undefined);
  body.destroy();
}

async function readCapped(body: Body, max: number, declared: string | undefined): Promise<Buffer> {
  if (declared !== undefined && Number(declared) > max) {
    discard(body);
    throw new OutboundError('too-large', `answer of ${declared} bytes exceeds ${max}`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > max) {
      discard(body);
      throw new OutboundError('too-large', `answer exceeds ${max} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

const TIMED_OUT = new Error('outbound request timed out');

export class OutboundClient {
  /** Made by the first request: a server that never calls out (no webhook, no RDAP) never loads undici. */
  private pool: Agent | undefined;

  constructor(private readonly opts: OutboundClientOptions) {}

  private get agent(): Agent {
    if (this.pool === undefined) {
      const opts = this.opts;
      const connectTimeoutMs = opts.connectTimeoutMs ?? Math.min(opts.timeoutMs, 5000);
      this.pool = new (undici().Agent)({
        connections: opts.connections ?? 8,
        keepAliveTimeout: 10_000,
        connect: guardedConnector({ allowPrivateAddresses: opts.allowPrivateAddresses, connectTimeoutMs, lookup: opts.lookup }),
      });
    }
    return this.pool;
  }

  get(url: string, req: OutboundRequest = {}): Promise<OutboundResponse> {
    return this.send('GET', url, undefined, req);
  }

  /** A POST of `body` (webhook deliveries); redirects are never followed for it. */
  post(url: string, body: string | Buffer, req: OutboundRequest = {}): Promise<OutboundResponse> {
    return this.send('POST', url, body, { ...req, maxRedirects: 0 });
  }

  private async send(method: 'GET' | 'POST', url: string, payload: string | Buffer | undefined, req: OutboundRequest): Promise<OutboundResponse> {
    const timeoutMs = req.timeoutMs ?? this.opts.timeoutMs;
    const max = req.maxAnswerBytes ?? this.opts.maxAnswerBytes;
    const maxRedirects = req.maxRedirects ?? this.opts.maxRedirects ?? 0;
    let current = target(url);
    if (req.signal?.aborted) throw new OutboundError('aborted', 'aborted before it started');
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(TIMED_OUT), timeoutMs);
    const onAbort = (): void => ac.abort(req.signal?.reason);
    req.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (let hop = 0; ; hop++) {
        const res = await undici().request(current, {
          dispatcher: this.agent,
          method,
          headers: { 'user-agent': this.opts.userAgent ?? 's3edge', ...req.headers },
          ...(payload !== undefined ? { body: payload } : {}),
          signal: ac.signal,
          // undici's own timers as a backstop; the deadline above is the one that counts.
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        const location = res.headers.location;
        if (REDIRECTS.has(res.statusCode) && typeof location === 'string' && hop < maxRedirects) {
          await res.body.dump();
          current = target(location, current);
          continue;
        }
        const length = res.headers['content-length'];
        const body = await readCapped(res.body, max, typeof length === 'string' ? length : undefined);
        return { status: res.statusCode, headers: res.headers, body, url: current.href };
      }
    } catch (err) {
      throw this.failure(err, ac.signal);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Closes pooled connections; requests in flight finish first. */
  close(): Promise<void> {
    return this.pool?.close() ?? Promise.resolve();
  }

  private failure(err: unknown, signal: AbortSignal): OutboundError {
    if (err instanceof OutboundError) return err;
    if (signal.aborted) {
      return signal.reason === TIMED_OUT
        ? new OutboundError('timeout', 'deadline passed', { cause: err })
        : new OutboundError('aborted', 'aborted by the caller', { cause: err });
    }
    const code = errorCode(err);
    const message = err instanceof Error ? err.message : String(err);
    if (code === 'ERR_ADDRESS_REFUSED') return new OutboundError('address-refused', message, { cause: err });
    if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
      return new OutboundError('timeout', message, { cause: err });
    }
    return new OutboundError('network', message, { cause: err });
  }
}
