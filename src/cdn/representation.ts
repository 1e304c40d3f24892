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
}

/** The type is compressible and the body is not encoded already: responses vary on Accept-Encoding. */
export function variesByEncoding(rep: Representation): boolean {
  return rep.contentEncoding === null && isCompressibleType(rep.contentType);
}

/**
 * A compressed variant is another representation: its ETag is the weak form of the object's (as nginx
 * does), so If-None-Match with it still gives 304 and If-Range never accepts it.
 */
function etagFor(rep: Representation, coding: Coding | undefined): string {
  return coding ? `W/${rep.etag}` : rep.etag;
}

/** Headers of every answer about this representation (200, 206, 304, HEAD). */
export function validatorHeaders(rep: Representation, coding: Coding | undefined): Record<string, string> {
  return {
    ...rep.safety,
    etag: etagFor(rep, coding),
    'last-modified': httpDate(rep.lastModified),
    'cache-control': rep.cacheControl,
    ...(variesByEncoding(rep) ? { vary: 'Accept-Encoding' } : {}),
  };
}

/** Headers of a 200/206/HEAD answer (length and range are the caller's). */
export function contentHeaders(rep: Representation, coding: Coding | undefined): Record<string, string> {
  const encoding = coding ?? rep.contentEncoding ?? undefined;
  return {
    'content-type': rep.contentType,
    ...validatorHeaders(rep, coding),
    ...(rep.contentDisposition ? { 'content-disposition': rep.contentDisposition } : {}),
    ...(encoding ? { 'content-encoding': encoding } : {}),
    ...rep.extra,
    'accept-ranges': 'bytes',
  };
}
