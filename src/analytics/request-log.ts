// The CDN request log (issue 6): every CDN request is recorded here. To be implemented: a bounded
// in-memory buffer flushed to SQLite by a timer, drop counting, hourly roll-ups and retention.
import type { IncomingMessage } from 'node:http';

export type CacheStatus = 'HIT' | 'MISS' | 'EXPIRED' | 'BYPASS';

/** One CDN request, as the CDN handler reports it when the response has ended. */
export interface CdnRequestRecord {
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
}

export class RequestLog {
  /** Appends the record to the buffer; never blocks, never throws. */
  record(_r: CdnRequestRecord): void {}

  async close(): Promise<void> {}
}

export type { IncomingMessage };
