// What the request log stores of each CDN or proxied request (db/repos/cdn-log.ts writes it, the surfaces
// fill it in as they answer, analytics/ reads it back): the record and its small vocabularies.

export type CacheStatus = 'HIT' | 'MISS' | 'EXPIRED' | 'BYPASS';

/** Which door served a logged request: the CDN hostname, or a project hostname through the edge proxy. */
export type Surface = 'cdn' | 'proxy';

/** One CDN or proxied request, as its handler reports it when the response has ended. */
export interface CdnRequestRecord {
  /** Default 'cdn'. The CDN's roll-ups and summary count 'cdn' requests only. */
  surface?: Surface;
  /** The proxy's request id (its own answers show it as x-request-id): in the log line, not the table. */
  requestId?: string;
  method: string;
  /** The request target's path (no query string), at most 1024 characters kept. */
  path: string;
  /** Request body bytes received (proxied requests); default 0. */
  bytesIn?: number;
  /** 'allowed', or the rule that blocked the request (src/db/repos/hostname-model.ts BlockReason); default 'allowed'. */
  decision?: string;
  /** Unix milliseconds when the request arrived. */
  time: number;
  /** The Host header's name, lowercased, without port. */
  host: string;
  /** Set when the request named an asset that exists. */
  assetId: string | null;
  /** Set when the request named an object of a public bucket (bucket name, object key). */
  bucket: string | null;
  key: string | null;
  /** The user who owns what was requested; null for requests that named nothing known. */
  ownerId: string | null;
  status: number;
  /** Body bytes written to the client. */
  bytesSent: number;
  /** null when the request never reached the cache (404, 403, 412 ...). */
  cacheStatus: CacheStatus | null;
  clientIp: string;
  /** ISO 3166 alpha-2 code, or '' when unknown. */
  country: string;
  userAgent: string;
  durationMs: number;
  /**
   * Set when this request served a body: the asset's display key, or `<bucket>/<key>`. The request is
   * then also a `download` usage event (source `cdn`), written in the same flush transaction as its
   * log row instead of one write per request.
   */
  downloadKey?: string;
}

/** Timers of the log: `every` runs `fn` every `ms` until stopped; `soon` runs it once, after this turn. */
