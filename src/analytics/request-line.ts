// The log line of a CDN or edge-proxy request (docs/ARCHITECTURE.md "Request logs"): the same JSON line
// per request as S3's, for an operator's collector, beside the request-log row the analytics read.
// Like the table it holds the path without the query string, and no header. Serialised here in one
// pass (src/log-format.ts lineWriter): one such line on every request was pino's heaviest call.
import { jsonString as str, type LineWriter } from '../log-format.js';
import type { CdnRequestRecord } from '../db/repos/request-records.js';

const MAX_PATH = 1024;

/**
 * The line's fields, in their order: surface, requestId?, method, host, path, status, cacheStatus,
 * decision (proxy), bytesIn, bytesOut, durationMs, clientIp, country, assetId?, bucket?, key?.
 */
export function requestLineFields(r: CdnRequestRecord): string {
  const surface = r.surface ?? 'cdn';
  const path = r.path.length > MAX_PATH ? r.path.slice(0, MAX_PATH) : r.path;
  let out = `,"surface":"${surface}"`;
  if (r.requestId !== undefined) out += `,"requestId":${str(r.requestId)}`;
  out += `,"method":${str(r.method)},"host":${str(r.host)},"path":${str(path)},"status":${r.status},"cacheStatus":${r.cacheStatus === null ? 'null' : str(r.cacheStatus)}`;
  if (surface === 'proxy') out += `,"decision":${str(r.decision ?? 'allowed')}`;
  out += `,"bytesIn":${num(r.bytesIn ?? 0)},"bytesOut":${num(r.bytesSent)},"durationMs":${num(r.durationMs)},"clientIp":${str(r.clientIp)},"country":${str(r.country)}`;
  if (r.assetId !== null) out += `,"assetId":${str(r.assetId)}`;
  if (r.bucket !== null) out += `,"bucket":${str(r.bucket)}`;
  if (r.key !== null) out += `,"key":${str(r.key)}`;
  return out;
}

/** As pino writes a number: a non-finite one is null. */
function num(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** Writes the record's line: at info, at warn for a 5xx (its cause is logged at error where it happened). */
export function logRequestLine(lines: LineWriter, r: CdnRequestRecord): void {
  const level = r.status >= 500 ? 40 : 30;
  if (lines.enabled(level)) lines.write(level, requestLineFields(r), r.surface === 'proxy' ? 'proxy request' : 'cdn request');
}
