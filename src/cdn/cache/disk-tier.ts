// The disk tier: cached bodies as files under <dataDir>/cdn-cache, ONE cache for every process serving
// the data directory (a single process or the N workers of `serve --workers N`: the same layout, so
// changing the worker count keeps the cache). A shared SQLite index (disk-index.ts) says which file
// holds which key, registers each fill so that an object is read from storage once across processes
// (a process that misses while another fills the same version follows that fill's temp file:
// remote-fill.ts), and bounds the whole directory by bytes, least recently used evicted first.
//
// A body is written to tmp/<random> and renamed to <xx>/<random> once complete and synced, so a file
// under a shard directory is always whole; then it is indexed. Each file starts with a small header
// naming what it holds (cache key, ETag, owner, size, time cached), checked again on every read from
// disk, so a wrong index entry is a miss, never wrong bytes. File names are random: no key or id
// reaches the file system. An evicted or purged file is unlinked: a reader in any process that has it
// open keeps its bytes (POSIX).
//
// Restarts: the index persists. A process that finds no other live process on the cache ("alone")
// drops every temp file and fill, checks each file against the index (sizes; unindexed complete files
// are adopted from their headers, torn or foreign ones deleted) and moves in the files of the old
// per-worker layout (cdn-cache/<slot>/), all in the background; one that joins running processes only
// cleans up after processes that died.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { lazyLru } from '../../lazy-lru.js';
import type { Logger } from 'pino';
import { DiskIndex, type IndexEntry, type IndexFill, type IndexProc } from './disk-index.js';

/** What an entry holds; written as JSON in the file's header. */
export interface EntryIdentity {
  key: string;
  etag: string;
  owner: string;
  size: number;
  /** Unix milliseconds. */
  cachedAt: number;
}

export interface DiskEntry extends EntryIdentity {
  file: string;
  /** Where the body starts in the file. */
  offset: number;
}

const MAGIC = Buffer.from('S3ECDN1\n', 'latin1');
const PREFIX_BYTES = MAGIC.length + 4;
/** A header longer than this is not one of ours (a 1024-byte key escapes to well under it). */
const MAX_HEADER_JSON = 16 * 1024;
const FILE_NAME = /^[0-9a-f]{32}$/;
const SHARD_NAME = /^[0-9a-f]{2}$/;
/** The per-worker directories of the layout before the shared cache (and the supervisor's). */
const OLD_SLOT_NAME = /^([1-9][0-9]*|supervisor)$/;
const TMP = 'tmp';
export const INDEX_FILE = 'index.db';
const INDEX_FILES = new Set([INDEX_FILE, `${INDEX_FILE}-wal`, `${INDEX_FILE}-shm`, `${INDEX_FILE}-journal`]);

/** A fill with no byte written for this long (or whose process is gone) is given up and taken over. */
export const STALL_MS = 30_000;
/** How often uses are written to the index (recency for eviction). */
const TOUCH_EVERY_MS = 1000;
/** How often the index is checked for processes that died (their fills and temp files). */
const SWEEP_EVERY_MS = 10_000;
/** Adoptions per index transaction while rebuilding. */
const ADOPT_BATCH = 200;
/**
 * A disk hit trusts what this process last read from the index for a key this long (then reads the
 * row again): hot large objects are served without an index read per request. Safe because a file
 * name is never reused and every removal unlinks the file (a hint to a removed file fails to open and
 * is dropped); what it can serve after another process's purge is what a request that opened the
 * file just before it serves, for at most this long (the memory tiers' window is the feed's second).
 */
const HINT_MS = 1000;
const HINTS = 10_000;

export function encodeHeader(id: EntryIdentity): Buffer {
  const json = Buffer.from(JSON.stringify({ key: id.key, etag: id.etag, owner: id.owner, size: id.size, cachedAt: id.cachedAt }), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(json.length);
  return Buffer.concat([MAGIC, len, json]);
}

function isIdentity(v: unknown): v is EntryIdentity {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o['key'] === 'string' && typeof o['etag'] === 'string' && typeof o['owner'] === 'string' &&
    Number.isSafeInteger(o['size']) && (o['size'] as number) >= 0 && Number.isSafeInteger(o['cachedAt'])
  );
}

/** The identity a header names and where the body starts, or undefined if `head` does not hold a header of ours. */
export function parseHeader(head: Buffer): { id: EntryIdentity; offset: number } | undefined {
  if (head.length < PREFIX_BYTES || !head.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const jsonLength = head.readUInt32BE(MAGIC.length);
  if (jsonLength === 0 || jsonLength > MAX_HEADER_JSON || head.length < PREFIX_BYTES + jsonLength) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(head.toString('utf8', PREFIX_BYTES, PREFIX_BYTES + jsonLength));
  } catch {
    return undefined;
  }
  if (!isIdentity(parsed)) return undefined;
  const id = { key: parsed.key, etag: parsed.etag, owner: parsed.owner, size: parsed.size, cachedAt: parsed.cachedAt };
  return { id, offset: PREFIX_BYTES + jsonLength };
}

/** Whether the first `entry.offset` bytes of a file are the header of exactly this entry. */
export function headerMatches(head: Buffer, entry: DiskEntry): boolean {
  const h = parseHeader(head);
  return h !== undefined && h.offset === entry.offset && h.id.key === entry.key && h.id.etag === entry.etag && h.id.size === entry.size;
}

/** The entry a complete cache file holds, or undefined if the file is not one (wrong magic, torn, bad JSON). */
export async function readEntry(file: string): Promise<DiskEntry | undefined> {
  const fh = await open(file, 'r');
  try {
    const head = Buffer.alloc(PREFIX_BYTES);
    if ((await fh.read(head, 0, head.length, 0)).bytesRead !== head.length || !head.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
    const jsonLength = head.readUInt32BE(MAGIC.length);
    if (jsonLength === 0 || jsonLength > MAX_HEADER_JSON) return undefined;
    const whole = Buffer.alloc(PREFIX_BYTES + jsonLength);
    head.copy(whole);
    if ((await fh.read(whole, PREFIX_BYTES, jsonLength, PREFIX_BYTES)).bytesRead !== jsonLength) return undefined;
    const h = parseHeader(whole);
    if (!h) return undefined;
    // A file cut short (or grown) is not the body its header describes.
    if ((await fh.stat()).size !== h.offset + h.id.size) return undefined;
    return { ...h.id, file, offset: h.offset };
  } finally {
    await fh.close();
  }
}

/**
 * When a process started (/proc/<pid>/stat's starttime, in clock ticks since boot): with the pid it
 * names one process, where a pid alone is reused (a container's server is pid 1 at every start).
 * '' where /proc cannot tell (another OS, or the process is gone).
 */
export function processStart(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Fields after the command name, which is in parentheses and may hold anything but the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

/** Whether a process is running (signal 0 checks without sending anything; EPERM: it runs as someone else). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the process a registration or fill names still runs: its pid, started when it says. */
export function processAlive(p: { pid: number; pidStart: string }): boolean {
  if (!pidAlive(p.pid)) return false;
  if (p.pidStart === '') return true;
  const start = processStart(p.pid);
  // '' now: /proc does not tell (hidden), so the pid alone decides.
  return start === '' || start === p.pidStart;
}

export interface DiskTierOptions {
  dir: string;
  maxBytes: number;
  log: Pick<Logger, 'warn'>;
  /** The process this tier stands for (tests: a dead one's pid). Default process.pid. */
  pid?: number;
  /** A fill with no progress for this long is given up (default STALL_MS). */
  stallMs?: number;
  /** Unix milliseconds for recency; default Date.now. */
  now?: () => number;
}

/** What a miss does (DiskTier.claim). */
export type Claim =
  /** Published meanwhile by another process: read it. */
  | { kind: 'entry'; entry: DiskEntry }
  /** Another process is filling this version: follow its temp file (`path`). */
  | { kind: 'follow'; fill: IndexFill; path: string }
  /** This process fills it, into `slot`. */
  | { kind: 'fill'; slot: DiskSlot };

export class DiskTier {
  private readonly index: DiskIndex | undefined;
  /** This tier's registration in the index (its fills carry it). */
  readonly instance = randomUUID();
  readonly pid: number;
  private readonly pidStart: string;
  readonly stallMs: number;
  private readonly now: () => number;
  private readonly knownShards = new Set<string>();
  private readonly removals = new Set<Promise<void>>();
  /** Temp files of this tier's slots still being written (its own fills are live while listed). */
  private readonly writing = new Set<string>();
  /** Entries read since the last touch (key -> file's path): their recency, written to the index in one transaction. */
  private touched = new Map<string, string>();
  /** Entries as this process last read them from the index (get()). */
  private readonly hints = lazyLru<string, DiskEntry>({ max: HINTS, ttl: HINT_MS });
  private readonly timers: NodeJS.Timeout[] = [];
  private maintenance: Promise<void> = Promise.resolve();
  private closed = false;
  /** An index failure is logged once, not per request. */
  private failing = false;

  private constructor(
    private readonly opts: DiskTierOptions,
    index: DiskIndex | undefined,
  ) {
    this.index = index;
    this.pid = opts.pid ?? process.pid;
    this.pidStart = processStart(this.pid);
    this.stallMs = opts.stallMs ?? STALL_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Opens the tier: the shared index (created if missing), this process registered in it. What a
   * restart must clean up or rebuild runs in the background (idle() waits for it).
   */
  static async open(opts: DiskTierOptions): Promise<DiskTier> {
    await mkdir(opts.dir, { recursive: true, mode: 0o700 });
    if (opts.maxBytes <= 0) {
      // Disabled: what an earlier run cached is of no use.
      const tier = new DiskTier(opts, undefined);
      await tier.removeAll();
      return tier;
    }
    await mkdir(join(opts.dir, TMP), { recursive: true, mode: 0o700 });
    const indexFile = join(opts.dir, INDEX_FILE);
    const index = DiskIndex.open(indexFile, () => {
      opts.log.warn({ file: indexFile }, 'cdn cache: the index could not be read; it is rebuilt from the cache files');
      // Synchronous: the index is opened again at once (this happens at start, once).
      for (const name of INDEX_FILES) rmSync(join(opts.dir, name), { force: true });
    });
    const tier = new DiskTier(opts, index);
    const { alone, dropped } = index.register({ instance: tier.instance, pid: tier.pid, pidStart: tier.pidStart }, tier.now(), processAlive);
    for (const file of dropped) tier.removeFile(file);
    tier.maintenance = tier.cleanTmp(alone ? 0 : tier.stallMs).then(() => tier.reconcile(alone)).catch((err: unknown) => opts.log.warn({ err }, 'cdn cache: the cache directory could not be checked'));
    tier.timers.push(setInterval(() => tier.flushTouches(), TOUCH_EVERY_MS), setInterval(() => void tier.sweep(), SWEEP_EVERY_MS));
    for (const t of tier.timers) t.unref();
    return tier;
  }

  get enabled(): boolean {
    return this.index !== undefined && !this.closed;
  }

  private path(rel: string): string {
    // Concatenated, not join()ed: on the disk-hit path, and `rel` is always <xx>/<hex> or tmp/<hex>.
    return `${this.opts.dir}/${rel}`;
  }

  private toDisk(e: IndexEntry): DiskEntry {
    return { key: e.key, etag: e.etag, owner: e.owner, size: e.size, cachedAt: e.cachedAt, file: this.path(e.file), offset: e.offset };
  }

  /** Runs an index call; a failing index costs the cache (logged once), never a response. */
  private guarded<T>(fallback: T, fn: (index: DiskIndex) => T): T {
    if (!this.index || this.closed) return fallback;
    try {
      const out = fn(this.index);
      this.failing = false;
      return out;
    } catch (err) {
      if (!this.failing) this.opts.log.warn({ err }, 'cdn cache: the disk index failed; serving without it');
      this.failing = true;
      return fallback;
    }
  }

  /**
   * The entry for `key` (any version), and marks it recently used. With `etag`, the version expected:
   * an entry read from the index less than HINT_MS ago for that version is used as it is (its file may
   * be gone since: the caller's open says so, and drop() forgets it).
   */
  get(key: string, etag?: string): DiskEntry | undefined {
    const hint = etag === undefined ? undefined : this.hints().get(key);
    if (hint && hint.etag === etag) {
      this.touched.set(key, hint.file);
      return hint;
    }
    const e = this.guarded(undefined, (index) => index.entry(key));
    if (!e) {
      this.hints().delete(key);
      return undefined;
    }
    const entry = this.toDisk(e);
    this.touched.set(key, entry.file);
    this.hints().set(key, entry);
    return entry;
  }

  peek(key: string): DiskEntry | undefined {
    const e = this.guarded(undefined, (index) => index.entry(key));
    return e && this.toDisk(e);
  }

  /** Drops the entry of `key` (any version) and deletes its file. */
  delete(key: string): boolean {
    this.hints().delete(key);
    const file = this.guarded(undefined, (index) => index.deleteEntry(key));
    if (file === undefined) return false;
    this.removeFile(file);
    return true;
  }

  /** Drops `entry` if the index still names its file (found gone or not matching its header). */
  drop(entry: DiskEntry, removeFile: boolean): void {
    this.hints().delete(entry.key);
    const rel = this.relative(entry.file);
    const dropped = this.guarded(false, (index) => index.deleteEntryFile(entry.key, rel));
    if (dropped && removeFile) this.removeFile(rel);
  }

  /**
   * Purges, for every process: entries (their files deleted) and fills (their writers will not publish)
   * of one key, of keys starting with a prefix, or of an owner. Returns the keys found.
   */
  purge(match: { key: string } | { prefix: string } | { owner: string }): string[] {
    const { keys, files } = this.guarded({ keys: [] as string[], files: [] as string[] }, (index) => index.purge(match));
    for (const key of keys) this.hints().delete(key);
    if ('key' in match) this.hints().delete(match.key);
    for (const file of files) this.removeFile(file);
    return keys;
  }

  *objects(): Generator<[string, DiskEntry]> {
    for (const e of this.guarded([] as IndexEntry[], (index) => index.entries())) yield [e.key, this.toDisk(e)];
  }

  /**
   * What a miss of this version does, decided for every process at once: read what was published
   * meanwhile, follow another process's fill, or fill it here (room reserved, least recently used
   * entries evicted). undefined when it cannot be cached on disk (the tier is off, the body is bigger
   * than the tier, or fills in flight hold the room).
   */
  claim(id: EntryIdentity): Claim | undefined {
    const header = encodeHeader(id);
    const name = randomBytes(16).toString('hex');
    const fill: IndexFill = { ...id, offset: header.length, file: `${TMP}/${name}`, instance: this.instance, pid: this.pid, pidStart: this.pidStart, startedAt: this.now() };
    const result = this.guarded(undefined, (index) => index.claim({ fill, maxBytes: this.opts.maxBytes, now: this.now(), live: (f) => this.live(f) }));
    if (!result) return undefined;
    if (result.kind === 'entry') return { kind: 'entry', entry: this.toDisk(result.entry) };
    if (result.kind === 'follow') return { kind: 'follow', fill: result.fill, path: this.path(result.fill.file) };
    for (const file of [...result.evicted, ...result.dropped]) this.removeFile(file);
    if (result.kind === 'full') return undefined;
    this.writing.add(fill.file);
    return { kind: 'fill', slot: new DiskSlot(this, fill, header, this.path(fill.file)) };
  }

  /** Room for a body this process fills (a claim that follows no one): undefined otherwise. */
  reserve(id: EntryIdentity): DiskSlot | undefined {
    const claim = this.claim(id);
    return claim?.kind === 'fill' ? claim.slot : undefined;
  }

  /** Whether a registered fill is still being written: by a live tier of this process, or by a process alive and not stalled. */
  live(fill: IndexFill): boolean {
    if (fill.instance === this.instance) return this.writing.has(fill.file);
    if (!processAlive(fill)) return false;
    let last = fill.startedAt;
    try {
      last = Math.max(last, statSync(this.path(fill.file)).mtimeMs);
    } catch {
      // Not created yet, or renamed into place a moment ago: its start counts.
    }
    return this.now() - last < this.stallMs;
  }

  /** Whether `fill` is still registered as this very fill (not published, failed or taken over). */
  fillRunning(fill: IndexFill): boolean {
    return this.guarded(false, (index) => index.fill(fill.key)?.file === fill.file);
  }

  /** The published entry of this fill's version, if any. */
  publishedAs(fill: IndexFill): DiskEntry | undefined {
    const e = this.peek(fill.key);
    return e && e.etag === fill.etag && e.size === fill.size ? e : undefined;
  }

  /**
   * Moves a complete temp file into its shard and indexes it, once the files evicted to make room are
   * gone (the files on disk never exceed the bound), if the fill is still registered and wanted.
   */
  async adopt(slot: DiskSlot, wanted: () => boolean): Promise<void> {
    await this.idleRemovals();
    const name = randomBytes(16).toString('hex');
    const shard = name.slice(0, 2);
    if (!this.knownShards.has(shard)) {
      await mkdir(this.path(shard), { recursive: true, mode: 0o700 });
      this.knownShards.add(shard);
    }
    const rel = `${shard}/${name}`;
    await rename(slot.tempFile, this.path(rel));
    this.writing.delete(slot.fill.file);
    this.hints().delete(slot.fill.key);
    // Purged or taken over while it was being synced: it must not come back.
    const done = this.guarded(undefined, (index) => index.publish(slot.fill, rel, this.now(), wanted()));
    if (!done) {
      this.removeFile(rel);
      return;
    }
    for (const file of done.files) this.removeFile(file);
  }

  /** A slot failed or was given up: its registration and temp file go. */
  async abandon(slot: DiskSlot): Promise<void> {
    this.writing.delete(slot.fill.file);
    this.guarded(undefined, (index) => index.dropFill(slot.fill.key, slot.fill.file));
    await unlink(slot.tempFile).catch(() => undefined);
  }

  private relative(file: string): string {
    const prefix = `${this.opts.dir}/`;
    return file.startsWith(prefix) ? file.slice(prefix.length) : file;
  }

  private removeFile(rel: string): void {
    const removal = unlink(this.path(rel)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') this.opts.log.warn({ err }, 'cdn cache: file removal failed');
    });
    this.removals.add(removal);
    void removal.finally(() => this.removals.delete(removal));
  }

  private async idleRemovals(): Promise<void> {
    while (this.removals.size > 0) await Promise.all(this.removals);
  }

  /** Resolves once the start's background checks are over, recent uses written and evicted or purged files deleted. */
  async idle(): Promise<void> {
    this.flushTouches();
    await this.maintenance;
    await this.idleRemovals();
  }

  /** Writes the recency of the entries read since the last time. */
  flushTouches(): void {
    if (this.touched.size === 0) return;
    const used: [string, string][] = [];
    for (const [key, file] of this.touched) used.push([key, this.relative(file)]);
    this.touched = new Map();
    const at = this.now();
    this.guarded(undefined, (index) => index.touch(used, at));
  }

  /** The whole cache's figures (every process's), from the index. */
  stats(): { bytes: number; entries: number } {
    const t = this.guarded(undefined, (index) => index.totals());
    return { bytes: t?.bytes ?? 0, entries: t?.entries ?? 0 };
  }

  /** Stops the timers and leaves the index (its fills were aborted and discarded by then). */
  async close(): Promise<void> {
    if (this.closed) return;
    for (const t of this.timers) clearInterval(t);
    this.flushTouches();
    await this.maintenance;
    await this.idleRemovals();
    const files = this.guarded([] as string[], (index) => index.forgetProc(this.instance));
    for (const file of files) this.removeFile(file);
    await this.idleRemovals();
    this.closed = true;
    this.index?.close();
  }

  /** Forgets processes that died: their fills are dropped and their temp files deleted. */
  private async sweep(): Promise<void> {
    if (!this.enabled) return;
    const procs = this.guarded([] as IndexProc[], (index) => index.procs());
    for (const p of procs) {
      if (p.instance === this.instance || processAlive(p)) continue;
      for (const file of this.guarded([] as string[], (index) => index.forgetProc(p.instance))) this.removeFile(file);
    }
    await this.cleanTmp(this.stallMs);
  }

  /**
   * Deletes temp files no fill is registered for, untouched for `minAgeMs`: a process killed between
   * forgetting its fill and deleting the file, or (0, alone at start) whatever dead processes left. A
   * live process registers its fill before it creates the file, so none of its files is taken.
   */
  private async cleanTmp(minAgeMs: number): Promise<void> {
    const names = await readdir(this.path(TMP)).catch(() => [] as string[]);
    if (names.length === 0) return;
    const registered = new Set(this.guarded([] as IndexFill[], (index) => index.fills()).map((f) => f.file));
    for (const name of names) {
      const rel = `${TMP}/${name}`;
      if (registered.has(rel) || this.writing.has(rel)) continue;
      if (minAgeMs > 0) {
        const st = await stat(this.path(rel)).catch(() => undefined);
        if (!st || this.now() - st.mtimeMs <= minAgeMs) continue;
      }
      this.removeFile(rel);
    }
  }

  /**
   * The start's check of the directory, in the background: old layouts moved in, foreign entries
   * removed, files and index reconciled. Alone, every file is checked (a crash may have left anything);
   * beside running processes, only files unindexed for longer than a fill may stall are looked at.
   */
  private async reconcile(alone: boolean): Promise<void> {
    const dir = this.opts.dir;
    const known = new Map(this.guarded([] as { key: string; file: string; bytes: number }[], (index) => index.files()).map((f) => [f.file, f]));
    const seen = new Set<string>();
    const found: IndexEntry[] = [];
    const flush = (): void => {
      if (found.length === 0) return;
      const files = this.guarded([] as string[], (index) => index.adopt(found, this.opts.maxBytes));
      found.length = 0;
      for (const file of files) this.removeFile(file);
    };
    for (const name of await readdir(dir)) {
      if (name === TMP || INDEX_FILES.has(name)) continue;
      const full = join(dir, name);
      const st = await stat(full).catch(() => undefined);
      if (!st) continue;
      if (st.isDirectory() && OLD_SLOT_NAME.test(name) && !SHARD_NAME.test(name)) {
        await this.moveIn(full, found, flush);
        await rm(full, { recursive: true, force: true });
        continue;
      }
      if (!SHARD_NAME.test(name) || !st.isDirectory()) {
        await rm(full, { recursive: true, force: true });
        continue;
      }
      this.knownShards.add(name);
      for (const file of await readdir(full).catch(() => [] as string[])) {
        const rel = `${name}/${file}`;
        // An old per-worker directory whose slot number looks like a shard (10..99): its shards' files move in.
        if (SHARD_NAME.test(file)) await this.moveShard(join(full, file), file, found, flush);
        seen.add(rel);
        const path = join(full, file);
        const indexed = known.get(rel);
        if (indexed) {
          if (!alone) continue;
          const size = (await stat(path).catch(() => undefined))?.size;
          // Torn or overwritten: not the body the index names.
          if (size !== indexed.bytes && this.guarded(false, (index) => index.deleteEntryFile(indexed.key, rel))) this.removeFile(rel);
          continue;
        }
        if (!FILE_NAME.test(file)) {
          await rm(path, { recursive: true, force: true });
          continue;
        }
        if (!alone) {
          // Renamed into place a moment ago, its row about to be written; or indexed since the listing.
          const fst = await stat(path).catch(() => undefined);
          if (!fst || this.now() - fst.mtimeMs < this.stallMs) continue;
          if (this.guarded(true, (index) => index.names(rel))) continue;
        }
        const entry = await readEntry(path).catch(() => undefined);
        if (!entry) {
          await rm(path, { force: true });
          continue;
        }
        found.push({ key: entry.key, etag: entry.etag, owner: entry.owner, size: entry.size, offset: entry.offset, file: rel, cachedAt: entry.cachedAt });
        if (found.length >= ADOPT_BATCH) flush();
      }
    }
    flush();
    // Rows whose file is gone (deleted by hand, or lost with a crash).
    for (const [rel, f] of known) if (!seen.has(rel)) this.guarded(false, (index) => index.deleteEntryFile(f.key, rel));
    for (const file of this.guarded([] as string[], (index) => index.trim(this.opts.maxBytes))) this.removeFile(file);
  }

  /** The complete files of an old per-worker directory (cdn-cache/<slot>/<xx>/<name>), moved into the shared shards. */
  private async moveIn(slotDir: string, found: IndexEntry[], flush: () => void): Promise<void> {
    for (const shard of await readdir(slotDir).catch(() => [] as string[])) {
      if (SHARD_NAME.test(shard)) await this.moveShard(join(slotDir, shard), shard, found, flush);
    }
  }

  private async moveShard(from: string, shard: string, found: IndexEntry[], flush: () => void): Promise<void> {
    for (const name of await readdir(from).catch(() => [] as string[])) {
      if (!FILE_NAME.test(name)) continue;
      const file = join(from, name);
      const entry = await readEntry(file).catch(() => undefined);
      if (!entry) continue;
      if (!this.knownShards.has(shard)) {
        await mkdir(this.path(shard), { recursive: true, mode: 0o700 });
        this.knownShards.add(shard);
      }
      const rel = `${shard}/${name}`;
      // Another process moving the same directory took it first: ENOENT.
      const moved = await rename(file, this.path(rel)).then(() => true, () => false);
      if (!moved) continue;
      found.push({ key: entry.key, etag: entry.etag, owner: entry.owner, size: entry.size, offset: entry.offset, file: rel, cachedAt: entry.cachedAt });
      if (found.length >= ADOPT_BATCH) flush();
    }
  }

  private async removeAll(): Promise<void> {
    for (const name of await readdir(this.opts.dir)) await rm(join(this.opts.dir, name), { recursive: true, force: true });
  }
}


/**
 * One body being written: a temp file with the header, the body appended by the fill and read back by
 * the requests that follow it (in this process directly, in others by following the file). The file
 * handle stays open while anyone reads it, even after the file was renamed into place or evicted.
 */
export class DiskSlot {
  private opening: Promise<FileHandle> | undefined;
  private users = 1;
  readonly offset: number;
  readonly id: EntryIdentity;

  constructor(
    private readonly tier: DiskTier,
    readonly fill: IndexFill,
    private readonly header: Buffer,
    readonly tempFile: string,
  ) {
    this.offset = header.length;
    this.id = { key: fill.key, etag: fill.etag, owner: fill.owner, size: fill.size, cachedAt: fill.cachedAt };
  }

  private handle(): Promise<FileHandle> {
    this.opening ??= (async () => {
      const fh = await open(this.tempFile, 'wx+', 0o600);
      try {
        await fh.write(this.header, 0, this.header.length, 0);
      } catch (err) {
        await fh.close().catch(() => undefined);
        throw err;
      }
      return fh;
    })();
    return this.opening;
  }

  /** Creates the temp file with its header now (others may follow it before the first body byte). */
  async start(): Promise<void> {
    await this.handle();
  }

  /** Writes body bytes at `position` (relative to the body). */
  async write(chunk: Buffer, position: number): Promise<void> {
    const fh = await this.handle();
    let done = 0;
    while (done < chunk.length) {
      const { bytesWritten } = await fh.write(chunk, done, chunk.length - done, this.offset + position + done);
      done += bytesWritten;
    }
  }

  /** Reads body bytes [position, position + length) that were written already. */
  async read(position: number, length: number): Promise<Buffer> {
    const fh = await this.handle();
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(buf, got, length - got, this.offset + position + got);
      if (bytesRead === 0) throw new Error('cache file shorter than written');
      got += bytesRead;
    }
    return buf;
  }

  /** Complete: synced, renamed into place and indexed, unless `wanted` says no by then. */
  async publish(wanted: () => boolean): Promise<void> {
    const fh = await this.handle();
    await fh.datasync();
    await this.tier.adopt(this, wanted);
  }

  /** Failed or purged: the registration and the temp file go. */
  async discard(): Promise<void> {
    await this.tier.abandon(this);
  }

  /** One more reader; each retain needs a release. The creator holds the first. */
  retain(): void {
    this.users++;
  }

  release(): void {
    if (--this.users > 0) return;
    void this.opening?.then(
      (fh) => fh.close().catch(() => undefined),
      () => undefined,
    );
  }
}
