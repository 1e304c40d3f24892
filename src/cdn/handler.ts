// The CDN surface: requests whose Host is the configured CDN hostname, `GET|HEAD` of an asset
// (`/<asset id>/<file name>`) or of an object of a public bucket (`/b/<bucket>/<key>`). What may be
// served is decided from the metadata rows (resolve.ts); conditionals and ranges from the
// representation (representation.ts); the bytes come from the edge cache (edge-cache.ts), which says
// where they came from in `X-Cache: HIT | MISS | EXPIRED | BYPASS`. Anything not served is a bare
// 404, so the CDN tells a stranger nothing about what exists; what would be served of a suspended
// space is a bare 403, and of an owner whose credits ran out (credits.atZero 'suspend-delivery', after
// the grace) a 402 saying so. Every request is reported to the request log.
import { pathOf, userAgentOf } from '../http/request-target.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostnameOf } from '../assets/delivery.js';
import { displayKey } from '../assets/view.js';
import { isMetadataBusy, isMetadataUnavailable, isStorageUnavailable } from '../errors/s3-errors.js';
import type { AppContext } from '../context.js';
import type { CdnRequestRecord } from '../db/repos/request-records.js';
import { CdnResolver, type Resolution, type Served, type TargetFacts } from './resolve.js';
import { DELIVERY_SUSPENDED_TEXT } from '../credits/delivery-suspension.js';
import { createMemoryHitSender, createVersionSender, notFound, plain, type SendFacts } from './send-version.js';

export { notFound } from './send-version.js';

export type CdnHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * What the request log needs to know about a request, filled in as the request is served (the log
 * record itself): `downloadKey` is set when a body was served, the request is then a download usage
 * event too.
 */
type RequestFacts = TargetFacts & SendFacts & Pick<CdnRequestRecord, 'downloadKey'>;

/** Lookups retried when a blob vanished between the row and the read (another process removed it). */
const ATTEMPTS = 3;

const DONE: Promise<void> = Promise.resolve();

export function createCdnHandler(ctx: AppContext): CdnHandler {
  const resolver = new CdnResolver(ctx);
  const send = createVersionSender(ctx);
  const sendHit = createMemoryHitSender(ctx);

  /**
   * One attempt: 'retry' when the bytes vanished before anything was sent. `held`: what the hot path
   * resolved in this tick (no second lookup).
   */
  const attempt = async (req: IncomingMessage, res: ServerResponse, facts: RequestFacts, held?: Served): Promise<'done' | 'retry'> => {
    const resolution: Resolution = held !== undefined ? { kind: 'found', served: held } : await resolver.resolve(req, facts);
    if (resolution.kind === 'not-found') {
      notFound(req, res);
      return 'done';
    }
    if (resolution.kind === 'forbidden') {
      plain(res, req, 403, 'Forbidden');
      return 'done';
    }
    if (resolution.kind === 'payment-required') {
      plain(res, req, 402, DELIVERY_SUSPENDED_TEXT);
      return 'done';
    }
    // Right after the lookup in resolve(): a fill or bypass opens (and leases) the bytes of that row.
    const sent = await send(req, res, resolution.served, facts);
    if (sent === 'retry') return 'retry';
    // Each body served is also a download usage event, written with the request's log row: an asset's
    // under its display key, a public bucket object's as `<bucket>/<key>`.
    const { asset } = resolution.served;
    if (sent === 'body' && asset) facts.downloadKey = displayKey(asset);
    else if (sent === 'body' && facts.bucket !== null && facts.key !== null) facts.downloadKey = `${facts.bucket}/${facts.key}`;
    return 'done';
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, facts: RequestFacts, held: Served | undefined): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return notFound(req, res);
    for (let i = 0; i < ATTEMPTS; i++) {
      if ((await attempt(req, res, facts, i === 0 ? held : undefined)) === 'done') return;
    }
    // Still gone: the object went away under us.
    facts.cacheStatus = null;
    notFound(req, res);
  };

  /** Once the response is over: the request log gets the record (the status, the duration). */
  const logged = (res: ServerResponse, record: CdnRequestRecord, started: number): void => {
    record.status = res.statusCode;
    record.durationMs = Math.round((performance.now() - started) * 1000) / 1000;
    ctx.requestLog.record(record);
  };

  const served = async (req: IncomingMessage, res: ServerResponse, record: CdnRequestRecord, started: number, held?: Served): Promise<void> => {
    try {
      await serve(req, res, record, held);
    } catch (err) {
      ctx.log.error({ err, url: req.url }, 'cdn request failed');
      // The storage backend's 503 (upstream down) keeps its Retry-After; nothing else of it is shown.
      if (!res.headersSent && isStorageUnavailable(err)) plain(res, req, 503, 'Service Unavailable', err.headers);
      // The metadata database locked by another process, or PostgreSQL away: a retry may succeed.
      else if (!res.headersSent && (isMetadataBusy(err) || isMetadataUnavailable(err))) plain(res, req, 503, 'Service Unavailable', { 'retry-after': '1' });
      else if (!res.headersSent) plain(res, req, 500, 'Internal Server Error');
      else res.destroy();
    }
    logged(res, record, started);
  };

  return (req, res) => {
    const started = performance.now();
    // Now, while the socket still knows its peer: after a Connection: close response it does not.
    const client = ctx.clients.resolve(req);
    // The request's log record, filled in as it is served (it is the handlers' facts too): one object,
    // of one shape, per request.
    const record: CdnRequestRecord = {
      surface: 'cdn',
      time: Date.now(),
      method: req.method ?? '',
      path: pathOf(req.url),
      host: hostnameOf(req.headers.host),
      assetId: null,
      bucket: null,
      key: null,
      ownerId: null,
      status: 0,
      bytesSent: 0,
      cacheStatus: null,
      clientIp: client.ip,
      country: client.country,
      userAgent: userAgentOf(req),
      durationMs: 0,
      downloadKey: undefined,
    };
    // The hot path, in this tick and without a promise: a public asset whose row, owner's standing and
    // bytes this process holds. Anything else, or what it resolved but could not answer from memory
    // (HEAD, a conditional, a range, a compressed variant, bytes not in memory), takes the slow path.
    let held: ReturnType<CdnResolver['heldPublicAsset']>;
    let length: number | undefined;
    try {
      held = resolver.heldPublicAsset(req, record);
      if (held !== undefined) length = sendHit(req, res, held, record);
    } catch (err) {
      // Nothing written yet: the slow path answers (and logs) it as any other failure.
      if (!res.headersSent) return served(req, res, record, started);
      ctx.log.error({ err, url: req.url }, 'cdn request failed');
      res.destroy();
      logged(res, record, started);
      return DONE;
    }
    if (held === undefined || length === undefined) return served(req, res, record, started, held);
    record.downloadKey = displayKey(held.asset);
    // The body counts as sent once the response finished, as sendBody counts it.
    res.once('close', () => {
      record.bytesSent = res.writableFinished ? length : 0;
      logged(res, record, started);
    });
    return DONE;
  };
}

/** True when the Host header (port ignored) names the CDN hostname. */
export function isCdnHost(host: string | undefined, cdnHostname: string): boolean {
  const name = hostnameOf(host);
  return name === cdnHostname || name === `${cdnHostname}.`;
}
