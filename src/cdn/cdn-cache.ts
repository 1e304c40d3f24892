// The CDN edge cache: a memory tier (small bodies, lru-cache bounded by bytes, one per process) and a
// disk tier (<dataDir>/cdn-cache, bounded by bytes, survives restarts, ONE for every process serving
// the data directory: cache/disk-tier.ts) in front of the storage backend.
//
// The cache stores bytes, never decisions: the CDN handler reads the object's metadata row, decides
// access and conditionals on every request, and then asks the cache for the bytes of the version that
// row names (its ETag). An entry holding another ETag is EXPIRED and refetched, so stale bytes are
// never served even if a purge was missed. Concurrent misses for one object share one storage read
// (single flight in this process; across processes, the disk tier's index registers each fill and the
// others follow its file: cache/remote-fill.ts); a miss fills the whole object even when it asked for
// a range, and a HEAD or a conditional answer never fills anything. The edge proxy's response cache (src/edge/response-cache.ts)
// keeps origins' answers here too: it fills through read() with the origin's body, and reads with
// readHeld(), which never starts a fill, since nothing but the origin's answer can supply those bytes.
import type { Readable } from 'node:stream';
import { open, type FileHandle } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { CacheStatus } from '../db/repos/request-records.js';
import type { ReadRange } from '../storage/backend.js';
import { BufferPool } from '../storage/buffer-pool.js';
import { FileBody } from '../storage/file-body.js';
import { compress, MIN_COMPRESS_BYTES, type Coding } from './cache/compression.js';
import { DiskTier, headerMatches, processAlive, type DiskEntry } from './cache/disk-tier.js';
import { Fill } from './cache/fill.js';
import { FollowReader } from './cache/follow-reader.js';
import { MemoryTier } from './cache/memory-tier.js';
import { RemoteFill, RemoteFillLost } from './cache/remote-fill.js';
import { SingleFlight } from './cache/single-flight.js';

/** A fill this process runs (a storage read), or another process's that it follows. */
type AnyFill = Fill | RemoteFill;

/** Reads of one request that found another process's fill lost, before it reads storage itself. */
const MAX_ATTEMPTS = 3;

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

/** A version as the cache knows it, without a way to open its bytes (CdnCache.holds, readHeld). */
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

export interface CdnCacheStats {
  /** Storage reads this process made: one per fill, one per BYPASS body. */
  storageReads: number;
  hits: number;
  misses: number;
  expired: number;
  bypasses: number;
  memoryBytes: number;
  /** Bodies in memory, compressed variants included. */
  memoryEntries: number;
  /** The shared disk tier's bytes and files (the same figure in every process of the data directory). */
  diskBytes: number;
  diskEntries: number;
  /** Storage reads this process is filling the cache with right now. */
  fillsInFlight: number;
}

export interface CdnCacheOptions {
  /** The disk tier's directory (<dataDir>/cdn-cache); undefined: no disk tier, nothing on disk touched. */
  dir: string | undefined;
  memoryBytes: number;
  memoryEntryMaxBytes: number;
  diskBytes: number;
  /** Unix milliseconds (tests inject a clock). */
  now: () => number;
  log: Pick<Logger, 'warn'>;
  /** A fill elsewhere with no progress for this long is taken over (tests; default disk-tier STALL_MS). */
  stallMs?: number;
}

export class CdnCache {
  private readonly flights = new SingleFlight<AnyFill>();
  private readonly compressing = new Map<string, Promise<Buffer>>();
  /** Disk hits of large objects stream from files through these (like the storage backend's reads). */
  private readonly buffers = new BufferPool(8);
  private readonly counters = { storageReads: 0, hits: 0, misses: 0, expired: 0, bypasses: 0 };

  private constructor(
    private readonly opts: CdnCacheOptions,
    private readonly memory: MemoryTier,
    private readonly disk: DiskTier | undefined,
  ) {}

  static async open(opts: CdnCacheOptions): Promise<CdnCache> {
    const disk =
      opts.dir === undefined
        ? undefined
        : await DiskTier.open({
            dir: opts.dir,
            maxBytes: opts.diskBytes,
            log: opts.log,
            ...(opts.stallMs !== undefined ? { stallMs: opts.stallMs } : {}),
          });
    return new CdnCache(opts, new MemoryTier(opts.memoryBytes, opts.memoryEntryMaxBytes), disk);
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
    const disk = mem?.etag === obj.etag ? undefined : this.disk?.peek(obj.key);
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
    return this.readAttempt(obj, opts, 1);
  }

  private async readAttempt(obj: CacheObject, opts: ReadOptions, attempt: number): Promise<CacheResult> {
    const mem = this.memory.get(obj.key);
    if (mem?.etag === obj.etag) {
      this.counters.hits++;
      return this.fromBuffer(obj, mem.body, mem.cachedAt, opts, 'HIT');
    }
    let expired = false;
    if (mem) expired = this.memory.delete(obj.key);
    const disk = this.disk?.get(obj.key, obj.etag);
    if (disk?.etag === obj.etag && disk.size === obj.size) return (await this.fromDisk(obj, disk, opts)) ?? this.readAttempt(obj, opts, attempt);
    if (disk) {
      this.disk?.drop(disk, true);
      expired = true;
    }
    let fill = this.flights.get(obj.key);
    if (fill && fill.id.etag !== obj.etag) {
      this.abandon(fill);
      fill = undefined;
      expired = true;
    }
    if (!fill) {
      const started = attempt > MAX_ATTEMPTS ? undefined : this.startFill(obj);
      // Published by another process between the lookup and the claim: read it.
      if (started === 'published') return this.readAttempt(obj, opts, attempt + 1);
      fill = started;
    }
    if (!fill) {
      // Too big for either tier (or followed fills kept failing): straight from storage.
      this.counters.bypasses++;
      this.counters.storageReads++;
      return { status: 'BYPASS', cachedAt: undefined, coding: undefined, body: await obj.open(opts.range) };
    }
    try {
      return await this.fromFill(obj, fill, opts, expired ? 'EXPIRED' : 'MISS', (range) => obj.open(range));
    } catch (err) {
      // Another process's fill was lost before anything was handed out: fill (or follow) afresh.
      if (err instanceof RemoteFillLost) return this.readAttempt(obj, opts, attempt + 1);
      throw err;
    }
  }

  /**
   * Whether this version is in a tier or being filled. Never fills, counts nothing, drops nothing: the
   * proxy cache (src/edge/response-cache.ts) asks it before a HEAD or 304 answer that needs no bytes.
   */
  holds(obj: HeldObject): boolean {
    if (this.memory.peek(obj.key)?.etag === obj.etag || this.flights.get(obj.key)?.id.etag === obj.etag) return true;
    const disk = this.disk?.peek(obj.key);
    return disk?.etag === obj.etag && disk.size === obj.size;
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
    const disk = this.disk?.get(obj.key, obj.etag);
    if (disk?.etag === obj.etag && disk.size === obj.size) return (await this.fromDisk(obj, disk, opts)) ?? this.readHeld(obj, opts);
    // Only this process's fills: a version the caller holds (an origin's answer) is filled where it was stored.
    const fill = this.flights.get(obj.key);
    if (fill?.id.etag !== obj.etag) return undefined;
    return this.fromFill(obj, fill, opts, 'MISS');
  }

  /**
   * A fill for this miss: one of this process (a storage read), or another process's that the disk
   * tier's index names (followed, no storage read); 'published' when another process published this
   * version meanwhile; undefined when neither tier can take it.
   */
  private startFill(obj: CacheObject): AnyFill | 'published' | undefined {
    const keep = this.memory.accepts(obj.size);
    const id = { key: obj.key, etag: obj.etag, owner: obj.owner, size: obj.size, cachedAt: this.opts.now() };
    const claim = this.disk?.claim(id);
    if (claim?.kind === 'entry') return 'published';
    if (claim?.kind === 'follow') return this.follow(claim.fill, claim.path, keep);
    const slot = claim?.slot;
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
    this.keepFilled(fill);
    return fill;
  }

  /** Another process fills this version: its temp file is followed, shared by this process's requests. */
  private follow(claimed: Parameters<DiskTier['fillRunning']>[0], path: string, keep: boolean): RemoteFill {
    const disk = this.disk as DiskTier;
    const fill: RemoteFill = new RemoteFill({
      fill: claimed,
      path,
      keepInMemory: keep,
      stallMs: disk.stallMs,
      alive: processAlive,
      running: () => disk.fillRunning(claimed),
      published: () => disk.publishedAs(claimed),
      onFailed: () => this.flights.forget(claimed.key, fill),
    });
    this.keepFilled(fill);
    return fill;
  }

  /** Registers a fill for single flight; in memory as soon as its bytes are in (the next request is a hit even while the file is synced). */
  private keepFilled(fill: AnyFill): void {
    const { id } = fill;
    this.flights.add(id.key, fill);
    fill.bytes.then(
      (body) => {
        if (body && !fill.purged) this.memory.set(id.key, 'identity', { etag: id.etag, owner: id.owner, body, cachedAt: id.cachedAt });
      },
      (err: unknown) => {
        if (!(err instanceof RemoteFillLost)) this.opts.log.warn({ err }, 'cdn cache: fill failed, nothing cached');
      },
    );
  }

  /**
   * `open`: the object's storage, when the caller has it (a fill that fails on the disk falls back to
   * it). A request that joins a fill whose bytes are all in (being synced, or published by another
   * process) is served from cache: HIT.
   */
  private async fromFill(obj: HeldObject, fill: AnyFill, opts: ReadOptions, joined: CacheStatus, open?: CacheObject['open']): Promise<CacheResult> {
    let status: CacheStatus = fill.complete ? 'HIT' : joined;
    try {
      await fill.opened;
    } catch (err) {
      if (!(err instanceof RemoteFillLost)) this.count(status);
      throw err;
    }
    const remote = fill instanceof RemoteFill;
    if (remote && fill.completeAtOpen) status = 'HIT';
    if (fill.keepsInMemory) {
      // A lost remote fill is retried (read() starts over), so it is counted once it delivered.
      if (!remote) this.count(status);
      const body = (await fill.bytes) as Buffer;
      if (remote) this.count(status);
      return this.fromBuffer(obj, body, fill.id.cachedAt, opts, status);
    }
    this.count(status);
    const slot = fill.slot;
    if (!slot) throw new Error('a fill kept neither in memory nor on disk');
    const start = opts.range?.start ?? 0;
    const end = opts.range ? opts.range.end + 1 : obj.size;
    // When the fill cannot write the disk (full) or another process's fill is lost, the rest comes
    // from storage: uncached, not cut.
    const reopen = open && ((from: number) => open({ start: from, end: end - 1 }));
    return { status, cachedAt: fill.id.cachedAt, coding: undefined, body: new FollowReader(fill, slot, start, end, reopen) };
  }

  private count(status: CacheStatus): void {
    if (status === 'HIT') this.counters.hits++;
    else if (status === 'EXPIRED') this.counters.expired++;
    else if (status === 'MISS') this.counters.misses++;
  }

  /**
   * undefined when the file was evicted meanwhile, or (a small body, read whole with its header) is not
   * what the index says: the entry is dropped and the caller looks again.
   */
  private async fromDisk(obj: HeldObject, entry: DiskEntry, opts: ReadOptions): Promise<CacheResult | undefined> {
    const disk = this.disk as DiskTier;
    let fh: FileHandle;
    try {
      fh = await open(entry.file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // Evicted between the lookup and the open: a miss after all.
      disk.drop(entry, false);
      return undefined;
    }
    if (this.memory.accepts(entry.size)) {
      // Small: header and body in one read, promoted into memory whole, then served like a memory hit.
      let body: Buffer;
      try {
        const whole = Buffer.allocUnsafeSlow(entry.offset + entry.size);
        if ((await readAt(fh, whole, 0)) !== whole.length || !headerMatches(whole.subarray(0, entry.offset), entry)) {
          disk.drop(entry, true);
          return undefined;
        }
        body = whole.subarray(entry.offset);
      } finally {
        await fh.close();
      }
      this.counters.hits++;
      // Not if it was purged or replaced while it was read.
      if (disk.peek(obj.key)?.file === entry.file) this.memory.set(obj.key, 'identity', { etag: entry.etag, owner: entry.owner, body, cachedAt: entry.cachedAt });
      return this.fromBuffer(obj, body, entry.cachedAt, opts, 'HIT');
    }
    // Large: streamed from the file as the index names it (no extra read on this path: names are
    // random and never reused, and the file was whole when it was indexed; a lone start checks sizes).
    this.counters.hits++;
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
  private abandon(fill: AnyFill): void {
    fill.purged = true;
    this.flights.forget(fill.id.key, fill);
  }

  /** A purge of the disk tier reaches every process at once (the shared index); memory and fills are this process's. */
  private purgeKey(key: string): boolean {
    let found = this.memory.delete(key);
    found = (this.disk?.purge({ key }).length ?? 0) > 0 || found;
    const fill = this.flights.get(key);
    if (fill) {
      this.abandon(fill);
      found = true;
    }
    return found;
  }

  private purgeWhere(onDisk: { prefix: string } | { owner: string }, match: (key: string, owner: string) => boolean): number {
    const keys = new Set(this.disk?.purge(onDisk));
    for (const [key, e] of this.memory.objects()) if (match(key, e.owner)) keys.add(key);
    for (const [key, fill] of this.flights.entries()) if (match(key, fill.id.owner)) keys.add(key);
    for (const key of keys) {
      this.memory.delete(key);
      const fill = this.flights.get(key);
      if (fill) this.abandon(fill);
    }
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
    return this.purgeWhere({ prefix: start }, (key) => key.startsWith(start));
  }

  /** Drops everything cached that `owner` owns (assets and bucket objects). */
  purgeOwner(owner: string): number {
    return this.purgeWhere({ owner }, (_key, o) => o === owner);
  }

  /** Resolves once the fills in flight are over and evicted or purged files are deleted (tests). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.flights.values()].map((f) => f.done));
    await this.disk?.idle();
  }

  stats(): CdnCacheStats {
    const memory = this.memory.stats();
    const disk = this.disk?.stats() ?? { bytes: 0, entries: 0 };
    let fillsInFlight = 0;
    for (const fill of this.flights.values()) if (fill instanceof Fill) fillsInFlight++;
    return {
      ...this.counters,
      memoryBytes: memory.bytes,
      memoryEntries: memory.entries,
      diskBytes: disk.bytes,
      diskEntries: disk.entries,
      fillsInFlight,
    };
  }

  /** Stops fills in flight (they cache nothing); the files on disk stay for the next start. */
  async close(): Promise<void> {
    const fills = [...this.flights.values()];
    for (const fill of fills) fill.abort(new Error('edge cache closing'));
    await Promise.allSettled(fills.map((f) => f.done));
    await this.disk?.close();
    this.buffers.clear();
  }
}

/** Reads into `buf` from `position` until it is full or the file ends; the bytes read. */
async function readAt(fh: FileHandle, buf: Buffer, position: number): Promise<number> {
  let got = 0;
  while (got < buf.length) {
    const { bytesRead } = await fh.read(buf, got, buf.length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
}
