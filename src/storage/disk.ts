// Local-disk StorageBackend: <root>/tmp/<id> while streaming, fsync, then rename to <root>/blobs/<ab>/<id>.
import { constants } from 'node:fs';
import { access, mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { S3Error } from '../errors/s3-errors.js';
import { isBackendBlobId, newBlobId } from './blob-id.js';
import { BufferPool, IO_BUFFER_BYTES } from './buffer-pool.js';
import { FileBody } from './file-body.js';
import type { ReadOptions, StageOptions, StagedBlob, StorageBackend, StoredBlob } from './backend.js';
import { Crc32c, DigestCheck } from './blob-digest.js';

/** Large buffers: node's 16 KiB/64 KiB stream defaults halve file throughput. */
const IO_CHUNK = IO_BUFFER_BYTES;

export class DiskStorage implements StorageBackend {
  private readonly tmpDir: string;
  private readonly blobDir: string;
  private readonly knownDirs = new Set<string>();
  /** Read buffers (FileBody's ring); at most 16 MiB of idle ones stay allocated. */
  private readonly buffers = new BufferPool(16);

  constructor(root: string) {
    this.tmpDir = join(root, 'tmp');
    this.blobDir = join(root, 'blobs');
  }

  async init(): Promise<void> {
    await mkdir(this.blobDir, { recursive: true, mode: 0o700 });
    // Not emptied here: every worker opens the backend, and one started again after a crash must not
    // take the files of another's uploads in flight. The process that runs the jobs sweeps (sweepStaged).
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
  }

  /** Temp files last written before `before`: uploads of an earlier process that never committed. */
  async sweepStaged(before: number): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.tmpDir).catch(() => [] as string[])) {
      const file = join(this.tmpDir, name);
      const info = await stat(file).catch(() => undefined);
      if (info === undefined || info.mtimeMs >= before) continue;
      await rm(file, { recursive: true, force: true });
      removed++;
    }
    return removed;
  }

  async probe(): Promise<void> {
    // A volume that went away (unmounted, removed) or turned read-only fails here.
    await Promise.all([access(this.tmpDir, constants.W_OK), access(this.blobDir, constants.W_OK)]);
  }

  private blobPath(blobId: string): { dir: string; file: string } {
    if (!isBackendBlobId(blobId)) throw new Error('invalid blob id');
    const dir = join(this.blobDir, blobId.slice(-2));
    return { dir, file: join(dir, blobId) };
  }

  /** A writev batch: up to IO_CHUNK of the body's own chunks, plus the one that crosses it. */
  stageBufferBytes(sizeHint?: number): number {
    return Math.min(sizeHint ?? 2 * IO_CHUNK, 2 * IO_CHUNK);
  }

  async stage(body: Readable, opts: StageOptions = {}): Promise<StagedBlob> {
    const blobId = newBlobId();
    const tmp = join(this.tmpDir, blobId);
    const fh = await open(tmp, 'wx', 0o600);
    let size = 0;
    const crc = new Crc32c();
    try {
      size = await writeAll(body, fh, crc, opts);
      await fh.sync();
    } catch (err) {
      // A full disk (ENOSPC) lands here too: the partial temp file must not stay and hold the space.
      body.destroy();
      await fh.close().catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    await fh.close().catch(async (err: unknown) => {
      await unlink(tmp).catch(() => undefined);
      throw err;
    });

    let done = false;
    /** Renamed into blobs/ but the commit did not finish (directory fsync failed): abort removes it there. */
    let placed: string | undefined;
    return {
      blobId,
      size,
      crc32c: crc.value,
      commit: async () => {
        const { dir, file } = this.blobPath(blobId);
        if (!this.knownDirs.has(dir)) {
          await mkdir(dir, { recursive: true, mode: 0o700 });
          this.knownDirs.add(dir);
        }
        await rename(tmp, file);
        placed = file;
        await fsyncDir(dir);
        placed = undefined;
        done = true;
      },
      abort: async () => {
        if (done) return;
        done = true;
        await unlink(placed ?? tmp).catch(() => undefined);
      },
    };
  }

  async read(blobId: string, opts: ReadOptions = {}): Promise<Readable> {
    const { file } = this.blobPath(blobId);
    // Open first so a missing blob rejects here (ENOENT) rather than as a stream error mid-response.
    const fh = await open(file, 'r');
    try {
      const end = opts.range ? opts.range.end + 1 : (await fh.stat()).size;
      return new FileBody(fh, opts.range?.start ?? 0, end, this.buffers, { signal: opts.signal, check: opts.verify && new DigestCheck(opts.verify) });
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

  async *list(): AsyncIterable<StoredBlob> {
    for (const dir of await readdir(this.blobDir).catch(() => [] as string[])) {
      const names = await readdir(join(this.blobDir, dir)).catch(() => [] as string[]);
      for (const blobId of names) {
        // A file someone else put here is not a blob of ours: never listed, so never collected.
        if (!isBackendBlobId(blobId)) continue;
        const info = await stat(join(this.blobDir, dir, blobId)).catch(() => undefined);
        if (info?.isFile()) yield { blobId, size: info.size, modifiedAt: info.mtimeMs };
      }
    }
  }

  async close(): Promise<void> {
    this.knownDirs.clear();
    this.buffers.clear();
  }
}

/** Copies body into the file in batches of about IO_CHUNK bytes (one writev each), into `crc` too; returns the byte count. */
async function writeAll(body: Readable, fh: FileHandle, crc: Crc32c, opts: StageOptions): Promise<number> {
  const { signal, sizeHint } = opts;
  let batch: Buffer[] = [];
  let batched = 0;
  let total = 0;
  const flush = async (): Promise<void> => {
    let written = 0;
    while (written < batched) {
      const { bytesWritten } = await fh.writev(written === 0 ? batch : remaining(batch, written));
      written += bytesWritten;
    }
    batch = [];
    batched = 0;
  };
  for await (const chunk of body) {
    signal?.throwIfAborted();
    const buf = chunk as Buffer;
    crc.update(buf);
    batch.push(buf);
    batched += buf.length;
    total += buf.length;
    if (sizeHint !== undefined && total > sizeHint) throw new S3Error('IncompleteBody', 'The request body is longer than its declared length.');
    if (batched >= IO_CHUNK) await flush();
  }
  signal?.throwIfAborted();
  if (batched > 0) await flush();
  return total;
}

/** The part of a batch after its first `skip` bytes (after a short writev). */
function remaining(batch: Buffer[], skip: number): Buffer[] {
  const out: Buffer[] = [];
  for (const b of batch) {
    if (skip >= b.length) {
      skip -= b.length;
      continue;
    }
    out.push(skip > 0 ? b.subarray(skip) : b);
    skip = 0;
  }
  return out;
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
