// What the CDN answers for one version of an asset or object, from its metadata alone: the response
// headers and whether the type is one we compress (conditionals and ranges: decideRequest in
// assets/delivery.ts). The bytes come later, from the edge cache.
import { isCompressibleType, type Coding } from './cache/compression.js';
import { httpDate } from '../http/http-date.js';

export interface Representation {
  /** Strong, quoted. */
  etag: string;
  /** Unix milliseconds. */
  lastModified: number;
  size: number;
  contentType: string;
  /** An S3 object's stored Content-Encoding: sent as is, and such a body is never compressed again. */
  contentEncoding: string | null;
  contentDisposition: string | undefined;
  cacheControl: string;
  /** Sent with every answer about it: SAFETY_HEADERS, or SITE_SAFETY_HEADERS on a bucket site (resolve.ts objectVersion). */
  safety: Readonly<Record<string, string>>;
  /** Further stored headers (Content-Language, Expires). */
  extra: Record<string, string>;
  /**
   * The headers of a 200 with the whole identity body, made on first use (wholeBodyHeaders): a hot
   * asset's representation lives as long as its directory entry, and its answers share them.
   */
  whole?: readonly string[];
  /** variesByEncoding, found on first use. */
  varies?: boolean;
}

/**
 * Response headers as node's writeHead takes them flat (`[name, value, name, value, ...]`): built by
 * pushing, never by object spreads, which cost microseconds each on Node 20's V8 (a spread followed by
 * more properties leaves the fast path), on every CDN answer.
 */
export type HeaderList = string[];

/** contentHeaders and the length of a 200 with the whole identity body, made once per representation. */
export function wholeBodyHeaders(rep: Representation): readonly string[] {
  if (rep.whole === undefined) {
    const list = contentHeaders(rep, undefined);
    list.push('content-length', String(rep.size));
    rep.whole = list;
  }
  return rep.whole;
}

/** The type is compressible and the body is not encoded already: responses vary on Accept-Encoding. */
export function variesByEncoding(rep: Representation): boolean {
  rep.varies ??= rep.contentEncoding === null && isCompressibleType(rep.contentType);
  return rep.varies;
}

/**
 * A compressed variant is another representation: its ETag is the weak form of the object's (as nginx
 * does), so If-None-Match with it still gives 304 and If-Range never accepts it.
 */
function etagFor(rep: Representation, coding: Coding | undefined): string {
  return coding ? `W/${rep.etag}` : rep.etag;
}

/** Headers of every answer about this representation (200, 206, 304, HEAD), pushed onto `out`. */
export function validatorHeaders(rep: Representation, coding: Coding | undefined, out: HeaderList = []): HeaderList {
  for (const name in rep.safety) out.push(name, rep.safety[name] as string);
  out.push('etag', etagFor(rep, coding), 'last-modified', httpDate(rep.lastModified), 'cache-control', rep.cacheControl);
  if (variesByEncoding(rep)) out.push('vary', 'Accept-Encoding');
  return out;
}

/** Headers of a 200/206/HEAD answer (length and range are the caller's). */
export function contentHeaders(rep: Representation, coding: Coding | undefined): HeaderList {
  const encoding = coding ?? rep.contentEncoding ?? undefined;
  const out: HeaderList = ['content-type', rep.contentType];
  validatorHeaders(rep, coding, out);
  if (rep.contentDisposition) out.push('content-disposition', rep.contentDisposition);
  if (encoding) out.push('content-encoding', encoding);
  for (const name in rep.extra) out.push(name, rep.extra[name] as string);
  out.push('accept-ranges', 'bytes');
  return out;
}
