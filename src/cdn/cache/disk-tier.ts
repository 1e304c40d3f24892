// The disk tier: cached bodies as files under <dataDir>/cdn-cache, bounded by bytes, least recently
// used evicted first (an lru-cache index whose dispose deletes the file). A body is written to
// tmp/<random> and renamed to <xx>/<random> once complete and synced, so a file under a shard
// directory is always whole. Each file starts with a small header naming what it holds (cache key,
// ETag, owner, size, time cached): at start the index is rebuilt from the files, and temp files,
// foreign or corrupt files are deleted. File names are random: no key or id reaches the file system.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';

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
/** A header longer than this is not one of ours (a 1024-byte key escapes to well under it). */
const MAX_HEADER_JSON = 16 * 1024;
const FILE_NAME = /^[0-9a-f]{32}$/;
const SHARD_NAME = /^[0-9a-f]{2}$/;

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

/** The entry a complete cache file holds, or undefined if the file is not one (wrong magic, torn, bad JSON). */
export async function readEntry(file: string): Promise<DiskEntry | undefined> {
  const fh = await open(file, 'r');
  try {
    const head = Buffer.alloc(MAGIC.length + 4);
    if ((await fh.read(head, 0, head.length, 0)).bytesRead !== head.length || !head.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
    const jsonLength = head.readUInt32BE(MAGIC.length);
    if (jsonLength === 0 || jsonLength > MAX_HEADER_JSON) return undefined;
    const json = Buffer.alloc(jsonLength);
    if ((await fh.read(json, 0, jsonLength, head.length)).bytesRead !== jsonLength) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(json.toString('utf8'));
    } catch {
      return undefined;
    }
    if (!isIdentity(parsed)) return undefined;
    const offset = head.length + jsonLength;
    // A file cut short (or grown) is not the body its header describes.
    if ((await fh.stat()).size !== offset + parsed.size) return undefined;
    return { key: parsed.key, etag: parsed.etag, owner: parsed.owner, size: parsed.size, cachedAt: parsed.cachedAt, file, offset };
  } finally {
    await fh.close();
  }
}

export interface DiskTierOptions {
  dir: string;
  maxBytes: number;
  log: Pick<Logger, 'warn'>;
}

export class DiskTier {
  private readonly lru: LRUCache<string, DiskEntry> | undefined;
  private readonly tmpDir: string;
  private readonly knownShards = new Set<string>();
  /** Bytes promised to fills in flight: the bound covers them too. */
  private reserved = 0;
  private readonly removals = new Set<Promise<void>>();

  private constructor(private readonly opts: DiskTierOptions) {
    this.tmpDir = join(opts.dir, 'tmp');
    if (opts.maxBytes > 0) {
      this.lru = new LRUCache<string, DiskEntry>({
        maxSize: opts.maxBytes,
        sizeCalculation: (e) => Math.max(1, e.offset + e.size),
        // Evicted, replaced or purged: the file goes. A reader that has it open keeps its bytes (POSIX).
        dispose: (e) => this.removeFile(e.file),
      });
    }
  }

  /** Opens the tier: deletes temp files and rebuilds the index from the complete files. */
  static async open(opts: DiskTierOptions): Promise<DiskTier> {
    const tier = new DiskTier(opts);
    await mkdir(opts.dir, { recursive: true, mode: 0o700 });
    await rm(tier.tmpDir, { recursive: true, force: true });
    if (tier.lru) {
      await mkdir(tier.tmpDir, { recursive: true, mode: 0o700 });
      await tier.rebuild();
    } else {
      // Disabled: what an earlier run cached is of no use.
      await tier.removeAll();
    }
    return tier;
  }

  private async rebuild(): Promise<void> {
    const found: DiskEntry[] = [];
    for (const shard of await readdir(this.opts.dir)) {
      if (shard === 'tmp') continue;
      const shardDir = join(this.opts.dir, shard);
      if (!SHARD_NAME.test(shard) || !(await stat(shardDir)).isDirectory()) {
        await rm(shardDir, { recursive: true, force: true });
        continue;
      }
      this.knownShards.add(shard);
      for (const name of await readdir(shardDir)) {
        const file = join(shardDir, name);
        const entry = FILE_NAME.test(name) ? await readEntry(file).catch(() => undefined) : undefined;
        if (entry) found.push(entry);
        else await rm(file, { recursive: true, force: true });
      }
    }
    // Oldest first, so the newest end up most recently used; of two files for one key the newer wins
    // (the older one's dispose deletes it).
    found.sort((a, b) => a.cachedAt - b.cachedAt);
    for (const entry of found) this.insert(entry);
  }

  private async removeAll(): Promise<void> {
    for (const name of await readdir(this.opts.dir)) await rm(join(this.opts.dir, name), { recursive: true, force: true });
  }

  private removeFile(file: string): void {
    const removal = unlink(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') this.opts.log.warn({ err }, 'cdn cache: file removal failed');
    });
    this.removals.add(removal);
    void removal.finally(() => this.removals.delete(removal));
  }

  /** Resolves once the files evicted or purged so far are deleted. */
  async idle(): Promise<void> {
    while (this.removals.size > 0) await Promise.all(this.removals);
  }

  /** Adds a complete file to the index (evicting what no longer fits); a file too big is deleted. */
  private insert(entry: DiskEntry): void {
    if (!this.lru || entry.offset + entry.size > this.opts.maxBytes) {
      this.removeFile(entry.file);
      return;
    }
    this.lru.set(entry.key, entry);
  }

  get(key: string): DiskEntry | undefined {
    return this.lru?.get(key);
  }

  peek(key: string): DiskEntry | undefined {
    return this.lru?.peek(key);
  }

  delete(key: string): boolean {
    return this.lru?.delete(key) ?? false;
  }

  *objects(): Generator<[string, DiskEntry]> {
    if (this.lru) yield* this.lru.entries();
  }

  /**
   * Room for a body: evicts least recently used entries until the index, the fills in flight and this
   * one fit the bound. undefined when they cannot (the tier is off, or fills in flight hold the room).
   */
  reserve(id: EntryIdentity): DiskSlot | undefined {
    if (!this.lru) return undefined;
    const header = encodeHeader(id);
    const total = header.length + id.size;
    if (this.reserved + total > this.opts.maxBytes) return undefined;
    while (this.lru.size > 0 && this.lru.calculatedSize + this.reserved + total > this.opts.maxBytes) this.lru.pop();
    this.reserved += total;
    return new DiskSlot(this, id, header, join(this.tmpDir, randomBytes(16).toString('hex')));
  }

  /** Called by a slot once, whatever became of it. */
  unreserve(bytes: number): void {
    this.reserved -= bytes;
  }

  /**
   * Moves a complete temp file into its shard and indexes it, once the files evicted to make room are
   * gone: the files on disk never exceed the bound.
   */
  async adopt(tempFile: string, entry: Omit<DiskEntry, 'file'>, wanted: () => boolean): Promise<void> {
    await this.idle();
    const name = randomBytes(16).toString('hex');
    const shard = name.slice(0, 2);
    const shardDir = join(this.opts.dir, shard);
    if (!this.knownShards.has(shard)) {
      await mkdir(shardDir, { recursive: true, mode: 0o700 });
      this.knownShards.add(shard);
    }
    const file = join(shardDir, name);
    await rename(tempFile, file);
    // Purged while it was being synced: it must not come back.
    if (wanted()) this.insert({ ...entry, file });
    else this.removeFile(file);
  }

  stats(): { bytes: number; entries: number } {
    return { bytes: this.lru?.calculatedSize ?? 0, entries: this.lru?.size ?? 0 };
  }
}

/**
 * One body being written: a temp file with the header, the body appended by the fill and read back by
 * the requests that follow it. The file handle stays open while anyone reads it, even after the
 * file was renamed into place or evicted.
 */
export class DiskSlot {
  private opening: Promise<FileHandle> | undefined;
  private users = 1;
  private settled = false;
  readonly offset: number;

  constructor(
    private readonly tier: DiskTier,
    readonly id: EntryIdentity,
    private readonly header: Buffer,
    private readonly tempFile: string,
  ) {
    this.offset = header.length;
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
    try {
      const fh = await this.handle();
      await fh.datasync();
      await this.tier.adopt(this.tempFile, { ...this.id, offset: this.offset }, wanted);
    } finally {
      this.settle();
    }
  }

  /** Failed or purged: the temp file goes. */
  async discard(): Promise<void> {
    this.settle();
    await unlink(this.tempFile).catch(() => undefined);
  }

  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    this.tier.unreserve(this.offset + this.id.size);
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
