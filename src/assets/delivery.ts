// Sending an asset's bytes, shared by the authenticated download route and the CDN host: the response
// headers (type, disposition, the no-sniff/sandbox pair, validators), conditional requests, one byte
// range, and the body itself, streamed from storage under a blob lease so a delete cannot remove the
// bytes from under a slow reader. A storage failure after the headers went out destroys the socket:
// the client sees a short read, never a short "success".
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { ObjectReaderDeps } from '../storage/object-reader.js';
import type { AssetRecord } from '../db/repos/assets.js';
import { isS3Error } from '../errors/s3-errors.js';
import { evaluatePreconditions, ifRangeHolds, preconditionsOf, secondPrecision, type ConditionalOptions } from '../http/conditionals.js';
import { parseRange } from '../http/range.js';
import type { ReadRange } from '../storage/backend.js';
import { contentDisposition, type DispositionType } from './content-disposition.js';
import { httpDate } from '../http/http-date.js';
import { SAFETY_HEADERS } from './content-safety.js';
import { sendBody } from '../http/send-body.js';

/** The body of a HEAD answer. */
const EMPTY = Buffer.alloc(0);


export interface DeliveryStyle {
  disposition: DispositionType;
  cacheControl: string;
}

export type DeliveryDecision =
  | { kind: 'body'; status: 200 | 206; headers: Record<string, string>; range: ReadRange | undefined; length: number }
  | { kind: 'not-modified'; headers: Record<string, string> }
  | { kind: 'precondition-failed' }
  | { kind: 'range-not-satisfiable'; contentRange: string };

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(',') : v;
}

// Entity tags compared as the S3 surface compares them (quotes optional), one rule for an asset's bytes by either route.
const ASSET_CONDITIONALS: ConditionalOptions = { etags: 'lenient' };

/** The headers of the asset as a representation (not per range). */
function representationHeaders(asset: AssetRecord, style: DeliveryStyle): Record<string, string> {
  return {
    'content-type': asset.contentType,
    ...SAFETY_HEADERS,
    'content-disposition': contentDisposition(style.disposition, asset.fileName),
    etag: asset.etag,
    'last-modified': httpDate(asset.updatedAt),
    'accept-ranges': 'bytes',
    'cache-control': style.cacheControl,
  };
}

/** The validators and size of one version: all a conditional or Range request is decided on. */
export interface Validators {
  /** Strong, quoted. */
  etag: string;
  /** Unix milliseconds. */
  lastModified: number;
  size: number;
}

export type RequestDecision =
  | { kind: 'body'; range: ReadRange | undefined }
  | { kind: 'not-modified' }
  | { kind: 'precondition-failed' }
  | { kind: 'range-not-satisfiable' };

const WHOLE_BODY: RequestDecision = Object.freeze({ kind: 'body', range: undefined });

/** Conditional headers (304 / 412) first, then one byte range (206 / 416; ignored unless If-Range holds). */
export function decideRequest(v: Validators, h: IncomingHttpHeaders): RequestDecision {
  // Most requests carry none of these (every CDN hit asks): the whole body, without a parse.
  if (h['if-match'] === undefined && h['if-none-match'] === undefined && h['if-modified-since'] === undefined && h['if-unmodified-since'] === undefined && h.range === undefined) {
    return WHOLE_BODY;
  }
  // The validators as sent: Last-Modified is an HTTP-date, whole seconds.
  const validators = { etag: v.etag, lastModified: secondPrecision(v.lastModified) };
  const failure = evaluatePreconditions(preconditionsOf(h), validators, ASSET_CONDITIONALS);
  if (failure?.kind === 'failed') return { kind: 'precondition-failed' };
  if (failure?.kind === 'not-modified') return { kind: 'not-modified' };
  if (!ifRangeHolds(one(h['if-range']), validators)) return { kind: 'body', range: undefined };
  try {
    return { kind: 'body', range: parseRange(one(h.range), v.size) };
  } catch (err) {
    if (isS3Error(err) && err.code === 'InvalidRange') return { kind: 'range-not-satisfiable' };
    throw err;
  }
}

/** What to answer for a GET/HEAD of `asset`, from the request's conditional and Range headers. */
export function decideDelivery(asset: AssetRecord, h: IncomingHttpHeaders, style: DeliveryStyle): DeliveryDecision {
  const headers = representationHeaders(asset, style);
  const d = decideRequest({ etag: asset.etag, lastModified: asset.updatedAt, size: asset.size }, h);
  switch (d.kind) {
    case 'precondition-failed':
      return d;
    case 'range-not-satisfiable':
      return { kind: 'range-not-satisfiable', contentRange: `bytes */${asset.size}` };
    case 'not-modified': {
      const { 'content-type': _t, 'content-disposition': _d, 'accept-ranges': _a, ...kept } = headers;
      return { kind: 'not-modified', headers: kept };
    }
    case 'body':
      break;
  }
  const { range } = d;
  if (!range) return { kind: 'body', status: 200, headers: { ...headers, 'content-length': String(asset.size) }, range: undefined, length: asset.size };
  const length = range.end - range.start + 1;
  return {
    kind: 'body',
    status: 206,
    headers: { ...headers, 'content-length': String(length), 'content-range': `bytes ${range.start}-${range.end}/${asset.size}` },
    range,
    length,
  };
}

/**
 * Opens the asset's bytes (or a range). Call it in the same tick as the lookup that produced `asset`:
 * the lease is taken before the first await, so no delete can remove the blob in between. Rejects
 * with code 'ENOENT' if the blob is gone anyway (another process).
 */
export async function openAssetBody(ctx: Pick<ObjectReaderDeps, 'storage' | 'leases' | 'corruption'>, asset: AssetRecord, range: ReadRange | undefined, signal?: AbortSignal): Promise<Readable> {
  // The asset's bytes, as many as its row says (a blob that lost some is a short read, not a shorter
  // body); a read of all of them is checked against the digest recorded at upload (storage/blob-digest.ts).
  const bytes = range ?? (asset.size > 0 ? { start: 0, end: asset.size - 1 } : undefined);
  const verify = ctx.corruption.wholeReadCheck(asset, range, () => `asset ${asset.id}`);
  return ctx.leases.whileOpen([asset.blobId], () =>
    ctx.storage.read(asset.blobId, { ...(bytes ? { range: bytes } : {}), ...(signal ? { signal } : {}), ...(verify ? { verify } : {}) }),
  );
}

export function isBlobGone(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}

export interface SentBody {
  status: number;
  /** Body bytes written to the response (fewer than announced if the client left or storage failed). */
  bytes: number;
}

/**
 * Writes the status, headers and `body` (already opened, or undefined for HEAD). Resolves once the
 * response is over, however it ended; never rejects: a failure mid-body destroys the socket.
 */
export async function sendAssetBody(
  res: ServerResponse,
  decision: Extract<DeliveryDecision, { kind: 'body' }>,
  body: Readable | undefined,
  log: Logger,
): Promise<SentBody> {
  const bytes = await sendBody(res, decision.status, decision.headers, body ?? EMPTY, log);
  return { status: decision.status, bytes };
}

/** The Host header's name without the port (`[::1]:9000` -> `[::1]`), lowercased; '' when absent. */
export function hostnameOf(host: string | undefined): string {
  if (!host) return '';
  // On every request of every door, several times: no regular expression, and no new string when the
  // header is already a bare lower-case name (toLowerCase and trim return their input then).
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 0 ? h.slice(0, end + 1) : h;
  }
  const colon = h.lastIndexOf(':');
  if (colon < 0) return h;
  for (let i = colon + 1; i < h.length; i++) {
    const c = h.charCodeAt(i);
    if (c < 48 || c > 57) return h;
  }
  return h.slice(0, colon);
}
