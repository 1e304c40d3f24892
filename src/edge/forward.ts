// One proxied request, client <-> origin, streamed both ways: the client's body goes to the origin as
// it arrives (counted, and cut past the hostname's body limit), the origin's answer goes to the client
// with backpressure. A client that leaves aborts the origin request; an origin that fails mid-body
// destroys the client's socket (a short read, never a truncated response that looks whole). Failures
// before the answer become the proxy's own pages: 502 (refused, unreachable, address policy, a broken
// answer), 504 (connect or headers timeout), 413 (body over the limit). A GET's answer is offered to
// the response cache first: one it stores is sent from the cache's fill (X-Cache: MISS).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventEmitter } from 'node:events';
import { Transform, type TransformCallback } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Logger } from 'pino';
import type { CacheStatus } from '../analytics/request-log.js';
import type { HeaderMap } from './cacheability.js';
import type { ProxyRequest, ProxyResponseCache, StorableAnswer } from './response-cache.js';
import { CLIENT_GONE, relay } from '../http/send-body.js';
import { hasBody } from '../http/request-guard.js';
import { expectsContinue } from '../http/expect-continue.js';
import { sendCached } from './send-cached.js';
import { rawStrings, responseHeadersFor, type RawHeaders } from './forward-headers.js';
import { blockedAnswer, sendBlocked, sendGatewayFailure, type GatewayFailure } from './answers.js';

/** A request body went past the hostname's limit while it streamed. */
class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body over ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/** The client went away before the exchange ended. */
class ClientGoneError extends Error {
  constructor() {
    super('client closed the connection');
    this.name = 'ClientGoneError';
  }
}

/** Counts what passes; past `limit` bytes, fails with BodyTooLargeError instead of passing more. */
class Meter extends Transform {
  bytes = 0;

  constructor(private readonly limit: number | null) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.limit !== null && this.bytes > this.limit) cb(new BodyTooLargeError(this.limit));
    else cb(null, chunk);
  }
}

/** How an exchange ended, for the request log and the anomaly monitor. */
export type ForwardOutcome =
  | 'ok'
  /** The origin could not be reached or answered something that is not HTTP: 502. */
  | 'bad-gateway'
  /** Connect or response headers timed out: 504. */
  | 'gateway-timeout'
  | 'body-too-large'
  /** The client left first. */
  | 'client-gone'
  /** The origin's body failed after the headers were sent: the client's socket was destroyed. */
  | 'origin-aborted';

export interface ForwardResult {
  /** The status sent, or 499 when the client left before any. */
  status: number;
  outcome: ForwardOutcome;
  bytesIn: number;
  bytesOut: number;
  /** Set when the answer went through the response cache (stored: MISS or EXPIRED). */
  cacheStatus: CacheStatus | null;
}

export interface ForwardRequest {
  /** The origin's pool (origin-pools.ts). */
  dispatcher: Dispatcher;
  /** The request headers for the origin (forward-headers.ts requestHeadersFor). */
  headers: RawHeaders;
  maxBodyBytes: number | null;
  requestId: string;
  log: Pick<Logger, 'warn' | 'debug'>;
  /** The response cache and the hostname its answers are kept under. */
  cache?: { answers: ProxyResponseCache; hostname: string };
}

/** The status a client sees when it left before any: nginx's "client closed request", only ever logged. */
export const CLIENT_CLOSED = 499;

function codeOf(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** The page for an origin failure before its answer: timeouts 504, everything else 502. */
export function failureStatus(err: unknown): GatewayFailure {
  const code = codeOf(err);
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' ? 504 : 502;
}

/** What the log says about an origin failure: a code, never a message that could carry more. */
export function failureCause(err: unknown): string {
  return codeOf(err) ?? (err instanceof Error ? err.name : 'unknown');
}

/** A raw header list as a map of lower-case names (repeats as arrays), as the cache rules read headers. */
function headerMap(raw: readonly string[]): HeaderMap {
  const map: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const value = raw[i + 1] as string;
    const had = map[name];
    map[name] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  return map;
}

/** What the response cache needs to store the origin's answer to a GET, or undefined when it may not. */
function storableAnswer(answers: ProxyResponseCache, req: IncomingMessage, status: number, raw: readonly string[]): { request: ProxyRequest; headers: HeaderMap; decided: StorableAnswer } | undefined {
  const request: ProxyRequest = { method: 'GET', url: req.url ?? '/', headers: req.headers };
  const headers = headerMap(raw);
  const decided = answers.storable(request, status, headers);
  return decided && { request, headers, decided };
}

function isBodyTooLarge(err: unknown): boolean {
  if (err instanceof BodyTooLargeError) return true;
  const cause = err instanceof Error ? err.cause : undefined;
  return cause instanceof BodyTooLargeError;
}

/** Forwards `req` to the origin behind `opts.dispatcher` and streams its answer to `res`; never rejects. */
export async function forward(req: IncomingMessage, res: ServerResponse, opts: ForwardRequest): Promise<ForwardResult> {
  // undici takes an EventEmitter as the signal: its 'abort' costs nothing until emitted, where an
  // AbortController per request showed in profiles.
  const abort = new EventEmitter();
  let clientGone = false;
  const onClose = (): void => {
    if (res.writableFinished) return;
    clientGone = true;
    abort.emit('abort', new ClientGoneError());
  };
  res.once('close', onClose);

  let meter: Meter | undefined;
  if (hasBody(req)) {
    meter = new Meter(opts.maxBodyBytes);
    const body = meter;
    // Not pipeline(): a body cut for its size must leave the socket open for the 413.
    req.once('error', (err) => body.destroy(err));
    body.on('error', () => req.unpipe(body));
    // The client waits for this before it sends the body; the rules have let the request through.
    if (expectsContinue(req)) res.writeContinue();
    req.pipe(body);
  }
  const bytesIn = (): number => meter?.bytes ?? 0;
  // An origin that answered before reading the whole body: the rest is read and dropped (node's own
  // behaviour for unread bodies), so the connection can carry the client's next request.
  if (meter) {
    const body = meter;
    res.once('finish', () => {
      if (!req.complete) {
        req.unpipe(body);
        req.resume();
      }
    });
  }

  let answer: Dispatcher.ResponseData;
  try {
    answer = await opts.dispatcher.request({
      path: req.url ?? '/',
      method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: opts.headers,
      body: meter ?? null,
      signal: abort,
      // Raw: names as the origin wrote them, repeated headers (Set-Cookie) kept apart, in order.
      responseHeaders: 'raw',
    });
  } catch (err) {
    if (meter) {
      req.unpipe(meter);
      meter.destroy();
    }
    if (clientGone || req.socket.destroyed) return { status: CLIENT_CLOSED, outcome: 'client-gone', bytesIn: bytesIn(), bytesOut: 0, cacheStatus: null };
    if (isBodyTooLarge(err)) {
      // Like the rules' refusal of a declared length, only later: the rest of the body is not forwarded.
      const tooLarge = { kind: 'block', reason: 'body-too-large', status: 413 } as const;
      sendBlocked(req, res, tooLarge, [], opts.requestId);
      return { status: 413, outcome: 'body-too-large', bytesIn: bytesIn(), bytesOut: Buffer.byteLength(blockedAnswer(tooLarge, []).body), cacheStatus: null };
    }
    const status = failureStatus(err);
    opts.log.warn({ requestId: opts.requestId, cause: failureCause(err) }, `edge: origin failed before answering (${status})`);
    opts.log.debug({ requestId: opts.requestId, err }, 'edge: origin failure detail');
    sendGatewayFailure(req, res, status, opts.requestId);
    return { status, outcome: status === 504 ? 'gateway-timeout' : 'bad-gateway', bytesIn: bytesIn(), bytesOut: 0, cacheStatus: null };
  }

  // undici gives strings for responseHeaders 'raw' (its types say otherwise).
  const received = answer.headers as unknown;
  const raw = Array.isArray(received) ? rawStrings(received as (Buffer | string)[]) : [];
  // Decided in this tick: an answer that may not be stored (no-store, private, ...) is piped at once,
  // without store()'s promise.
  const storing = opts.cache && req.method === 'GET' ? storableAnswer(opts.cache.answers, req, answer.statusCode, raw) : undefined;
  if (opts.cache && storing) {
    try {
      const stored = await opts.cache.answers.store(opts.cache.hostname, storing.request, answer.statusCode, storing.headers, answer.body, storing.decided);
      if (stored) {
        res.off('close', onClose);
        const bytesOut = await sendCached(res, stored, opts.log);
        return { status: stored.status, outcome: 'ok', bytesIn: bytesIn(), bytesOut, cacheStatus: stored.cacheStatus };
      }
    } catch (err) {
      // The origin's body failed before the cache had any of it: nothing was sent yet.
      answer.body.destroy();
      res.off('close', onClose);
      if (clientGone) return { status: CLIENT_CLOSED, outcome: 'client-gone', bytesIn: bytesIn(), bytesOut: 0, cacheStatus: null };
      opts.log.warn({ requestId: opts.requestId, cause: failureCause(err) }, 'edge: origin answer failed before it was cached (502)');
      sendGatewayFailure(req, res, 502, opts.requestId);
      return { status: 502, outcome: 'bad-gateway', bytesIn: bytesIn(), bytesOut: 0, cacheStatus: null };
    }
  }
  try {
    res.writeHead(answer.statusCode, responseHeadersFor(raw));
  } catch (err) {
    // A header node will not send (a value with control characters): the answer cannot be passed on.
    answer.body.destroy();
    res.off('close', onClose);
    opts.log.warn({ requestId: opts.requestId, cause: failureCause(err) }, 'edge: origin answer not forwardable (502)');
    sendGatewayFailure(req, res, 502, opts.requestId);
    return { status: 502, outcome: 'bad-gateway', bytesIn: bytesIn(), bytesOut: 0, cacheStatus: null };
  }
  const relayed = await relay(answer.body, res);
  res.off('close', onClose);
  const result = { status: answer.statusCode, bytesIn: bytesIn(), bytesOut: relayed.bytes, cacheStatus: null };
  if (relayed.failure === undefined) return { ...result, outcome: 'ok' };
  // Nothing may look complete: the client's connection and the origin's body both go.
  answer.body.destroy();
  res.destroy();
  if (clientGone || relayed.failure === CLIENT_GONE) return { ...result, outcome: 'client-gone' };
  if (isBodyTooLarge(relayed.failure)) return { ...result, outcome: 'body-too-large' };
  opts.log.warn({ requestId: opts.requestId, cause: failureCause(relayed.failure) }, 'edge: origin answer failed mid-body; client connection closed');
  return { ...result, outcome: 'origin-aborted' };
}
