// The CDN surface: requests whose Host is the configured CDN hostname, `GET|HEAD` of an asset
// (`/<asset id>/<file name>`) or of an object of a public bucket (`/b/<bucket>/<key>`). What may be
// served is decided from the metadata rows (resolve.ts); conditionals and ranges from the
// representation (representation.ts); the bytes come from the edge cache (edge-cache.ts), which says
// where they came from in `X-Cache: HIT | MISS | EXPIRED | BYPASS`. Anything not served is a bare
// 404, so the CDN tells a stranger nothing about what exists; what would be served of a suspended
// space is a bare 403. Every request is reported to the request log.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decideRequest, hostnameOf, isBlobGone } from '../assets/delivery.js';
import { SAFETY_HEADERS } from '../assets/content-safety.js';
import { displayKey } from '../assets/view.js';
import { isStorageUnavailable } from '../errors/s3-errors.js';
import type { AppContext } from '../context.js';
import type { CacheStatus } from '../analytics/request-log.js';
import { negotiateCoding, type Coding } from './cache/compression.js';
import type { CacheResult } from './edge-cache.js';
import { contentHeaders, validatorHeaders, variesByEncoding } from './representation.js';
import { CdnResolver, type TargetFacts } from './resolve.js';
import { sendBody } from '../http/send-body.js';

export type CdnHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The response header naming where the bytes came from. */
const CACHE_STATUS_HEADER = 'x-cache';

/** What the request log needs to know about a request, filled in as the request is served. */
interface RequestFacts extends TargetFacts {
  cacheStatus: CacheStatus | null;
  bytesSent: number;
  /** Set when a body was served: the request is then a download usage event too. */
  downloadKey?: string;
}

function plain(res: ServerResponse, req: IncomingMessage, status: number, text: string, extra: Record<string, string> = {}): void {
  const body = `${text}\n`;
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'cache-control': 'no-store',
    ...SAFETY_HEADERS,
    ...extra,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The CDN's one answer to anything it does not serve: no detail. */
export const notFound = (req: IncomingMessage, res: ServerResponse): void => plain(res, req, 404, 'Not Found');

/** Lookups retried when a blob vanished between the row and the read (another process removed it). */
const ATTEMPTS = 3;

export function createCdnHandler(ctx: AppContext): CdnHandler {
  const resolver = new CdnResolver(ctx);
  const cacheHeaders = (status: CacheStatus, cachedAt: number | undefined): Record<string, string> => {
    const headers: Record<string, string> = { [CACHE_STATUS_HEADER]: status };
    if (cachedAt !== undefined) headers.age = String(Math.max(0, Math.floor((ctx.clock().getTime() - cachedAt) / 1000)));
    return headers;
  };

  /** One attempt: 'retry' when the bytes vanished before anything was sent. */
  const attempt = async (req: IncomingMessage, res: ServerResponse, facts: RequestFacts): Promise<'done' | 'retry'> => {
    const resolution = resolver.resolve(req, facts);
    if (resolution.kind === 'not-found') {
      notFound(req, res);
      return 'done';
    }
    if (resolution.kind === 'forbidden') {
      plain(res, req, 403, 'Forbidden');
      return 'done';
    }
    const { rep, cache, asset } = resolution.served;
    const decision = decideRequest(rep, req.headers);
    if (decision.kind === 'precondition-failed') {
      plain(res, req, 412, 'Precondition Failed');
      return 'done';
    }
    if (decision.kind === 'range-not-satisfiable') {
      plain(res, req, 416, 'Range Not Satisfiable', { 'content-range': `bytes */${rep.size}` });
      return 'done';
    }
    const head = req.method === 'HEAD';
    // Whole bodies of compressible types the memory tier can hold; ranges are always identity bytes.
    // A 304 names the representation a GET would have sent.
    const whole = decision.kind === 'not-modified' || !decision.range;
    const coding: Coding | undefined =
      whole && !head && variesByEncoding(rep) && ctx.edge.canCompress(rep.size) ? negotiateCoding(req.headers['accept-encoding']) : undefined;

    if (decision.kind === 'not-modified' || head) {
      // Answered from the metadata; the cache is only asked whether it holds this version.
      const probe = ctx.edge.probe(cache);
      facts.cacheStatus = probe.status;
      if (decision.kind === 'not-modified') {
        res.writeHead(304, { ...validatorHeaders(rep, coding), ...cacheHeaders(probe.status, probe.cachedAt) });
        res.end();
        return 'done';
      }
      res.writeHead(decision.range ? 206 : 200, {
        ...contentHeaders(rep, undefined),
        ...lengthHeaders(rep.size, decision.range),
        ...cacheHeaders(probe.status, probe.cachedAt),
      });
      res.end();
      return 'done';
    }

    let result: CacheResult;
    try {
      // Same tick as the lookup in resolve(): a fill or bypass opens (and leases) the bytes of that row.
      result = await ctx.edge.read(cache, { ...(decision.range ? { range: decision.range } : {}), ...(coding ? { coding } : {}) });
    } catch (err) {
      if (isBlobGone(err)) return 'retry';
      throw err;
    }
    facts.cacheStatus = result.status;
    const status = decision.range ? 206 : 200;
    const headers = {
      ...contentHeaders(rep, result.coding),
      // A compressed variant is always a whole buffer (edge-cache.ts).
      ...(result.coding && Buffer.isBuffer(result.body) ? { 'content-length': String(result.body.length) } : lengthHeaders(rep.size, decision.range)),
      ...cacheHeaders(result.status, result.cachedAt),
    };
    facts.bytesSent = await sendBody(res, status, headers, result.body, ctx.log);
    // Each body served is also a download usage event, written with the request's log row: an asset's
    // under its display key, a public bucket object's as `<bucket>/<key>`.
    if (asset) facts.downloadKey = displayKey(asset);
    else if (facts.bucket !== null && facts.key !== null) facts.downloadKey = `${facts.bucket}/${facts.key}`;
    return 'done';
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, facts: RequestFacts): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return notFound(req, res);
    for (let i = 0; i < ATTEMPTS; i++) {
      if ((await attempt(req, res, facts)) === 'done') return;
    }
    // Still gone: the object went away under us.
    facts.cacheStatus = null;
    notFound(req, res);
  };

  return async (req, res) => {
    const started = performance.now();
    const time = Date.now();
    // Now, while the socket still knows its peer: after a Connection: close response it does not.
    const client = ctx.clients.resolve(req);
    const facts: RequestFacts = { assetId: null, ownerId: null, bucket: null, key: null, cacheStatus: null, bytesSent: 0 };
    try {
      await serve(req, res, facts);
    } catch (err) {
      ctx.log.error({ err, url: req.url }, 'cdn request failed');
      // The storage backend's 503 (upstream down) keeps its Retry-After; nothing else of it is shown.
      if (!res.headersSent && isStorageUnavailable(err)) plain(res, req, 503, 'Service Unavailable', err.headers);
      else if (!res.headersSent) plain(res, req, 500, 'Internal Server Error');
      else res.destroy();
    }
    ctx.requestLog.record({
      time,
      method: req.method ?? '',
      path: pathOf(req.url),
      host: hostnameOf(req.headers.host),
      assetId: facts.assetId,
      bucket: facts.bucket,
      key: facts.key,
      ownerId: facts.ownerId,
      status: res.statusCode,
      bytesSent: facts.bytesSent,
      cacheStatus: facts.cacheStatus,
      clientIp: client.ip,
      country: client.country,
      userAgent: String(req.headers['user-agent'] ?? '').slice(0, 512),
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      ...(facts.downloadKey !== undefined ? { downloadKey: facts.downloadKey } : {}),
    });
  };
}

/** The request target without its query string (signed URLs carry their signature there). */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

function lengthHeaders(size: number, range: { start: number; end: number } | undefined): Record<string, string> {
  if (!range) return { 'content-length': String(size) };
  return { 'content-length': String(range.end - range.start + 1), 'content-range': `bytes ${range.start}-${range.end}/${size}` };
}


/** True when the Host header (port ignored) names the CDN hostname. */
export function isCdnHost(host: string | undefined, cdnHostname: string): boolean {
  const name = hostnameOf(host);
  return name === cdnHostname || name === `${cdnHostname}.`;
}
