// Answering for one version of an asset or object once it is known what may be served: conditionals
// (304 / 412) and one range (206 / 416) decided from the representation, HEAD and 304 from the
// metadata alone, else the bytes from the edge cache, with `X-Cache: HIT | MISS | EXPIRED | BYPASS`
// and Age. The CDN handler (handler.ts) and a project hostname's bucket site (src/edge/bucket-site.ts)
// both answer this way; the plain-text refusals are shared too.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decideRequest, isBlobGone } from '../assets/delivery.js';
import { SAFETY_HEADERS } from '../assets/content-safety.js';
import type { CacheStatus } from '../db/repos/request-records.js';
import type { AppContext } from '../context.js';
import { sendBody } from '../http/send-body.js';
import { negotiateCoding, type Coding } from './cache/compression.js';
import type { CacheResult } from './cdn-cache.js';
import { contentHeaders, validatorHeaders, variesByEncoding, wholeBodyHeaders, type HeaderList } from './representation.js';
import type { Served } from './resolve.js';
import { endTogether } from '../http/end-together.js';

/** The response header naming where the bytes came from. */
const CACHE_STATUS_HEADER = 'x-cache';

/** A short text answer, never cached (404, 403, 405, 412, 416, 5xx). */
export function plain(res: ServerResponse, req: IncomingMessage, status: number, text: string, extra: Record<string, string> = {}): void {
  const body = `${text}\n`;
  const headers: HeaderList = ['content-type', 'text/plain; charset=utf-8', 'content-length', String(Buffer.byteLength(body)), 'cache-control', 'no-store'];
  for (const name in SAFETY_HEADERS) headers.push(name, SAFETY_HEADERS[name as keyof typeof SAFETY_HEADERS]);
  for (const name in extra) headers.push(name, extra[name] as string);
  res.writeHead(status, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The CDN's one answer to anything it does not serve: no detail. */
export const notFound = (req: IncomingMessage, res: ServerResponse): void => plain(res, req, 404, 'Not Found');

/** What the request log learns as the answer goes out. */
export interface SendFacts {
  cacheStatus: CacheStatus | null;
  bytesSent: number;
}

export interface SendOptions {
  /**
   * Send the version with this status whatever the request's conditionals and Range say (an error
   * document's 404): those apply to a successful answer only (RFC 9110 §13.2.1, §14.2).
   */
  status?: number;
}

/** 'body': the version's bytes were sent; 'answered': something else (HEAD, 304, 412, 416); 'retry': the bytes vanished before anything was sent. */
export type SendResult = 'body' | 'answered' | 'retry';

export type VersionSender = (req: IncomingMessage, res: ServerResponse, version: Pick<Served, 'rep' | 'cache'>, facts: SendFacts, opts?: SendOptions) => Promise<SendResult>;

function pushLengthHeaders(out: HeaderList, size: number, range: { start: number; end: number } | undefined): HeaderList {
  if (!range) out.push('content-length', String(size));
  else out.push('content-length', String(range.end - range.start + 1), 'content-range', `bytes ${range.start}-${range.end}/${size}`);
  return out;
}

/** The Age header's value for an entry cached at `cachedAt` (Unix ms). */
function ageFrom(ctx: AppContext): (cachedAt: number) => string {
  return (cachedAt) => String(Math.max(0, Math.floor((ctx.clock().getTime() - cachedAt) / 1000)));
}

/** The whole identity body of a version the memory tier holds, with its headers; counted as a hit. */
function memoryAnswer(ctx: AppContext, ageOf: (cachedAt: number) => string, { rep, cache }: Pick<Served, 'rep' | 'cache'>, facts: SendFacts): { headers: HeaderList; body: Buffer } | undefined {
  const hit = ctx.cdnCache.memoryHit(cache);
  if (hit === undefined) return undefined;
  facts.cacheStatus = 'HIT';
  const headers = wholeBodyHeaders(rep).slice();
  headers.push(CACHE_STATUS_HEADER, 'HIT', 'age', ageOf(hit.cachedAt));
  return { headers, body: hit.body };
}

/**
 * The hot path, in the request's own tick: a GET with no conditional or Range header of a version whose
 * whole identity body the memory tier holds. Answers it and returns the body's length, or returns
 * undefined having written nothing (the VersionSender answers).
 */
export type MemoryHitSender = (req: IncomingMessage, res: ServerResponse, version: Pick<Served, 'rep' | 'cache'>, facts: SendFacts) => number | undefined;

export function createMemoryHitSender(ctx: AppContext): MemoryHitSender {
  const ageOf = ageFrom(ctx);
  return (req, res, version, facts) => {
    if (req.method !== 'GET') return undefined;
    const { rep } = version;
    const decision = decideRequest(rep, req.headers);
    if (decision.kind !== 'body' || decision.range !== undefined) return undefined;
    // A compressible type is a variant for the sender to pick.
    if (variesByEncoding(rep) && ctx.cdnCache.canCompress(rep.size) && negotiateCoding(req.headers['accept-encoding']) !== undefined) return undefined;
    const answer = memoryAnswer(ctx, ageOf, version, facts);
    if (answer === undefined) return undefined;
    res.writeHead(200, answer.headers);
    endTogether(res, answer.body);
    return answer.body.length;
  };
}

/**
 * Call the sender in the tick the version was looked up in: a fill or bypass then opens (and leases)
 * the bytes of that row before anything can remove them.
 */
export function createVersionSender(ctx: AppContext): VersionSender {
  const ageOf = ageFrom(ctx);
  const pushCacheHeaders = (out: HeaderList, status: CacheStatus, cachedAt: number | undefined): HeaderList => {
    out.push(CACHE_STATUS_HEADER, status);
    if (cachedAt !== undefined) out.push('age', ageOf(cachedAt));
    return out;
  };

  return async (req, res, version, facts, opts = {}) => {
    const { rep, cache } = version;
    const decision = opts.status === undefined ? decideRequest(rep, req.headers) : WHOLE;
    if (decision.kind === 'precondition-failed') {
      plain(res, req, 412, 'Precondition Failed');
      return 'answered';
    }
    if (decision.kind === 'range-not-satisfiable') {
      plain(res, req, 416, 'Range Not Satisfiable', { 'content-range': `bytes */${rep.size}` });
      return 'answered';
    }
    const head = req.method === 'HEAD';
    // Whole bodies of compressible types the memory tier can hold; ranges are always identity bytes.
    // A 304 names the representation a GET would have sent.
    const whole = decision.kind === 'not-modified' || !decision.range;
    const coding: Coding | undefined =
      whole && !head && variesByEncoding(rep) && ctx.cdnCache.canCompress(rep.size) ? negotiateCoding(req.headers['accept-encoding']) : undefined;
    const status = opts.status ?? (decision.kind === 'body' && decision.range ? 206 : 200);

    if (decision.kind === 'not-modified' || head) {
      // Answered from the metadata; the cache is only asked whether it holds this version.
      const probe = ctx.cdnCache.probe(cache);
      facts.cacheStatus = probe.status;
      if (decision.kind === 'not-modified') {
        res.writeHead(304, pushCacheHeaders(validatorHeaders(rep, coding), probe.status, probe.cachedAt));
        res.end();
        return 'answered';
      }
      res.writeHead(status, pushCacheHeaders(pushLengthHeaders(contentHeaders(rep, undefined), rep.size, decision.range), probe.status, probe.cachedAt));
      res.end();
      return 'answered';
    }

    // The whole identity body of a version the memory tier holds (the CDN takes most of these before, createMemoryHitSender).
    const hit = decision.range === undefined && coding === undefined ? memoryAnswer(ctx, ageOf, version, facts) : undefined;
    if (hit !== undefined) {
      facts.bytesSent = await sendBody(res, status, hit.headers, hit.body, ctx.log);
      return 'body';
    }

    let result: CacheResult;
    try {
      result = await ctx.cdnCache.read(cache, decision.range ? (coding ? { range: decision.range, coding } : { range: decision.range }) : coding ? { coding } : {});
    } catch (err) {
      if (isBlobGone(err)) return 'retry';
      throw err;
    }
    facts.cacheStatus = result.status;
    // A compressed variant is always a whole buffer (edge-cache.ts).
    const headers =
      result.coding && Buffer.isBuffer(result.body)
        ? pushLengthHeaders(contentHeaders(rep, result.coding), result.body.length, undefined)
        : decision.range
          ? pushLengthHeaders(contentHeaders(rep, undefined), rep.size, decision.range)
          : wholeBodyHeaders(rep).slice();
    facts.bytesSent = await sendBody(res, status, pushCacheHeaders(headers, result.status, result.cachedAt), result.body, ctx.log);
    return 'body';
  };
}

const WHOLE = Object.freeze({ kind: 'body' as const, range: undefined });
