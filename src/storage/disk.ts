// Local-disk StorageBackend: <root>/tmp/<id> while streaming, fsync, then rename to <root>/blobs/<ab>/<id>.
import { mkdir, open, readdir, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { newBlobId } from './blob-id.js';
import { BufferPool, IO_BUFFER_BYTES } from './buffer-pool.js';
import { FileBody } from './file-body.js';
import type { ReadRange, StagedBlob, StorageBackend } from './backend.js';

/** Large buffers: node's 16 KiB/64 KiB stream defaults halve file throughput. */
const IO_CHUNK = IO_BUFFER_BYTES;
/**
 * While a large body streams in, an fdatasync is started (not awaited) every this many bytes, so the
 * disk writes back as the bytes arrive instead of all at the final fsync: the page cache would
 * otherwise hold the whole body, and the final fsync of 256 MiB took ~130 ms here.
 */
const WRITEBACK_EVERY = 16 * 1024 * 1024;

export class DiskStorage implements StorageBackend {
  private readonly tmpDir: string;
  private readonly blobDir: string;
  private readonly knownDirs = new Set<string>();
  /** Write and read buffers; at most 16 MiB of idle ones stay allocated. */
  private readonly buffers = new BufferPool(16);

  constructor(root: string) {
    this.tmpDir = join(root, 'tmp');
    this.blobDir = join(root, 'blobs');
  }

  async init(): Promise<void> {
    await mkdir(this.blobDir, { recursive: true, mode: 0o700 });
    // Orphaned temp files are uploads that never committed: remove them all.
    await rm(this.tmpDir, { recursive: true, force: true });
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
  }

  private blobPath(blobId: string): { dir: string; file: string } {
    if (!/^[0-9a-z]{16,64}$/.test(blobId)) throw new Error('invalid blob id');
    const dir = join(this.blobDir, blobId.slice(-2));
    return { dir, file: join(dir, blobId) };
  }

  async stage(body: Readable, opts: { signal?: AbortSignal } = {}): Promise<StagedBlob> {
    const blobId = newBlobId();
    const tmp = join(this.tmpDir, blobId);
    const fh = await open(tmp, 'wx', 0o600);
    let size = 0;
    try {
      size = await writeAll(body, fh, this.buffers, opts.signal);
      await fh.sync();
    } catch (err) {
      body.destroy();
      await fh.close().catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    await fh.close();

    let done = false;
    return {
      blobId,
      size,
      commit: async () => {
        const { dir, file } = this.blobPath(blobId);
        if (!this.knownDirs.has(dir)) {
          await mkdir(dir, { recursive: true, mode: 0o700 });
          this.knownDirs.add(dir);
        }
        await rename(tmp, file);
        done = true;
        await fsyncDir(dir);
      },
      abort: async () => {
        if (done) return;
        done = true;
        await unlink(tmp).catch(() => undefined);
      },
    };
  }

  async read(blobId: string, opts: { range?: ReadRange; signal?: AbortSignal } = {}): Promise<Readable> {
    const { file } = this.blobPath(blobId);
    // Open first so a missing blob rejects here (ENOENT) rather than as a stream error mid-response.
    const fh = await open(file, 'r');
    try {
      const end = opts.range ? opts.range.end + 1 : (await fh.stat()).size;
      return new FileBody(fh, opts.range?.start ?? 0, end, this.buffers, opts.signal);
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  async remove(blobId: string): Promise<void> {
    await unlink(this.blobPath(blobId).file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async close(): Promise<void> {
    this.knownDirs.clear();
    this.buffers.clear();
  }
}

/** Writes all of buf[0, length) at the file's current position. */
async function writeFully(fh: FileHandle, buf: Buffer, length: number): Promise<void> {
  let at = 0;
  while (at < length) at += (await fh.write(buf, at, length - at)).bytesWritten;
}

/**
 * Copies body into the file through pooled buffers (each chunk is copied at once, so it dies young), one write of IO_CHUNK bytes in flight while the
 * next fills; returns the byte count. Every WRITEBACK_EVERY bytes an fdatasync is started (one at a
 * time, not awaited); the caller's final fsync still makes everything durable.
 */
async function writeAll(body: Readable, fh: FileHandle, buffers: BufferPool, signal?: AbortSignal): Promise<number> {
  let current: Buffer | undefined;
  let used = 0;
  let total = 0;
  let inFlight: Promise<void> | undefined;
  let unsynced = 0;
  let writeback: Promise<void> | undefined;
  let writebackError: unknown;
  const startWriteback = (): void => {
    if (unsynced < WRITEBACK_EVERY || writeback) return;
    unsynced = 0;
    writeback = fh.datasync().then(
      () => {
        writeback = undefined;
      },
      (err: unknown) => {
        writebackError ??= err;
        writeback = undefined;
      },
    );
  };
  const submit = async (): Promise<void> => {
    if (inFlight) await inFlight;
    inFlight = undefined;
    startWriteback();
    const buf = current as Buffer;
    const length = used;
    current = undefined;
    used = 0;
    unsynced += length;
    const write = writeFully(fh, buf, length).finally(() => buffers.give(buf));
    write.catch(() => undefined); // surfaces at the next await of inFlight
    inFlight = write;
  };
  try {
    for await (const chunk of body) {
      signal?.throwIfAborted();
      const buf = chunk as Buffer;
      let at = 0;
      while (at < buf.length) {
        current ??= buffers.take();
        const n = buf.copy(current, used, at);
        used += n;
        at += n;
        total += n;
        if (used === current.length) await submit();
      }
    }
    signal?.throwIfAborted();
    if (used > 0) await submit();
    await inFlight;
  } finally {
    // Never leave a write or an fdatasync running on a file the caller is about to close.
    await inFlight?.catch(() => undefined);
    await writeback;
    if (current) buffers.give(current);
  }
  if (writebackError) throw writebackError;
  return total;
}

/** Makes a rename durable: the directory entry itself must reach the disk. */
async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** For tests and tools: the blob files currently on disk. */
export async function listBlobFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of await readdir(join(root, 'blobs')).catch(() => [] as string[])) {
    for (const f of await readdir(join(root, 'blobs', sub))) out.push(f);
  }
  return out;
}
