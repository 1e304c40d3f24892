// The scrub: re-reads every blob a row references and compares its MD5 with the one recorded when it
// was written (as Garage's and MinIO's scrubbers do), at a bounded rate so serving traffic keeps the
// disk. A mismatch is marked in corrupt_blobs (listed by `s3edge scrub list`), logged and counted; a
// blob that reads back right again is unmarked. Run on demand by `s3edge scrub run` (full speed, a
// separate process on the same data directory) and in the server (integrity.scrub*, one pass per
// interval). Only what was read whole is judged: a vanished blob is reported as missing.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { BlobToCheck, IntegrityRepo } from '../db/repos/integrity.js';
import type { StorageBackend } from './backend.js';

export interface ScrubContext {
  storage: StorageBackend;
  integrity: IntegrityRepo;
  clock: () => Date;
  log: Pick<Logger, 'info' | 'warn'>;
}

export interface ScrubRun {
  checked: number;
  bytes: number;
  corrupt: { owner: string; expectedMd5: string; actualMd5: string }[];
  missing: string[];
}

export interface ScrubOptions {
  /** Read at most this many bytes a second; 0: as fast as storage goes. */
  bytesPerSecond: number;
  stop?: () => boolean;
}

/** MD5 of a blob's bytes, read at no more than the given rate. */
async function md5Of(ctx: ScrubContext, blob: BlobToCheck, opts: ScrubOptions, counted: (n: number) => void): Promise<string> {
  const hash = createHash('md5');
  const started = Date.now();
  let read = 0;
  for await (const chunk of await ctx.storage.read(blob.blobId)) {
    hash.update(chunk as Buffer);
    read += (chunk as Buffer).length;
    counted((chunk as Buffer).length);
    if (opts.bytesPerSecond > 0) {
      const due = started + (read / opts.bytesPerSecond) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
    }
  }
  return hash.digest('hex');
}

export async function scrubBlobs(ctx: ScrubContext, opts: ScrubOptions): Promise<ScrubRun> {
  const run: ScrubRun = { checked: 0, bytes: 0, corrupt: [], missing: [] };
  const blobs = ctx.integrity.blobsToCheck();
  // Marks of blobs no row references any more (rewritten or deleted objects) go.
  const referenced = new Set(blobs.map((b) => b.blobId));
  for (const marked of ctx.integrity.corrupt()) if (!referenced.has(marked.blobId)) ctx.integrity.forget(marked.blobId);
  for (const blob of blobs) {
    if (opts.stop?.()) break;
    let actual: string;
    try {
      actual = await md5Of(ctx, blob, opts, (n) => (run.bytes += n));
    } catch (err) {
      // Deleted or overwritten since the list was read (ENOENT), or the backend failed: not a verdict.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') run.missing.push(blob.owner);
      else ctx.log.warn({ err, owner: blob.owner }, 'scrub: could not read a blob');
      continue;
    }
    run.checked++;
    if (actual === blob.md5Hex) {
      ctx.integrity.forget(blob.blobId);
      continue;
    }
    ctx.integrity.markCorrupt(blob, actual, ctx.clock().getTime());
    run.corrupt.push({ owner: blob.owner, expectedMd5: blob.md5Hex, actualMd5: actual });
    ctx.log.warn({ owner: blob.owner, expectedMd5: blob.md5Hex, actualMd5: actual }, 'scrub: stored bytes do not match their digest');
  }
  return run;
}

export interface ScrubStats {
  runs: number;
  checked: number;
  bytes: number;
  corruptFound: number;
}

/** The server's scrub: one pass at `bytesPerSecond` now and then every `intervalMs` after a pass ends. */
export class Scrubber {
  private readonly totals: ScrubStats = { runs: 0, checked: 0, bytes: 0, corruptFound: 0 };
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly ctx: ScrubContext,
    private readonly bytesPerSecond: number,
    private readonly intervalMs: number,
  ) {
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = scrubBlobs(this.ctx, { bytesPerSecond: this.bytesPerSecond, stop: () => this.stopped })
        .then((run) => {
          this.totals.runs++;
          this.totals.checked += run.checked;
          this.totals.bytes += run.bytes;
          this.totals.corruptFound += run.corrupt.length;
        })
        .catch((err: unknown) => this.ctx.log.warn({ err }, 'scrub: pass failed'))
        .finally(() => this.schedule(this.intervalMs));
    }, delayMs);
    this.timer.unref();
  }

  stats(): ScrubStats {
    return { ...this.totals };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
