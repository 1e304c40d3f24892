// The CDN edge cache: a memory tier (small bodies, lru-cache bounded by bytes) and a disk tier
// (<dataDir>/cdn-cache, bounded by bytes, survives restarts) in front of the storage backend.
//
// The cache stores bytes, never decisions: the CDN handler reads the object's metadata row, decides
// access and conditionals on every request, and then asks the cache for the bytes of the version that
// row names (its ETag). An entry holding another ETag is EXPIRED and refetched, so stale bytes are
// never served even if a purge was missed. Concurrent misses for one object share one storage read
// (single flight); a miss fills the whole object even when it asked for a range, and a HEAD or a
// conditional answer never fills anything. The edge proxy's response cache (src/edge/response-cache.ts)
// keeps origins' answers here too: it fills through read() with the origin's body, and reads with
// readHeld(), which never starts a fill, since nothing but the origin's answer can supply those bytes.
import type { Readable } from 'node:stream';
import { open, type FileHandle } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { CacheStatus } from '../analytics/request-log.js';
import type { ReadRange } from '../storage/backend.js';
import { BufferPool } from '../storage/buffer-pool.js';
import { FileBody } from '../storage/file-body.js';
import { compress, MIN_COMPRESS_BYTES, type Coding } from './cache/compression.js';
import { DiskTier, type DiskEntry } from './cache/disk-tier.js';
import { Fill } from './cache/fill.js';
import { FollowReader } from './cache/follow-reader.js';
import { MemoryTier } from './cache/memory-tier.js';
import { SingleFlight } from './cache/single-flight.js';

/** What is served: never the URL or its query string, so `?response-content-type=...` cannot split it. */
export function assetCacheKey(assetId: string): string {
  return `a/${assetId}`;
}

export function objectCacheKey(bucketId: string, key: string): string {
  return `o/${bucketId}/${key}`;
}

/** One version of an object, as the handler found it in the metadata database. */
export interface CacheObject {
  key: string;
  etag: string;
  size: number;
  /** The user who owns it (purge of everything a user owns). */
  owner: string;
  /**
   * Opens the object's bytes (or a range) in storage. The cache calls it synchronously from read(),
   * so a caller that calls read() in the tick of its metadata lookup keeps its blob lease guarantee.
   */
  open(range?: ReadRange): Promise<Readable>;
}

/** A version as the cache knows it, without a way to open its bytes (EdgeCache.holds, readHeld). */
export type HeldObject = Omit<CacheObject, 'open'>;

export interface ReadOptions {
  /** Inclusive byte range; the cache still fills the whole object on a miss. */
  range?: ReadRange;
  /** A compressed variant (only ever granted for a whole body the memory tier holds). */
  coding?: Coding;
}

export interface CacheResult {
  status: CacheStatus;
  /** Unix milliseconds when the bytes were cached; undefined for BYPASS. */
  cachedAt: number | undefined;
  /** Set when `body` is the compressed variant asked for. */
  coding: Coding | undefined;
  /** The range asked for (or the whole object), possibly compressed. */
  body: Buffer | Readable;
}

export interface EdgeCacheStats {
  /** Storage reads the CDN made: one per fill, one per BYPASS body. */
  storageReads: number;
  hits: number;
  misses: number;
  expired: number;
  bypasses: number;
  memoryBytes: number;
  /** Bodies in memory, compressed variants included. */
  memoryEntries: number;
  diskBytes: number;
  diskEntries: number;
  fillsInFlight: number;
}

export interface EdgeCacheOptions {
  /** The disk tier's directory (<dataDir>/cdn-cache). */
  dir: string;
  memoryBytes: number;
  memoryEntryMaxBytes: number;
  diskBytes: number;
  /** Unix milliseconds (tests inject a clock). */
  now: () => number;
  log: Pick<Logger, 'warn'>;
}

export class EdgeCache {
  private readonly flights = new SingleFlight<Fill>();
  private readonly compressing = new Map<string, Promise<Buffer>>();
  /** Disk hits of large objects stream from files through these (like the storage backend's reads). */
  private readonly buffers = new BufferPool(8);
  private readonly counters = { storageReads: 0, hits: 0, misses: 0, expired: 0, bypasses: 0 };

  private constructor(
    private readonly opts: EdgeCacheOptions,
    private readonly memory: MemoryTier,
    private readonly disk: DiskTier,
  ) {}

  static async open(opts: EdgeCacheOptions): Promise<EdgeCache> {
    const disk = await DiskTier.open({ dir: opts.dir, maxBytes: opts.diskBytes, log: opts.log });
    return new EdgeCache(opts, new MemoryTier(opts.memoryBytes, opts.memoryEntryMaxBytes), disk);
  }

  /** Whether a body of `size` bytes may be served compressed (it must fit the memory tier). */
  canCompress(size: number): boolean {
    return size >= MIN_COMPRESS_BYTES && this.memory.accepts(size);
  }

  /**
   * For answers that need no bytes (HEAD, 304): HIT when the current version is cached, else BYPASS.
   * Never fills. The entry's cachedAt comes along for the Age header.
   */
  probe(obj: Pick<CacheObject, 'key' | 'etag'>): { status: 'HIT' | 'BYPASS'; cachedAt: number | undefined } {
    const mem = this.memory.peek(obj.key);
    const disk = mem?.etag === obj.etag ? undefined : this.disk.peek(obj.key);
    const cachedAt = mem?.etag === obj.etag ? mem.cachedAt : disk?.etag === obj.etag ? disk.cachedAt : undefined;
    if (cachedAt === undefined) {
      this.counters.bypasses++;
      return { status: 'BYPASS', cachedAt };
    }
    this.counters.hits++;
    return { status: 'HIT', cachedAt };
  }

  /**
   * The memory tier's body of this version, counted as a hit, or undefined (then read()): the hot path
   * of a small object, answered in the request's own tick.
   */
  memoryHit(obj: Pick<CacheObject, 'key' | 'etag'>): { body: Buffer; cachedAt: number } | undefined {
    const mem = this.memory.get(obj.key);
    if (mem?.etag !== obj.etag) return undefined;
    this.counters.hits++;
    return mem;
  }

  /**
   * The bytes of `obj` (its current version): from memory, from disk, or from storage through a fill
   * that other requests for it share. Storage errors before the first byte (e.g. code ENOENT) reject.
   */
  async read(obj: CacheObject, opts: ReadOptions = {}): Promise<CacheResult> {
    const mem = this.memory.get(obj.key);
    if (mem?.etag === obj.etag) {
      this.counters.hits++;
      return this.fromBuffer(obj, mem.body, mem.cachedAt, opts, 'HIT');
    }
    let expired = false;
    if (mem) expired = this.memory.delete(obj.key);
    const disk = this.disk.get(obj.key);
    if (disk?.etag === obj.etag && disk.size === obj.size) return (await this.fromDisk(obj, disk, opts)) ?? this.read(obj, opts);
    if (disk) expired = this.disk.delete(obj.key) || expired;
    let fill = this.flights.get(obj.key);
    if (fill && fill.id.etag !== obj.etag) {
      this.abandon(fill);
      fill = undefined;
      expired = true;
    }
    fill ??= this.startFill(obj);
    if (!fill) {
      // Too big for either tier: straight from storage, every time.
      this.counters.bypasses++;
      this.counters.storageReads++;
      return { status: 'BYPASS', cachedAt: undefined, coding: undefined, body: await obj.open(opts.range) };
    }
    if (expired) this.counters.expired++;
    else this.counters.misses++;
    return this.fromFill(obj, fill, opts, expired ? 'EXPIRED' : 'MISS', (range) => obj.open(range));
  }

  /**
   * Whether this version is in a tier or being filled. Never fills, counts nothing, drops nothing: the
   * proxy cache (src/edge/response-cache.ts) asks it before a HEAD or 304 answer that needs no bytes.
   */
  holds(obj: HeldObject): boolean {
    const disk = this.disk.peek(obj.key);
    return (
      this.memory.peek(obj.key)?.etag === obj.etag ||
      (disk?.etag === obj.etag && disk.size === obj.size) ||
      this.flights.get(obj.key)?.id.etag === obj.etag
    );
  }

  /**
   * Like read(), but never starts a fill: the bytes of this version from a tier, or from the fill that is
   * storing them (joined like a concurrent miss), else undefined. For bodies only a fill started by
   * read() can bring (an origin's answer, which no later request can reopen). Another version found
   * here is left alone: it may be newer than the caller's.
   */
  async readHeld(obj: HeldObject, opts: ReadOptions = {}): Promise<CacheResult | undefined> {
    const mem = this.memory.get(obj.key);
    if (mem?.etag === obj.etag) {
      this.counters.hits++;
      return this.fromBuffer(obj, mem.body, mem.cachedAt, opts, 'HIT');
    }
    const disk = this.disk.get(obj.key);
    if (disk?.etag === obj.etag && disk.size === obj.size) return (await this.fromDisk(obj, disk, opts)) ?? this.readHeld(obj, opts);
    const fill = this.flights.get(obj.key);
    if (fill?.id.etag !== obj.etag) return undefined;
    this.counters.misses++;
    return this.fromFill(obj, fill, opts, 'MISS');
  }

  private startFill(obj: CacheObject): Fill | undefined {
    const keep = this.memory.accepts(obj.size);
    const id = { key: obj.key, etag: obj.etag, owner: obj.owner, size: obj.size, cachedAt: this.opts.now() };
    const slot = this.disk.reserve(id);
    if (!keep && !slot) return undefined;
    this.counters.storageReads++;
    const fill: Fill = new Fill({
      id,
      body: obj.open(),
      keepInMemory: keep,
      slot,
      onDiskError: (err) => this.opts.log.warn({ err }, 'cdn cache: a body could not be stored on disk'),
      // Forgotten before its waiters hear of the failure (not once its slot is cleaned up, when it is
      // done): a request after that starts afresh instead of joining a fill that failed.
      onFailed: () => this.flights.forget(obj.key, fill),
    });
    this.flights.add(obj.key, fill);
    // In memory as soon as the bytes are in: the next request is a hit even while the file is synced.
    fill.bytes.then(
      (body) => {
        if (body && !fill.purged) this.memory.set(obj.key, 'identity', { etag: id.etag, owner: id.owner, body, cachedAt: id.cachedAt });
      },
      (err: unknown) => this.opts.log.warn({ err }, 'cdn cache: fill failed, nothing cached'),
    );
    return fill;
  }

  /** `open`: the object's storage, when the caller has it (a fill that fails on the disk falls back to it). */
  private async fromFill(obj: HeldObject, fill: Fill, opts: ReadOptions, status: CacheStatus, open?: CacheObject['open']): Promise<CacheResult> {
    await fill.opened;
    if (fill.keepsInMemory) {
      const body = (await fill.bytes) as Buffer;
      return this.fromBuffer(obj, body, fill.id.cachedAt, opts, status);
    }
    const slot = fill.slot;
    if (!slot) throw new Error('a fill kept neither in memory nor on disk');
    const start = opts.range?.start ?? 0;
    const end = opts.range ? opts.range.end + 1 : obj.size;
    // When the fill cannot write the disk (full), the rest comes from storage: uncached, not cut.
    const reopen = open && ((from: number) => open({ start: from, end: end - 1 }));
    return { status, cachedAt: fill.id.cachedAt, coding: undefined, body: new FollowReader(fill, slot, start, end, reopen) };
  }

  /** undefined when the file was evicted meanwhile: the caller looks again. */
  private async fromDisk(obj: HeldObject, entry: DiskEntry, opts: ReadOptions): Promise<CacheResult | undefined> {
    let fh: FileHandle;
    try {
      fh = await open(entry.file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // Evicted between the lookup and the open: a miss after all.
      if (this.disk.peek(obj.key) === entry) this.disk.delete(obj.key);
      return undefined;
    }
    this.counters.hits++;
    if (this.memory.accepts(entry.size)) {
      // Small: promoted into memory whole, then served like a memory hit.
      let body: Buffer;
      try {
        body = Buffer.alloc(entry.size);
        let got = 0;
        while (got < entry.size) {
          const { bytesRead } = await fh.read(body, got, entry.size - got, entry.offset + got);
          if (bytesRead === 0) throw new Error('cache file shorter than its header says');
          got += bytesRead;
        }
      } finally {
        await fh.close();
      }
      if (this.disk.peek(obj.key) === entry) this.memory.set(obj.key, 'identity', { etag: entry.etag, owner: entry.owner, body, cachedAt: entry.cachedAt });
      return this.fromBuffer(obj, body, entry.cachedAt, opts, 'HIT');
    }
    const start = opts.range?.start ?? 0;
    const end = opts.range ? opts.range.end + 1 : entry.size;
    return { status: 'HIT', cachedAt: entry.cachedAt, coding: undefined, body: new FileBody(fh, entry.offset + start, entry.offset + end, this.buffers) };
  }

  private async fromBuffer(obj: HeldObject, body: Buffer, cachedAt: number, opts: ReadOptions, status: CacheStatus): Promise<CacheResult> {
    if (opts.range) return { status, cachedAt, coding: undefined, body: body.subarray(opts.range.start, opts.range.end + 1) };
    if (opts.coding && this.canCompress(body.length)) {
      return { status, cachedAt, coding: opts.coding, body: await this.variant(obj, body, cachedAt, opts.coding) };
    }
    return { status, cachedAt, coding: undefined, body };
  }

  /** The compressed variant, from memory or made once (concurrent requests share the work). */
  private async variant(obj: HeldObject, body: Buffer, cachedAt: number, coding: Coding): Promise<Buffer> {
    const held = this.memory.get(obj.key, coding);
    if (held?.etag === obj.etag) return held.body;
    const job = `${obj.key}\u0000${coding}\u0000${obj.etag}`;
    let pending = this.compressing.get(job);
    if (!pending) {
      pending = compress(body, coding);
      this.compressing.set(job, pending);
      const forget = (): void => void this.compressing.delete(job);
      pending.then((compressed) => {
        forget();
        // Only next to the identity body it was made from (a purge or a newer version drops it).
        if (this.memory.peek(obj.key)?.etag === obj.etag) this.memory.set(obj.key, coding, { etag: obj.etag, owner: obj.owner, body: compressed, cachedAt });
      }, forget);
    }
    return pending;
  }

  /** A purged or superseded fill: whoever follows it gets its bytes, nothing is cached. */
  private abandon(fill: Fill): void {
    fill.purged = true;
    this.flights.forget(fill.id.key, fill);
  }

  private purgeKey(key: string): boolean {
    let found = this.memory.delete(key);
    found = this.disk.delete(key) || found;
    const fill = this.flights.get(key);
    if (fill) {
      this.abandon(fill);
      found = true;
    }
    return found;
  }

  private purgeWhere(match: (key: string, owner: string) => boolean): number {
    const keys = new Set<string>();
    for (const [key, e] of this.memory.objects()) if (match(key, e.owner)) keys.add(key);
    for (const [key, e] of this.disk.objects()) if (match(key, e.owner)) keys.add(key);
    for (const [key, fill] of this.flights.entries()) if (match(key, fill.id.owner)) keys.add(key);
    for (const key of keys) this.purgeKey(key);
    return keys.size;
  }

  /** Drops every cached copy of an asset; returns the number of objects dropped (0 or 1). */
  purgeAsset(assetId: string): number {
    return this.purgeKey(assetCacheKey(assetId)) ? 1 : 0;
  }

  /** Drops the cached copy of a bucket's object. */
  purgeObject(bucketId: string, key: string): number {
    return this.purgeKey(objectCacheKey(bucketId, key)) ? 1 : 0;
  }

  /** Drops the cached objects of a bucket whose keys start with `prefix` ('' = all of them). */
  purgePrefix(bucketId: string, prefix: string): number {
    const start = objectCacheKey(bucketId, prefix);
    return this.purgeWhere((key) => key.startsWith(start));
  }

  /** Drops everything cached that `owner` owns (assets and bucket objects). */
  purgeOwner(owner: string): number {
    return this.purgeWhere((_key, o) => o === owner);
  }

  /** Resolves once the fills in flight are over and evicted or purged files are deleted (tests). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.flights.values()].map((f) => f.done));
    await this.disk.idle();
  }

  stats(): EdgeCacheStats {
    const memory = this.memory.stats();
    const disk = this.disk.stats();
    return {
      ...this.counters,
      memoryBytes: memory.bytes,
      memoryEntries: memory.entries,
      diskBytes: disk.bytes,
      diskEntries: disk.entries,
      fillsInFlight: this.flights.size,
    };
  }

  /** Stops fills in flight (they cache nothing); the files on disk stay for the next start. */
  async close(): Promise<void> {
    const fills = [...this.flights.values()];
    for (const fill of fills) fill.abort(new Error('edge cache closing'));
    await Promise.allSettled(fills.map((f) => f.done));
    await this.disk.idle();
    this.buffers.clear();
  }
}
