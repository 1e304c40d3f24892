// The CDN surface: requests whose Host is the configured CDN hostname, for `GET|HEAD /<asset id>/<file
// name>`. Public assets of active spaces are served to anyone; private ones only with a valid signed URL
// (signed-url.ts); everything else is a bare 404, so the CDN tells a stranger nothing about what
// exists. An asset of a suspended space is a bare 403, but only to someone who could otherwise see it.
// Bytes come straight from storage (issue 6 adds the edge cache and the request log).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { isActiveExtension, isActiveType } from '../assets/content-safety.js';
import { decideDelivery, hostnameOf, isBlobGone, openAssetBody, SAFETY_HEADERS, sendAssetBody, type DeliveryStyle } from '../assets/delivery.js';
import { displayKey } from '../assets/view.js';
import type { AppContext } from '../context.js';
import type { AssetRecord } from '../db/repos/assets.js';
import { UrlSigner } from './signed-url.js';
import type { CacheStatus } from '../analytics/request-log.js';

export type CdnHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** Public assets may sit in shared caches for an hour; signed responses in none. */
export const PUBLIC_CACHE_CONTROL = 'public, max-age=3600';
export const SIGNED_CACHE_CONTROL = 'private, no-store';

export interface CdnTarget {
  id: string;
  /** Percent-decoded. */
  fileName: string;
  expires?: string;
  signature?: string;
}

/**
 * `/<32 hex id>/<one percent-encoded segment>[?query]` -> the target; anything else undefined. Only
 * `expires` and `signature` are read from the query, each at most once; other parameters are ignored.
 */
export function parseCdnTarget(url: string | undefined): CdnTarget | undefined {
  if (!url) return undefined;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const m = /^\/([0-9a-f]{32})\/([^/]+)$/.exec(path);
  if (!m) return undefined;
  let fileName: string;
  try {
    fileName = decodeURIComponent(m[2] as string);
  } catch {
    return undefined;
  }
  const target: CdnTarget = { id: m[1] as string, fileName };
  if (q >= 0) {
    const params = new URLSearchParams(url.slice(q + 1));
    const expires = params.getAll('expires');
    const signature = params.getAll('signature');
    if (expires.length === 1 && signature.length === 1) {
      target.expires = expires[0] as string;
      target.signature = signature[0] as string;
    }
  }
  return target;
}

/** What the request log needs to know about a request, filled in as the request is served. */
interface RequestFacts {
  assetId: string | null;
  ownerId: string | null;
  bucket: string | null;
  key: string | null;
  cacheStatus: CacheStatus | null;
  bytesSent: number;
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

export function createCdnHandler(ctx: AppContext): CdnHandler {
  const signer = UrlSigner.fromMasterKey(ctx.masterKey, ctx.clock);
  const cdnHostname = ctx.config.cdn.hostname;

  /** How the asset may be served to this request: undefined means "not found" for this caller. */
  const styleFor = (asset: AssetRecord, target: CdnTarget): DeliveryStyle | undefined => {
    const signed =
      target.expires !== undefined && target.signature !== undefined && signer.verify(asset, target.expires, target.signature);
    if (!signed && asset.visibility !== 'public') return undefined;
    // Active content (HTML, SVG, XML, JS) is only ever a download, even through a signed URL.
    const active = isActiveType(asset.contentType) || isActiveExtension(asset.fileName);
    return { disposition: active ? 'attachment' : 'inline', cacheControl: signed ? SIGNED_CACHE_CONTROL : PUBLIC_CACHE_CONTROL };
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, facts: RequestFacts): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return notFound(req, res);
    const target = parseCdnTarget(req.url);
    if (!target) return notFound(req, res);
    const asset = ctx.repos.assets.get(target.id);
    if (!asset || asset.fileName !== target.fileName) return notFound(req, res);
    facts.assetId = asset.id;
    facts.ownerId = asset.userId;
    const style = styleFor(asset, target);
    if (!style) return notFound(req, res);
    if (ctx.repos.spaces.get(asset.userId)?.status === 'suspended') return plain(res, req, 403, 'Forbidden');

    const decision = decideDelivery(asset, req.headers, style);
    switch (decision.kind) {
      case 'precondition-failed':
        return plain(res, req, 412, 'Precondition Failed');
      case 'range-not-satisfiable':
        return plain(res, req, 416, 'Range Not Satisfiable', { 'content-range': decision.contentRange });
      case 'not-modified':
        res.writeHead(304, decision.headers);
        res.end();
        return;
      case 'body':
        break;
    }
    const head = req.method === 'HEAD';
    let body: Readable | undefined;
    try {
      // Same tick as the lookup above: the blob is leased before anything can remove it.
      body = head ? undefined : await openAssetBody(ctx, asset, decision.range);
    } catch (err) {
      if (!isBlobGone(err)) throw err;
      return notFound(req, res);
    }
    const sent = await sendAssetBody(res, decision, body, ctx.log);
    facts.bytesSent = sent.bytes;
    if (head) return;
    ctx.repos.usage.record({
      userId: asset.userId, assetId: asset.id, eventType: 'download', source: 'cdn', bytes: sent.bytes,
      hostname: cdnHostname, statusCode: sent.status, metadata: { key: displayKey(asset) },
      clientIp: req.socket.remoteAddress ?? '',
    });
  };

  return async (req, res) => {
    const started = performance.now();
    const time = Date.now();
    const facts: RequestFacts = { assetId: null, ownerId: null, bucket: null, key: null, cacheStatus: null, bytesSent: 0 };
    try {
      await serve(req, res, facts);
    } catch (err) {
      ctx.log.error({ err, url: req.url }, 'cdn request failed');
      if (!res.headersSent) plain(res, req, 500, 'Internal Server Error');
      else res.destroy();
    }
    const client = ctx.clients.resolve(req);
    ctx.requestLog.record({
      time,
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
    });
  };
}

/** True when the Host header (port ignored) names the CDN hostname. */
export function isCdnHost(host: string | undefined, cdnHostname: string): boolean {
  if (!host) return false;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return name === cdnHostname || name === `${cdnHostname}.`;
}
