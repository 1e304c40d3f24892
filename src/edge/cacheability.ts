// The edge proxy's caching rules as pure functions of headers, status and time (RFC 9111, as a shared
// cache): whether a request may be answered from the cache and whether its answer may be stored,
// for how long an answer stays fresh, which headers are stored, and the conditional and Range
// answers a stored 200 can give by itself. src/edge/response-cache.ts applies them.
//
// Deliberately stricter than the RFC where that is simpler and never wrong for the client: nothing is
// stored without explicit freshness (no heuristic lifetimes), nothing stale is served (no
// revalidation: a stale entry is a miss, and its replacement is stored), and qualified `private` /
// `no-cache` forms count as their plain forms. One deviation: the initial age is the origin's Age
// header only, not the Date-based apparent age, because Date is the origin's clock and a skewed origin
// would otherwise make every answer stale on arrival.
import { evaluatePreconditions, ifRangeHolds as ifRangeNames, type ConditionalOptions, type Validators } from '../http/conditionals.js';
import { splitQuotedList } from '../http/field-list.js';

/** Header fields as node:http and undici give them: lower-case names, repeated fields as arrays. */
export type HeaderMap = Record<string, string | string[] | undefined>;

/** Cache-Control directives, lower-cased names; a directive without `=value` maps to null. First occurrence wins. */
export type Directives = ReadonlyMap<string, string | null>;

function joined(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

function unquote(v: string): string {
  return v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1).replace(/\\(.)/g, '$1') : v;
}

/** The directives of an absent header: one shared empty map (most requests carry none). */
const NO_DIRECTIVES: Directives = new Map();

export function parseCacheControl(value: string | string[] | undefined): Directives {
  const text = joined(value);
  if (text === undefined) return NO_DIRECTIVES;
  const out = new Map<string, string | null>();
  for (const item of splitQuotedList(text)) {
    const eq = item.indexOf('=');
    const name = (eq === -1 ? item : item.slice(0, eq)).trim().toLowerCase();
    if (name === '' || out.has(name)) continue;
    out.set(name, eq === -1 ? null : unquote(item.slice(eq + 1).trim()));
  }
  return out;
}

/** RFC 9111 §1.2.2: delta-seconds, capped at 2^31; undefined when absent or not a non-negative integer. */
export function deltaSeconds(v: string | null | undefined): number | undefined {
  if (v === null || v === undefined || !/^\d+$/.test(v)) return undefined;
  return Math.min(Number(v), 2 ** 31);
}

/** Whether a request may be answered from the cache, and whether its answer may be stored. */
export interface RequestPolicy {
  lookup: boolean;
  store: boolean;
  /** Request `max-age`: the client takes no answer older than this (seconds). */
  maxAge: number | undefined;
  /** Request `min-fresh`: the answer must stay fresh at least this much longer (seconds). */
  minFresh: number | undefined;
}

const NEVER: RequestPolicy = { lookup: false, store: false, maxAge: undefined, minFresh: undefined };

/**
 * GET and HEAD only. `no-cache` (and `Pragma: no-cache`, which clients still send on reload) goes to
 * the origin, and its fresh answer may replace the stored one; `no-store` goes to the origin and
 * stores nothing (§5.2.1.5). A request with Authorization is decided per stored answer (allowsAuthorized).
 */
export function requestPolicy(method: string, headers: HeaderMap): RequestPolicy {
  if (method !== 'GET' && method !== 'HEAD') return NEVER;
  const cc = parseCacheControl(headers['cache-control']);
  if (cc.has('no-store')) return NEVER;
  const pragmaNoCache = parseCacheControl(headers.pragma).has('no-cache');
  const maxAgeValue = cc.get('max-age');
  const minFreshValue = cc.get('min-fresh');
  return {
    lookup: !cc.has('no-cache') && !pragmaNoCache,
    // Only a GET's answer carries the body a later GET needs.
    store: method === 'GET',
    // An unreadable value is the strictest reading: nothing cached is acceptable.
    maxAge: maxAgeValue === undefined ? undefined : (deltaSeconds(maxAgeValue) ?? 0),
    minFresh: minFreshValue === undefined ? undefined : (deltaSeconds(minFreshValue) ?? 2 ** 31),
  };
}

/**
 * Statuses cacheable by default (RFC 9110 §15.1) less 206 (a part is not the answer to a later
 * request); explicit freshness is still required.
 */
const STORABLE_STATUSES: ReadonlySet<number> = new Set([200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]);

export type NotStoredReason =
  | 'method'
  | 'request-no-store'
  | 'status'
  | 'no-store'
  | 'private'
  | 'no-cache'
  | 'set-cookie'
  | 'vary-star'
  | 'authorization'
  | 'content-range'
  | 'length-unknown'
  | 'not-fresh';

export type Storability =
  | {
      storable: true;
      /** Seconds the answer is fresh for, counted from its initial age. */
      lifetime: number;
      /** Seconds old on arrival (the origin's Age). */
      initialAge: number;
      /** Lower-cased, sorted, no duplicates. */
      vary: string[];
      /** Body bytes (Content-Length; 0 for 204). */
      size: number;
      /** The stored answer may answer requests with Authorization (§3.5). */
      allowsAuthorized: boolean;
    }
  | { storable: false; reason: NotStoredReason };

export interface OriginAnswer {
  method: string;
  requestHeaders: HeaderMap;
  status: number;
  headers: HeaderMap;
  /** Unix milliseconds when the answer arrived. */
  now: number;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;

/** Vary's field names, lower-cased, sorted and unique; '*' when the answer varies on anything (or Vary is unreadable). */
export function varyNames(value: string | string[] | undefined): string[] | '*' {
  const text = joined(value);
  if (text === undefined) return [];
  const names = new Set<string>();
  for (const part of text.split(',')) {
    const name = part.trim().toLowerCase();
    if (name === '') continue;
    if (name === '*' || !TOKEN.test(name)) return '*';
    names.add(name);
  }
  return [...names].sort();
}

function parseDate(v: string | string[] | undefined): number | undefined {
  const text = joined(v);
  if (text === undefined) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
}

/**
 * §4.2.1: s-maxage (a shared cache's own), else max-age, else Expires minus Date; 0 when there is none
 * or it is invalid (an invalid Expires, such as "0", means already expired).
 */
export function freshnessLifetime(cc: Directives, headers: HeaderMap, now: number): number {
  if (cc.has('s-maxage')) return deltaSeconds(cc.get('s-maxage')) ?? 0;
  if (cc.has('max-age')) return deltaSeconds(cc.get('max-age')) ?? 0;
  if (headers.expires === undefined) return 0;
  const expires = parseDate(headers.expires);
  if (expires === undefined) return 0;
  const date = parseDate(headers.date) ?? now;
  return Math.max(0, Math.floor((expires - date) / 1000));
}

/** A single, well-formed Content-Length; undefined otherwise. */
function contentLength(v: string | string[] | undefined): number | undefined {
  if (typeof v !== 'string' || !/^\d{1,15}$/.test(v.trim())) return undefined;
  return Number(v.trim());
}

/** §3 and §3.5 for a shared cache, plus what this cache needs: a known length, one whole body. */
export function storability(a: OriginAnswer): Storability {
  const no = (reason: NotStoredReason): Storability => ({ storable: false, reason });
  if (a.method !== 'GET') return no('method');
  if (parseCacheControl(a.requestHeaders['cache-control']).has('no-store')) return no('request-no-store');
  if (!STORABLE_STATUSES.has(a.status)) return no('status');
  const cc = parseCacheControl(a.headers['cache-control']);
  if (cc.has('no-store')) return no('no-store');
  if (cc.has('private')) return no('private');
  // Stored, it could only be used after revalidation, which this cache does not do.
  if (cc.has('no-cache')) return no('no-cache');
  // Another client's cookie must never be replayed.
  if (a.headers['set-cookie'] !== undefined) return no('set-cookie');
  const vary = varyNames(a.headers.vary);
  if (vary === '*') return no('vary-star');
  const allowsAuthorized = cc.has('public') || cc.has('s-maxage') || cc.has('must-revalidate');
  if (a.requestHeaders.authorization !== undefined && !allowsAuthorized) return no('authorization');
  if (a.headers['content-range'] !== undefined) return no('content-range');
  let size: number | undefined;
  if (a.status === 204) size = 0;
  else if (a.headers['transfer-encoding'] === undefined) size = contentLength(a.headers['content-length']);
  if (size === undefined) return no('length-unknown');
  const lifetime = freshnessLifetime(cc, a.headers, a.now);
  const initialAge = deltaSeconds(joined(a.headers.age)?.trim()) ?? 0;
  if (lifetime <= initialAge) return no('not-fresh');
  return { storable: true, lifetime, initialAge, vary, size, allowsAuthorized };
}

/** §4.2.3, with the initial age as stored: whole seconds. */
export function currentAge(initialAge: number, storedAt: number, now: number): number {
  return initialAge + Math.max(0, Math.floor((now - storedAt) / 1000));
}

/** Fresh for this request: younger than the lifetime (§4.2) and within the request's max-age / min-fresh (§5.2.1). */
export function isFresh(lifetime: number, age: number, req: Pick<RequestPolicy, 'maxAge' | 'minFresh'>): boolean {
  if (age >= lifetime) return false;
  if (req.maxAge !== undefined && age > req.maxAge) return false;
  if (req.minFresh !== undefined && lifetime - age < req.minFresh) return false;
  return true;
}

/** Hop-by-hop fields (RFC 9110 §7.6.1) are never stored or replayed; Age is recomputed on every answer. */
const NOT_STORED: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
  'set-cookie',
  'age',
]);

/** The origin's response headers as stored and replayed: lower-case names, repeated fields joined. */
export function storedHeaders(headers: HeaderMap): Record<string, string> {
  const named = new Set(
    (joined(headers.connection) ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter((s) => s !== ''),
  );
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || NOT_STORED.has(lower) || named.has(lower)) continue;
    out[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** What a stored 2xx answer can be compared with. */
export type StoredValidators = Validators;

export function validatorsOf(headers: Record<string, string>): StoredValidators {
  const etag = headers.etag?.trim();
  return { etag: etag === '' ? undefined : etag, lastModified: parseDate(headers['last-modified']) };
}

// The origin's entity tags compared as sent (RFC 9110), not as the S3 surface reads its own.
const CACHE_CONDITIONALS: ConditionalOptions = { etags: 'opaque' };

/**
 * RFC 9110 §13.1.2/§13.1.3 for a GET or HEAD: If-None-Match (weak comparison) decides when present,
 * else If-Modified-Since against the stored Last-Modified. Only the 304 half: If-Match and
 * If-Unmodified-Since are the origin's (hasOriginPreconditions).
 */
export function isNotModified(req: HeaderMap, v: StoredValidators): boolean {
  const p = { ifNoneMatch: joined(req['if-none-match']), ifModifiedSince: joined(req['if-modified-since']) };
  return evaluatePreconditions(p, v, CACHE_CONDITIONALS)?.kind === 'not-modified';
}

/** Preconditions this cache leaves to the origin (they are about the origin's current state). */
export function hasOriginPreconditions(req: HeaderMap): boolean {
  return req['if-match'] !== undefined || req['if-unmodified-since'] !== undefined;
}

/** RFC 9110 §13.1.5: a Range applies only if If-Range names the stored answer by a strong ETag or its exact Last-Modified. */
export function ifRangeHolds(req: HeaderMap, v: StoredValidators): boolean {
  return ifRangeNames(joined(req['if-range']), v);
}

/** Fields a 304 carries (RFC 9110 §15.4.5), from the stored answer. */
const NOT_MODIFIED_FIELDS = ['cache-control', 'content-location', 'date', 'etag', 'expires', 'last-modified', 'vary'] as const;

export function notModifiedHeaders(stored: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of NOT_MODIFIED_FIELDS) {
    const v = stored[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}
