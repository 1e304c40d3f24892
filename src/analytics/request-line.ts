// The log line of a CDN or edge-proxy request (docs/ARCHITECTURE.md "Request logs"): the same JSON line
// per request as S3's, for an operator's collector, beside the request-log row the analytics read.
// Like the table it holds the path without the query string, and no header.
import type { Logger } from 'pino';
import type { CdnRequestRecord } from './request-log.js';

/** The fields of the line, in its order. */
interface RequestLine {
  surface: 'cdn' | 'proxy';
  requestId?: string;
  method: string;
  host: string;
  path: string;
  status: number;
  cacheStatus: string | null;
  decision?: string;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  clientIp: string;
  country: string;
  assetId?: string;
  bucket?: string;
  key?: string;
}

const MAX_PATH = 1024;

/** Writes the record's line: at info, at warn for a 5xx (its cause is logged at error where it happened). */
export function logRequestLine(log: Pick<Logger, 'info' | 'warn'>, r: CdnRequestRecord): void {
  const surface = r.surface ?? 'cdn';
  const line: RequestLine = {
    surface,
    ...(r.requestId !== undefined ? { requestId: r.requestId } : {}),
    method: r.method,
    host: r.host,
    path: r.path.length > MAX_PATH ? r.path.slice(0, MAX_PATH) : r.path,
    status: r.status,
    cacheStatus: r.cacheStatus,
    ...(surface === 'proxy' ? { decision: r.decision ?? 'allowed' } : {}),
    bytesIn: r.bytesIn ?? 0,
    bytesOut: r.bytesSent,
    durationMs: r.durationMs,
    clientIp: r.clientIp,
    country: r.country,
    ...(r.assetId !== null ? { assetId: r.assetId } : {}),
    ...(r.bucket !== null ? { bucket: r.bucket } : {}),
    ...(r.key !== null ? { key: r.key } : {}),
  };
  const msg = surface === 'proxy' ? 'proxy request' : 'cdn request';
  if (r.status >= 500) log.warn(line, msg);
  else log.info(line, msg);
}
