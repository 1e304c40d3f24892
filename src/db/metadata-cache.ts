// A node's cache of the metadata rows its hot paths read on every request (docs/SCALE.md, part 2):
// the current version of an object with a small object's bytes (S3 GET/HEAD, the CDN's public bucket
// objects) and buckets by name. Coherence comes from the database, not from a TTL. On PostgreSQL every
// commit that changes an object or bucket row names it on the change feed (migration 005, NOTIFY
// s3edge_rows; pg-change-feed.ts), and the entry is dropped as the note arrives. On SQLite a look at
// the connection's data_version drops everything when any other connection committed (sqlite-store.ts
// SqliteRowChanges). Answers found and not found are both kept (an insert is a change like any other).
//
// A write acknowledged by any process is read at once by every process (the lease, the source's
// `leaseMs`: COHERENCE_LEASE_MS on PostgreSQL, SQLITE_COHERENCE_LEASE_MS on SQLite):
// - a process acknowledges a commit that changed cached rows only a lease after COMMIT answered
//   (pg-store.ts, sqlite-store.ts: `leaseAfterCommit`);
// - an entry is served for a lookup begun at t only once a confirmation begun after t - lease has ended
//   (PostgreSQL: a round trip on the change feed's connection; SQLite: a look at data_version), and is
//   still there then. A
//   request that reaches a node after another node acknowledged a write began at least a lease after
//   that commit, so the round trip was sent after the commit, and PostgreSQL delivers the commit's
//   notes before that round trip's answer (SQLite's look sees every commit before it). Under traffic the
//   confirmations stay fresh (one per half lease or per lease, shared by every lookup): a hit seldom
//   waits, and the confirmation's cost is shared by every request of the lease.
// - A lookup begun at t joins a load in flight only if that load began after t - lease
//   (its read then follows every acknowledged write); otherwise it loads anew.
// - A load that an invalidation of its key (or a reset) overtakes is not kept: its row may be older
//   than the change (as in found-cache.ts, the load is taken out of `loads`, and only a load still
//   there may store its answer).
// - While the feed is not live (its connection lost, or not yet resynchronised) nothing is served from
//   here or stored: every read goes to the database. Losing and regaining the feed both drop everything.
// - Values are frozen: one object is shared by every request that reads it.
import { LRUCache } from 'lru-cache';
import { setTimeout as delay } from 'node:timers/promises';
import type { Bucket } from './repos/buckets.js';
import type { ObjectRecord } from './repos/objects.js';

/** What a committed change names (migration 005's notes). */
export type RowChange =
  | { kind: 'object'; bucketId: string; key: string }
  | { kind: 'bucket-objects'; bucketId: string }
  | { kind: 'bucket'; name: string }
  | { kind: 'all' };

export interface RowChangeListener {
  changed(change: RowChange): void;
  /** The feed was lost, or regained: whatever is cached may have missed changes. */
  reset(): void;
}

/**
 * How long after COMMIT answered a node acknowledges a write of cached rows, and how recent (sent after
 * the lookup began, less this) a confirmation must be for an entry to be served. The same on every node
 * of one database (a constant of the version).
 */
export const COHERENCE_LEASE_MS = 10;
/**
 * The same on SQLite, where every process of one data directory is on one machine: a look at
 * data_version costs a read lock (four fcntl calls, ~15 µs under load), so a worker looks at most once a
 * lease, and a write of cached rows is acknowledged a millisecond later.
 */
export const SQLITE_COHERENCE_LEASE_MS = 1;

/** A statement that may change cached rows: not a SELECT, and it names their tables (or a cascade of one that does). */
const CACHED_TABLES = /\b(objects|buckets)\b/i;
const READ_ONLY = /^\s*SELECT\b/i;
export function changesCachedRows(sql: string): boolean {
  return !READ_ONLY.test(sql) && CACHED_TABLES.test(sql);
}

/**
 * Holds a write's acknowledgment for `ms` after its COMMIT answered, by the monotonic clock (a timer may
 * fire early against it when the event loop was busy: the rest is waited again).
 */
export async function leaseAfterCommit(ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now()) await delay(Math.ceil(left));
}

/** Where the cache hears of committed changes (PgChangeFeed, SqliteRowChanges). */
export interface RowChangeSource {
  /** True while changes are heard: only then may a cached answer be served. */
  readonly live: boolean;
  /** The lease writers of this database hold their acknowledgments for (ms). */
  readonly leaseMs: number;
  subscribe(listener: RowChangeListener): void;
  /** Whether every note committed before `time` (performance.now()) has been applied, as far as known now. */
  confirmedAfter(time: number): boolean;
  /** Resolves once every note committed before `time` has been applied, or the feed is lost. */
  confirmAfter(time: number): Promise<void>;
}

/** The current version of a key, with its bytes when it is a small object kept in the database. */
export interface CachedObject {
  rec: ObjectRecord;
  inline?: Buffer;
}

export interface MetadataCacheOptions {
  /** Bytes of object entries at most (estimated: the inline bytes, the key, the record's strings). */
  maxBytes: number;
  /** Buckets by name kept at most; default 10,000. */
  maxBuckets?: number;
}

export interface MetadataCacheStats {
  hits: number;
  misses: number;
  /** Hits that waited for a confirmation (none under steady traffic). */
  waits: number;
  /** Entries (or loads in flight) dropped by a change note. */
  invalidations: number;
  /** Times everything was dropped: the feed lost or regained, or a note naming everything. */
  resets: number;
}

/** A cached "no such row". */
const NONE = Symbol('none');
type Slot<V> = V | typeof NONE;

/** Fixed cost of an entry beyond its strings and bytes: the record's object, the LRU's bookkeeping. */
const ENTRY_OVERHEAD = 400;

interface Load<V> {
  /** performance.now() when it began: its read follows every commit acknowledged a lease before. */
  startedAt: number;
  promise: Promise<V | undefined>;
}

class LoadingCache<V extends object> {
  readonly entries: LRUCache<string, Slot<V>>;
  /** Loads in flight; an invalidation removes a key's, so that its answer is not stored. */
  readonly loads = new Map<string, Load<V>>();

  constructor(
    options: LRUCache.Options<string, Slot<V>, unknown>,
    private readonly source: RowChangeSource,
    private readonly stats: MetadataCacheStats,
    private readonly freeze: (value: V) => V,
  ) {
    this.entries = new LRUCache(options);
  }

  get(id: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    if (!this.source.live) return load();
    const begun = performance.now();
    const hit = this.entries.get(id);
    if (hit !== undefined) {
      if (this.source.confirmedAfter(begun - this.source.leaseMs)) {
        this.stats.hits++;
        return Promise.resolve(hit === NONE ? undefined : hit);
      }
      return this.afterConfirmation(id, begun, load);
    }
    return this.miss(id, begun, load);
  }

  /** A hit not yet confirmed: once it is, the entry if the notes applied meanwhile left it. */
  private async afterConfirmation(id: string, begun: number, load: () => Promise<V | undefined>): Promise<V | undefined> {
    this.stats.waits++;
    await this.source.confirmAfter(begun - this.source.leaseMs);
    if (!this.source.live) return load();
    const hit = this.entries.get(id);
    if (hit === undefined) return this.miss(id, begun, load);
    this.stats.hits++;
    return hit === NONE ? undefined : hit;
  }

  private miss(id: string, begun: number, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const current = this.loads.get(id);
    if (current !== undefined && current.startedAt > begun - this.source.leaseMs) return current.promise;
    this.stats.misses++;
    const started: Load<V> = { startedAt: performance.now(), promise: load() };
    started.promise = started.promise.then(
      (value) => {
        // Still ours: no change to this key, no reset and no newer load came while it loaded.
        if (this.loads.get(id) === started) {
          this.loads.delete(id);
          this.entries.set(id, value === undefined ? NONE : this.freeze(value));
        }
        return value;
      },
      (err: unknown) => {
        if (this.loads.get(id) === started) this.loads.delete(id);
        throw err;
      },
    );
    this.loads.set(id, started);
    return started.promise;
  }

  forget(id: string): void {
    const entry = this.entries.delete(id);
    if (this.loads.delete(id) || entry) this.stats.invalidations++;
  }

  /** Every entry and load whose id starts with `prefix`. */
  forgetPrefix(prefix: string): void {
    const ids = [...this.entries.keys(), ...this.loads.keys()].filter((id) => id.startsWith(prefix));
    for (const id of ids) this.forget(id);
  }

  clear(): void {
    this.entries.clear();
    this.loads.clear();
  }
}

export class MetadataCache implements RowChangeListener {
  private readonly objects: LoadingCache<CachedObject>;
  private readonly buckets: LoadingCache<Bucket>;
  readonly stats: MetadataCacheStats = { hits: 0, misses: 0, waits: 0, invalidations: 0, resets: 0 };

  constructor(
    private readonly source: RowChangeSource,
    options: MetadataCacheOptions,
  ) {
    const maxSize = Math.max(1, options.maxBytes);
    this.objects = new LoadingCache<CachedObject>(
      {
        maxSize,
        // One large inline object may not push out most of the rest.
        maxEntrySize: Math.max(1, Math.floor(maxSize / 8)),
        sizeCalculation: (slot, id) => (slot === NONE ? ENTRY_OVERHEAD + id.length : objectSize(slot, id)),
      },
      source,
      this.stats,
      freezeObject,
    );
    this.buckets = new LoadingCache<Bucket>({ max: options.maxBuckets ?? 10_000 }, source, this.stats, Object.freeze);
    source.subscribe(this);
  }

  /** Whether answers are served from here now (the feed is live). */
  get serving(): boolean {
    return this.source.live;
  }

  /** The current version of `key` in the bucket, or undefined; `load` reads it from the database. */
  object(bucketId: string, key: string, load: () => Promise<CachedObject | undefined>): Promise<CachedObject | undefined> {
    return this.objects.get(objectId(bucketId, key), load);
  }

  /** The bucket named `name`, or undefined; `load` reads it from the database. */
  bucket(name: string, load: () => Promise<Bucket | undefined>): Promise<Bucket | undefined> {
    return this.buckets.get(name, load);
  }

  changed(change: RowChange): void {
    switch (change.kind) {
      case 'object':
        this.objects.forget(objectId(change.bucketId, change.key));
        return;
      case 'bucket-objects':
        this.objects.forgetPrefix(objectId(change.bucketId, ''));
        return;
      case 'bucket':
        this.buckets.forget(change.name);
        return;
      case 'all':
        this.reset();
        return;
    }
  }

  reset(): void {
    this.stats.resets++;
    this.objects.clear();
    this.buckets.clear();
  }
}

/** A bucket id holds no '/' (db/ids.ts), so the id ends where the key begins. */
function objectId(bucketId: string, key: string): string {
  return `${bucketId}/${key}`;
}

function objectSize(value: CachedObject, id: string): number {
  const { rec } = value;
  let strings = id.length + rec.blobId.length + rec.etag.length + rec.sha256.length;
  for (const s of [rec.contentType, rec.contentEncoding, rec.contentDisposition, rec.contentLanguage, rec.cacheControl, rec.expires, rec.checksumValue]) {
    if (s) strings += s.length;
  }
  for (const [k, v] of Object.entries(rec.userMetadata)) strings += k.length + v.length;
  for (const [k, v] of rec.tagging ?? []) strings += k.length + v.length;
  const parts = (rec.parts?.length ?? 0) * 160;
  // UTF-16 strings: two bytes a character.
  return ENTRY_OVERHEAD + 2 * strings + parts + (value.inline?.length ?? 0);
}

function freezeObject(value: CachedObject): CachedObject {
  const { rec } = value;
  Object.freeze(rec.userMetadata);
  if (rec.parts) {
    for (const part of rec.parts) Object.freeze(part);
    Object.freeze(rec.parts);
  }
  if (rec.tagging) {
    for (const tag of rec.tagging) Object.freeze(tag);
    Object.freeze(rec.tagging);
  }
  Object.freeze(rec);
  return Object.freeze(value);
}
