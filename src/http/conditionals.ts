// RFC 9110 conditional requests, the one evaluation the S3 surface, asset/CDN delivery and the edge
// proxy's cache share. Order (§13.2.2, which is also AWS's documented precedence): If-Match, else
// If-Unmodified-Since, decide a 412; then If-None-Match, else If-Modified-Since, decide a 304. So a
// true If-Match beats a false If-Unmodified-Since, and If-None-Match, when present, decides alone.
// The verdict is neutral: each caller maps it to its own answer (an S3 error, a plain 412/304, a 304
// from the cache). If-Range (§13.1.5) is here too.
import { splitQuotedList } from './field-list.js';

/** Header fields as node:http and undici give them: lower-case names, repeated fields as arrays. */
type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** The four precondition values, whichever request headers carried them. */
export interface Preconditions {
  ifMatch?: string | undefined;
  ifNoneMatch?: string | undefined;
  ifModifiedSince?: string | undefined;
  ifUnmodifiedSince?: string | undefined;
}

/** Which precondition failed; undefined when the request may proceed. */
export type PreconditionFailure =
  | { kind: 'failed'; condition: 'If-Match' | 'If-Unmodified-Since' }
  | { kind: 'not-modified'; condition: 'If-None-Match' | 'If-Modified-Since' };

/** What the preconditions are compared with: the validators the client was sent. */
export interface Validators {
  /** As sent (may be weak); undefined when there is none. */
  etag: string | undefined;
  /**
   * The Last-Modified as sent, in Unix milliseconds; undefined when there is none. A stored
   * millisecond timestamp goes through `secondPrecision` first: an HTTP-date has whole seconds.
   */
  lastModified: number | undefined;
}

/**
 * How If-Match / If-None-Match lists are compared with the ETag (both weak comparison):
 * 'lenient' (S3, assets): quotes optional and `*` anywhere in the list, as AWS accepts;
 * 'opaque' (the proxy's cache): RFC 9110 entity-tags as sent and `*` only alone, since the origin's tags are not ours to reinterpret.
 */
export type EtagMatching = 'lenient' | 'opaque';

export interface ConditionalOptions {
  etags: EtagMatching;
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The four preconditions of a request's own headers. */
export function preconditionsOf(h: Headers): Preconditions {
  return {
    ifMatch: one(h['if-match']),
    ifNoneMatch: one(h['if-none-match']),
    ifModifiedSince: one(h['if-modified-since']),
    ifUnmodifiedSince: one(h['if-unmodified-since']),
  };
}

/** A millisecond timestamp as its HTTP-date (httpDate) carries it: whole seconds. */
export function secondPrecision(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

function parseDate(v: string | undefined): number | undefined {
  if (!v) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

function lenientMatch(list: string, etag: string | undefined): boolean {
  const bare = etag?.replace(/"/g, '');
  return list.split(',').some((item) => {
    const e = item.trim().replace(/^W\//, '');
    return e === '*' || (bare !== undefined && e.replace(/"/g, '') === bare);
  });
}

function opaqueTag(tag: string): string {
  return tag.trim().replace(/^W\//, '');
}

function opaqueMatch(list: string, etag: string | undefined): boolean {
  if (list.trim() === '*') return true;
  if (etag === undefined) return false;
  const mine = opaqueTag(etag);
  return splitQuotedList(list).some((tag) => opaqueTag(tag) === mine);
}

function listMatches(list: string, etag: string | undefined, how: EtagMatching): boolean {
  return how === 'lenient' ? lenientMatch(list, etag) : opaqueMatch(list, etag);
}

/**
 * RFC 9110 §13.2.2. A date precondition against a missing Last-Modified, or an unparseable date,
 * is ignored (§13.1.3, §13.1.4).
 */
export function evaluatePreconditions(p: Preconditions, v: Validators, opts: ConditionalOptions): PreconditionFailure | undefined {
  const modified = v.lastModified;
  if (p.ifMatch !== undefined) {
    if (!listMatches(p.ifMatch, v.etag, opts.etags)) return { kind: 'failed', condition: 'If-Match' };
  } else {
    const since = parseDate(p.ifUnmodifiedSince);
    if (since !== undefined && modified !== undefined && modified > since) return { kind: 'failed', condition: 'If-Unmodified-Since' };
  }
  if (p.ifNoneMatch !== undefined) {
    if (listMatches(p.ifNoneMatch, v.etag, opts.etags)) return { kind: 'not-modified', condition: 'If-None-Match' };
  } else {
    const since = parseDate(p.ifModifiedSince);
    if (since !== undefined && modified !== undefined && modified <= since) return { kind: 'not-modified', condition: 'If-Modified-Since' };
  }
  return undefined;
}

/**
 * RFC 9110 §13.1.5: a Range applies only if If-Range (absent: always) names the representation by a
 * strong ETag (a weak one on either side never matches) or its exact Last-Modified.
 */
export function ifRangeHolds(ifRange: string | undefined, v: Validators): boolean {
  if (ifRange === undefined) return true;
  const given = ifRange.trim();
  if (given.startsWith('"')) return v.etag !== undefined && !v.etag.startsWith('W/') && given === v.etag;
  if (given.startsWith('W/')) return false;
  const t = Date.parse(given);
  return !Number.isNaN(t) && v.lastModified !== undefined && t === v.lastModified;
}
