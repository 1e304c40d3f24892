// One proxied request, client <-> origin, streamed both ways: the client's body goes to the origin as
// it arrives (counted, and cut past the hostname's body limit), the origin's answer goes to the client
// with backpressure. A client that leaves aborts the origin request; an origin that fails mid-body
// destroys the client's socket (a short read, never a truncated response that looks whole). Failures
// before the answer become the proxy's own pages: 502 (refused, unreachable, address policy, a broken
// answer), 504 (connect or headers timeout), 413 (body over the limit). A GET's answer is offered to
// the response cache first: one it stores is sent from the cache's fill (X-Cache: MISS).
// The exchange is undici's dispatch handler (OriginExchange), not request(): no response stream, promise
// or abort signal of undici's own per request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Logger } from 'pino';
import type { CacheStatus } from '../db/repos/request-records.js';
import type { HeaderMap } from './cacheability.js';
import type { ProxyRequest, ProxyResponseCache, StorableAnswer } from './response-cache.js';
import { CLIENT_GONE, relay } from '../http/send-body.js';
import { hasBody } from '../http/request-guard.js';
import { expectsContinue } from '../http/expect-continue.js';
import { endTogether, writeTogether } from '../http/end-together.js';
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

interface StorableOriginAnswer {
  request: ProxyRequest;
  /** The origin's headers as received (relayed as they are when the tiers do not take the answer). */
  raw: RawHeaders;
  headers: HeaderMap;
  decided: StorableAnswer;
}

/** What the response cache needs to store the origin's answer to a GET, or undefined when it may not. */
function storableAnswer(answers: ProxyResponseCache, req: IncomingMessage, status: number, raw: RawHeaders): StorableOriginAnswer | undefined {
  const request: ProxyRequest = { method: 'GET', url: req.url ?? '/', headers: req.headers };
  const headers = headerMap(raw);
  const decided = answers.storable(request, status, headers);
  return decided && { request, raw, headers, decided };
}

function isBodyTooLarge(err: unknown): boolean {
  if (err instanceof BodyTooLargeError) return true;
  const cause = err instanceof Error ? err.cause : undefined;
  return cause instanceof BodyTooLargeError;
}

/** Forwards `req` to the origin behind `opts.dispatcher` and streams its answer to `res`; never rejects. */
export function forward(req: IncomingMessage, res: ServerResponse, opts: ForwardRequest): Promise<ForwardResult> {
  return new Promise((resolve) => new OriginExchange(req, res, opts, resolve).start());
}

/**
 * Where an exchange is: waiting for the origin's headers, relaying its body to the client, handing it to
 * the response cache (store()), or over (its result given).
 */
type Phase = 'waiting' | 'relaying' | 'storing' | 'done';

/**
 * The origin's body as a stream, for the response cache: read() resumes the origin, push()'s answer
 * pauses it; destroyed before its end, it lets the origin request go.
 */
class OriginBody extends Readable {
  constructor(private readonly exchange: OriginExchange) {
    super();
  }

  override _read(): void {
    this.exchange.resumeOrigin();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.exchange.abortOrigin(err ?? new Error('origin body dropped'));
    cb(err);
  }
}

/**
 * One exchange as undici's dispatch handler: the origin's answer is written to the client as its parts
 * arrive (headers, each chunk with backpressure, the end), with no response stream, promise or abort
 * signal of undici's own in between (request() and its piped body stream: ~20-25 µs more CPU a proxied
 * request). The headers come raw: names as the origin wrote them, repeats (Set-Cookie) apart, in order.
 */
class OriginExchange implements Dispatcher.DispatchHandler {
  private phase: Phase = 'waiting';
  private clientGone = false;
  /** The origin request has ended (completed or failed): nothing to abort or resume. */
  private originEnded = false;
  /** undici's handle on the origin request: abort, pause, resume (from onRequestStart on). */
  private controller: Dispatcher.DispatchController | undefined;
  private meter: Meter | undefined;
  private status = 0;
  private bytesOut = 0;
  private body: OriginBody | undefined;
  /**
   * The answer's bytes of the turn they came in, written at its end with the other answers
   * (http/end-together.ts); later turns' bytes are written as they come.
   */
  private held: Buffer[] | undefined;
  /** The origin's answer ended while its bytes were held: their write ends the response. */
  private endsWithHeld = false;
  /** The held bytes were written: the rest streams with backpressure. */
  private streaming = false;
  private readonly writeHeld = (): void => this.flushHeld();
  private readonly onClose = (): void => this.clientClosed();
  private readonly onDrain = (): void => this.resumeOrigin();
  private readonly onFinish = (): void => this.finish({ status: this.status, outcome: 'ok', bytesOut: this.bytesOut, cacheStatus: null });

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly opts: ForwardRequest,
    private readonly resolve: (result: ForwardResult) => void,
  ) {}

  start(): void {
    const { req, res } = this;
    res.once('close', this.onClose);
    if (hasBody(req)) {
      const body = new Meter(this.opts.maxBodyBytes);
      this.meter = body;
      // Not pipeline(): a body cut for its size must leave the socket open for the 413.
      req.once('error', (err) => body.destroy(err));
      body.on('error', () => req.unpipe(body));
      // The client waits for this before it sends the body; the rules have let the request through.
      if (expectsContinue(req)) res.writeContinue();
      req.pipe(body);
      // An origin that answered before reading the whole body: the rest is read and dropped (node's own
      // behaviour for unread bodies), so the connection can carry the client's next request.
      res.once('finish', () => {
        if (!req.complete) {
          req.unpipe(body);
          req.resume();
        }
      });
    }
    // A request without a body goes to the origin with the turn's other requests and answers
    // (http/end-together.ts): an origin on the same host is woken once for them.
    if (this.meter) this.dispatch();
    else writeTogether(this.dispatchNow);
  }

  private readonly dispatchNow = (): void => this.dispatch();

  private dispatch(): void {
    const { req } = this;
    // The client left before the turn ended: nothing to ask the origin.
    if (this.clientGone) return this.finish({ status: CLIENT_CLOSED, outcome: 'client-gone', bytesOut: 0, cacheStatus: null });
    this.opts.dispatcher.dispatch({ path: req.url ?? '/', method: (req.method ?? 'GET') as Dispatcher.HttpMethod, headers: this.opts.headers, body: this.meter ?? null }, this);
  }

  resumeOrigin(): void {
    if (!this.originEnded) this.controller?.resume();
  }

  abortOrigin(err: Error): void {
    if (this.originEnded) return;
    // Before the origin request started, it is aborted as it starts (onRequestStart).
    this.controller?.abort(err);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientGone) controller.abort(new ClientGoneError());
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    // Interim answers (100 Continue, 103) stay between us and the origin.
    if (statusCode < 200) return;
    this.status = statusCode;
    // The headers as the origin wrote them (names' case, repeats, order): undici's parsed object has lost that.
    const raw = rawStrings(controller.rawHeaders as Buffer[]);
    const cache = this.opts.cache;
    // Decided in this tick: an answer that may not be stored (no-store, private, ...) is relayed at once,
    // without store()'s promise.
    const storing = cache && this.req.method === 'GET' ? storableAnswer(cache.answers, this.req, statusCode, raw) : undefined;
    if (cache && storing) {
      this.phase = 'storing';
      this.body = new OriginBody(this);
      void this.store(cache, storing, this.body);
      return;
    }
    try {
      this.res.writeHead(statusCode, responseHeadersFor(raw));
    } catch (err) {
      // A header node will not send (a value with control characters): the answer cannot be passed on.
      this.notForwardable(err);
      this.abortOrigin(err instanceof Error ? err : new Error('answer not forwardable'));
      return;
    }
    this.phase = 'relaying';
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.phase === 'storing') {
      // The stream's buffer is full: the origin waits until OriginBody is read (_read resumes it).
      if (!(this.body as OriginBody).push(chunk)) controller.pause();
      return;
    }
    if (this.phase !== 'relaying') return;
    this.bytesOut += chunk.length;
    if (!this.streaming) {
      if (this.held === undefined) {
        this.held = [chunk];
        writeTogether(this.writeHeld);
      } else this.held.push(chunk);
      return;
    }
    this.writeChunk(chunk);
  }

  /** Writes bytes of the answer; a full socket pauses the origin until it drains. */
  private writeChunk(bytes: Buffer): void {
    if (this.res.write(bytes)) return;
    this.controller?.pause();
    this.res.once('drain', this.onDrain);
  }

  /** The turn is over: its bytes go out (and end the answer, when the origin's has ended). */
  private flushHeld(): void {
    const held = this.held as Buffer[];
    this.held = undefined;
    this.streaming = true;
    // Failed or left meanwhile: the exchange was finished there.
    if (this.phase !== 'relaying' || this.res.destroyed) return;
    const bytes = held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held);
    if (this.endsWithHeld) {
      this.res.end(bytes);
      return;
    }
    this.writeChunk(bytes);
  }

  onResponseEnd(): void {
    this.originEnded = true;
    if (this.phase === 'storing') {
      (this.body as OriginBody).push(null);
      return;
    }
    if (this.phase !== 'relaying') return;
    this.res.once('finish', this.onFinish);
    if (this.held !== undefined) this.endsWithHeld = true;
    else if (this.streaming) this.res.end();
    // No body: the headers alone, with the turn's other answers.
    else endTogether(this.res);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.originEnded = true;
    if (this.phase === 'storing') {
      // store() decides what the client gets.
      (this.body as OriginBody).destroy(err);
      return;
    }
    if (this.phase === 'waiting') this.failedBeforeAnswer(err);
    else if (this.phase === 'relaying') this.failedMidBody(err);
  }

  private finish(result: Omit<ForwardResult, 'bytesIn'>): void {
    if (this.phase === 'done') return;
    this.phase = 'done';
    this.res.off('close', this.onClose);
    this.resolve({ ...result, bytesIn: this.meter?.bytes ?? 0 });
  }

  private clientClosed(): void {
    if (this.res.writableFinished) return;
    this.clientGone = true;
    if (!this.originEnded) this.abortOrigin(new ClientGoneError());
    // The origin is done: no failure will come to end the exchange.
    else if (this.phase === 'relaying') this.finish({ status: this.status, outcome: 'client-gone', bytesOut: this.bytesOut, cacheStatus: null });
  }

  /** The origin failed before its answer (or the request body was refused): the proxy's own page. */
  private failedBeforeAnswer(err: Error): void {
    const { req, res, opts, meter } = this;
    if (meter) {
      req.unpipe(meter);
      meter.destroy();
    }
    if (this.clientGone || req.socket.destroyed) return this.finish({ status: CLIENT_CLOSED, outcome: 'client-gone', bytesOut: 0, cacheStatus: null });
    if (isBodyTooLarge(err)) {
      // Like the rules' refusal of a declared length, only later: the rest of the body is not forwarded.
      const tooLarge = { kind: 'block', reason: 'body-too-large', status: 413 } as const;
      sendBlocked(req, res, tooLarge, [], opts.requestId);
      return this.finish({ status: 413, outcome: 'body-too-large', bytesOut: Buffer.byteLength(blockedAnswer(tooLarge, []).body), cacheStatus: null });
    }
    const status = failureStatus(err);
    opts.log.warn({ requestId: opts.requestId, cause: failureCause(err) }, `edge: origin failed before answering (${status})`);
    opts.log.debug({ requestId: opts.requestId, err }, 'edge: origin failure detail');
    sendGatewayFailure(req, res, status, opts.requestId);
    this.finish({ status, outcome: status === 504 ? 'gateway-timeout' : 'bad-gateway', bytesOut: 0, cacheStatus: null });
  }

  /** The answer's headers are out: nothing may look complete, so the client's connection goes. */
  private failedMidBody(err: unknown): void {
    this.res.destroy();
    const result = { status: this.status, bytesOut: this.bytesOut, cacheStatus: null };
    if (this.clientGone || err === CLIENT_GONE) return this.finish({ ...result, outcome: 'client-gone' });
    if (isBodyTooLarge(err)) return this.finish({ ...result, outcome: 'body-too-large' });
    this.opts.log.warn({ requestId: this.opts.requestId, cause: failureCause(err) }, 'edge: origin answer failed mid-body; client connection closed');
    this.finish({ ...result, outcome: 'origin-aborted' });
  }

  private notForwardable(err: unknown): void {
    this.opts.log.warn({ requestId: this.opts.requestId, cause: failureCause(err) }, 'edge: origin answer not forwardable (502)');
    sendGatewayFailure(this.req, this.res, 502, this.opts.requestId);
    this.finish({ status: 502, outcome: 'bad-gateway', bytesOut: 0, cacheStatus: null });
  }

  /** A storable answer: offered to the response cache, sent from its fill, else relayed as it is. */
  private async store(cache: NonNullable<ForwardRequest['cache']>, storing: StorableOriginAnswer, body: OriginBody): Promise<void> {
    const { res, opts } = this;
    try {
      const stored = await cache.answers.store(cache.hostname, storing.request, this.status, storing.headers, body, storing.decided);
      if (stored) {
        // The fill goes on for whoever joins it, whether or not this client stays.
        res.off('close', this.onClose);
        const bytesOut = await sendCached(res, stored, opts.log);
        return this.finish({ status: stored.status, outcome: 'ok', bytesOut, cacheStatus: stored.cacheStatus });
      }
    } catch (err) {
      // The origin's body failed before the cache had any of it: nothing was sent yet.
      body.destroy();
      if (this.clientGone) return this.finish({ status: CLIENT_CLOSED, outcome: 'client-gone', bytesOut: 0, cacheStatus: null });
      opts.log.warn({ requestId: opts.requestId, cause: failureCause(err) }, 'edge: origin answer failed before it was cached (502)');
      sendGatewayFailure(this.req, res, 502, opts.requestId);
      return this.finish({ status: 502, outcome: 'bad-gateway', bytesOut: 0, cacheStatus: null });
    }
    // Not taken by the tiers (too big): `body` untouched, relayed as it is.
    try {
      res.writeHead(this.status, responseHeadersFor(storing.raw));
    } catch (err) {
      body.destroy();
      return this.notForwardable(err);
    }
    const relayed = await relay(body, res);
    this.bytesOut = relayed.bytes;
    if (relayed.failure === undefined) return this.finish({ status: this.status, outcome: 'ok', bytesOut: relayed.bytes, cacheStatus: null });
    body.destroy();
    this.failedMidBody(relayed.failure);
  }
}
