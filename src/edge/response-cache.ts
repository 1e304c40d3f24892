// Origins' answers kept for the edge proxy, in the CDN's cache tiers (src/cdn/cdn-cache.ts). What may
// be stored and served is decided by the rules in cacheability.ts; this module keeps the metadata of
// each stored answer (status, replayed headers, Vary, age and lifetime) in a bounded lru-cache of its
// own and the bytes in the tiers, under a fresh version id per stored answer (the tiers' ETag) and the
// hostname's owner (proxyCacheOwner), so a hostname's answers are purged together.
//
// The handler asks lookup() first; on undefined it forwards the request and offers the origin's answer
// to store(), which either hands the origin's body to the tiers as a fill and returns the answer to
// send from that fill (requests that look up while it runs join it: one origin request however many
// clients, each reading at its own pace), or returns undefined, leaving the body untouched for the
// caller to pipe. Concurrent misses that arrive before the origin's headers still each go to the
// origin (no request collapsing: a request that waited for another's origin would wait for an answer
// that may turn out private).
//
// Ranges: a Range on a stored 200 is served from the whole stored body (206); an unsatisfiable one is
// left to the origin. On a miss the handler forwards Range as is, and a 206 is never stored.
// The metadata lives in this process only: after a restart everything is a miss, and bodies the tiers
// kept from before (or whose metadata the lru dropped) are evicted by the tiers' own bounds. For the
// same reason each process stores its answers under keys of its own (tierKey): the disk tier is shared
// by every worker of the data directory, and another worker, which cannot know this process's
// versions, would otherwise replace a large answer with its own at every request, and this one its.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { LRUCache } from 'lru-cache';
import type { CacheStatus } from '../db/repos/request-records.js';
import type { CacheResult, CdnCache, HeldObject } from '../cdn/cdn-cache.js';
import { headersFrom } from '../http/request-target.js';
import { isS3Error } from '../errors/s3-errors.js';
import { parseRange } from '../http/range.js';
import type { ReadRange } from '../storage/backend.js';
import {
  currentAge,
  hasOriginPreconditions,
  ifRangeHolds,
  isFresh,
  isNotModified,
  notModifiedHeaders,
  requestPolicy,
  storability,
  storedHeaders,
  validatorsOf,
  type HeaderMap,
  type Storability,
  type StoredValidators,
} from './cacheability.js';
import { proxyCacheOwner } from '../db/repos/hostname-model.js';

/** An answer storable() let through, and when it decided. */
export interface StorableAnswer {
  verdict: Extract<Storability, { storable: true }>;
  now: number;
}

/** What lookup() and store() need of the client's request. */
export interface ProxyRequest {
  method: string;
  /** The raw request target (path and query), as received. */
  url: string;
  headers: IncomingHttpHeaders;
}

export interface CachedAnswer {
  status: number;
  /** To send as they are (Age included); the handler adds its own (X-Cache, ...). */
  headers: Record<string, string>;
  /** null for HEAD and 304. */
  body: Buffer | Readable | null;
  /** HIT; MISS for a store() and for a lookup() that joined a fill still running; EXPIRED for a store() that replaced a stored answer. */
  cacheStatus: CacheStatus;
}

export interface ProxyResponseCacheOptions {
  /** Stored answers whose metadata is kept (least recently used dropped first). */
  maxEntries: number;
  /** Unix milliseconds: the answers' Date and Expires are compared with it (tests inject a clock). */
  now: () => number;
  /**
   * A monotonic clock in ms for how long an answer has been held (its resident age): a wall-clock step
   * back must not keep answers fresh an hour longer, nor one forward expire them all. Default performance.now.
   */
  elapsed?: () => number;
}

interface Entry {
  /** The tiers' key: target and the Vary'd request headers. */
  key: string;
  /** The tiers' ETag: one per stored answer. */
  version: string;
  status: number;
  headers: Record<string, string>;
  validators: StoredValidators;
  size: number;
  /** When it was stored, on the `elapsed` clock (ms). */
  storedAt: number;
  initialAge: number;
  lifetime: number;
  allowsAuthorized: boolean;
}

/** Longer keys are hashed: they go into cache file headers, which are bounded. */
const MAX_KEY_CHARS = 1024;

function keyOf(hostname: string, rest: string): string {
  const prefix = `p/${hostname}/`;
  if (prefix.length + rest.length <= MAX_KEY_CHARS) return prefix + rest;
  // '#' never starts a request target, so a hashed key cannot equal a plain one.
  return `${prefix}#${createHash('sha256').update(rest).digest('hex')}`;
}

/** A request header's value as a variant key part: absent differs from empty; spaces around commas do not count. */
function varyPart(name: string, value: string | string[] | undefined): string {
  if (value === undefined) return name;
  const text = Array.isArray(value) ? value.join(',') : value;
  return `${name}:${text.trim().replace(/\s*,\s*/g, ',')}`;
}

function variantKey(hostname: string, url: string, vary: readonly string[], headers: IncomingHttpHeaders): string {
  // Neither a request target nor a header value can hold a line feed.
  return keyOf(hostname, [url, ...vary.map((name) => varyPart(name, headers[name]))].join('\n'));
}

function rangeOf(header: string | string[] | undefined, size: number): ReadRange | 'unsatisfiable' | undefined {
  try {
    return parseRange(Array.isArray(header) ? header.join(',') : header, size);
  } catch (err) {
    if (isS3Error(err) && err.code === 'InvalidRange') return 'unsatisfiable';
    throw err;
  }
}

export class ProxyResponseCache {
  /** This process's part of the tiers' keys (tierKey). */
  private readonly tag = randomBytes(8).toString('hex');
  // Made with the first proxied answer: an LRU allocates its whole index at once (a few MB and tens of
  // milliseconds at 100,000 entries), which a server that proxies nothing should not pay at its start.
  private entriesLru: LRUCache<string, Entry> | undefined;
  /** Per target: the Vary names of the answer stored last, which select the variant key. */
  private variesLru: LRUCache<string, readonly string[]> | undefined;

  private readonly elapsed: () => number;

  constructor(
    private readonly cdnCache: CdnCache,
    private readonly opts: ProxyResponseCacheOptions,
  ) {
    this.elapsed = opts.elapsed ?? (() => performance.now());
  }

  private get entries(): LRUCache<string, Entry> {
    return (this.entriesLru ??= new LRUCache<string, Entry>({ max: this.opts.maxEntries }));
  }

  private get varies(): LRUCache<string, readonly string[]> {
    return (this.variesLru ??= new LRUCache<string, readonly string[]>({ max: this.opts.maxEntries }));
  }

  /** Whether anything is stored for this target (any variant): when not, lookup() would find nothing. */
  holdsTarget(hostname: string, url: string): boolean {
    return this.varies.has(keyOf(hostname, url));
  }

  /** A fresh stored answer for this request, or undefined: forward it, then offer the answer to store(). */
  async lookup(hostname: string, req: ProxyRequest): Promise<CachedAnswer | undefined> {
    const policy = requestPolicy(req.method, req.headers);
    if (!policy.lookup) return undefined;
    const vary = this.varies.get(keyOf(hostname, req.url));
    if (vary === undefined) return undefined;
    const entry = this.entries.get(variantKey(hostname, req.url, vary, req.headers));
    if (!entry) return undefined;
    if (req.headers.authorization !== undefined && !entry.allowsAuthorized) return undefined;
    const age = currentAge(entry.initialAge, entry.storedAt, this.elapsed());
    if (age >= entry.lifetime) {
      // Stale for everyone: the answer stored next replaces it.
      this.forget(entry);
      return undefined;
    }
    if (!isFresh(entry.lifetime, age, policy) || hasOriginPreconditions(req.headers)) return undefined;
    const held: HeldObject = { key: this.tierKey(entry.key), etag: entry.version, size: entry.size, owner: proxyCacheOwner(hostname) };
    const headers = headersFrom(entry.headers);
    headers.age = String(age);
    // Conditionals and ranges apply to successful answers only (RFC 9110 §13.2.1, §14.2).
    if (entry.status >= 200 && entry.status < 300 && isNotModified(req.headers, entry.validators)) {
      const notModified = notModifiedHeaders(entry.headers);
      notModified.age = String(age);
      return this.withoutBody(entry, held, 304, notModified);
    }
    if (req.method === 'HEAD') return this.withoutBody(entry, held, entry.status, headers);
    let range: ReadRange | undefined;
    if (entry.status === 200 && req.headers.range !== undefined && ifRangeHolds(req.headers, entry.validators)) {
      const r = rangeOf(req.headers.range, entry.size);
      if (r === 'unsatisfiable') return undefined;
      range = r;
    }
    const result = await this.cdnCache.readHeld(held, range ? { range } : {});
    if (!result) {
      // The tiers let the bytes go (evicted, purged, a failed fill): a miss after all.
      this.forget(entry);
      return undefined;
    }
    if (!range) return { status: entry.status, headers, body: result.body, cacheStatus: result.status };
    return {
      status: 206,
      headers: Object.assign(headers, { 'content-length': String(range.end - range.start + 1), 'content-range': `bytes ${range.start}-${range.end}/${entry.size}` }),
      body: result.body,
      cacheStatus: result.status,
    };
  }

  /**
   * Whether the origin's answer to `req` may be stored: what store() needs, or undefined (the caller
   * pipes the answer itself, without the promise store() is).
   */
  storable(req: ProxyRequest, originStatus: number, originHeaders: HeaderMap): StorableAnswer | undefined {
    if (!requestPolicy(req.method, req.headers).store) return undefined;
    const now = this.opts.now();
    const verdict = storability({ method: req.method, requestHeaders: req.headers, status: originStatus, headers: originHeaders, now });
    return verdict.storable ? { verdict, now } : undefined;
  }

  /**
   * Offers the origin's answer to a GET that lookup() missed. Storable (`decided`: storable()'s verdict) and accepted by
   * the tiers: the answer to send, its body read from the fill; else undefined and `body` untouched.
   * Rejects if the origin's body fails before anything was handed over (a small body is handed over
   * whole): the caller answers 502. A failure later ends the returned body with an error.
   */
  async store(
    hostname: string,
    req: ProxyRequest,
    originStatus: number,
    originHeaders: HeaderMap,
    body: Readable,
    decided: StorableAnswer | undefined = this.storable(req, originStatus, originHeaders),
  ): Promise<CachedAnswer | undefined> {
    if (decided === undefined) return undefined;
    const { verdict, now } = decided;
    const headers = storedHeaders(originHeaders);
    const entry: Entry = {
      key: variantKey(hostname, req.url, verdict.vary, req.headers),
      version: randomUUID(),
      status: originStatus,
      headers,
      validators: validatorsOf(headers),
      size: verdict.size,
      storedAt: this.elapsed(),
      initialAge: verdict.initialAge,
      lifetime: verdict.lifetime,
      allowsAuthorized: verdict.allowsAuthorized,
    };
    const reading = this.cdnCache.read({ key: this.tierKey(entry.key), etag: entry.version, size: entry.size, owner: proxyCacheOwner(hostname), open: () => Promise.resolve(body) });
    // In the tick read() registered its fill: whoever finds this entry finds the fill too.
    this.varies.set(keyOf(hostname, req.url), verdict.vary);
    this.entries.set(entry.key, entry);
    // A body that fails or is cut short caches nothing (the fill checks the length too).
    finished(body).catch(() => this.forget(entry));
    let result: CacheResult;
    try {
      result = await reading;
    } catch (err) {
      this.forget(entry);
      throw err;
    }
    if (result.status === 'BYPASS') {
      // Too big for the tiers (or their room is promised to fills in flight): `body` itself, unread.
      this.forget(entry);
      return undefined;
    }
    const answerHeaders = headersFrom(headers);
    answerHeaders.age = String(verdict.initialAge);
    return { status: originStatus, headers: answerHeaders, body: result.body, cacheStatus: result.status };
  }

  /** Drops every answer stored for `hostname`; returns the number of bodies the tiers dropped. */
  purgeHostname(hostname: string): number {
    const prefix = `p/${hostname}/`;
    for (const key of [...this.entries.keys()]) if (key.startsWith(prefix)) this.entries.delete(key);
    for (const key of [...this.varies.keys()]) if (key.startsWith(prefix)) this.varies.delete(key);
    return this.cdnCache.purgeOwner(proxyCacheOwner(hostname));
  }

  /**
   * The tiers' key of a stored answer: the variant key and this process's tag, after a line feed and
   * '@' (no Vary'd header name starts with '@'; a collision would only be a version mismatch anyway).
   */
  private tierKey(key: string): string {
    return `${key}\n@${this.tag}`;
  }

  /** Stored answers whose metadata is kept (their bytes may have been evicted since). */
  get size(): number {
    return this.entries.size;
  }

  /** HEAD and 304 need no bytes, but are answered only while a GET could be. */
  private withoutBody(entry: Entry, held: HeldObject, status: number, headers: Record<string, string>): CachedAnswer | undefined {
    if (!this.cdnCache.holds(held)) {
      this.forget(entry);
      return undefined;
    }
    return { status, headers, body: null, cacheStatus: 'HIT' };
  }

  private forget(entry: Entry): void {
    if (this.entries.peek(entry.key) === entry) this.entries.delete(entry.key);
  }
}
