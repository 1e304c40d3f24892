// The scrub: re-reads every blob a row references and checks it against the digest recorded when it
// was written (its CRC32C, or the MD5 of an older row's ETag), as Garage's and MinIO's scrubbers do, at a
// bounded rate so serving traffic keeps the disk. It reads through the same checked read as a GET
// (blob-digest.ts), so a mismatch is reported the same way (corruption.ts: marked, logged, counted); a
// blob that reads back right again is unmarked. Run on demand by `s3edge scrub run` (full speed, a
// separate process on the same data directory) and in the server (integrity.scrub*, one pass per
// interval). A blob a row still references but the store no longer has is reported as missing (the
// same way); one whose row went while the pass ran is passed over. Stopping interrupts a pass at once.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { BlobRefsRepo } from '../db/repos/blob-refs.js';
import type { BlobToCheck, IntegrityRepo } from '../db/repos/integrity.js';
import type { ObjectsRepo } from '../db/repos/objects.js';
import type { StorageBackend } from './backend.js';
import { BlobDigestMismatch, checkBuffer, formatDigest, type ReadVerification } from './blob-digest.js';
import { blobGone, isInlineBlobId } from './blob-id.js';
import type { CorruptionReporter } from './corruption.js';

export interface ScrubContext {
  storage: StorageBackend;
  integrity: IntegrityRepo;
  blobRefs: BlobRefsRepo;
  /** Where the bytes of small objects kept in the database are read. */
  objects: Pick<ObjectsRepo, 'inlineData'>;
  corruption: CorruptionReporter;
  log: Pick<Logger, 'warn'>;
}

export interface ScrubRun {
  checked: number;
  bytes: number;
  corrupt: { owner: string; expected: string; actual: string }[];
  /** Owners of blobs still referenced but gone from the store. */
  missing: string[];
}

export interface ScrubOptions {
  /** Read at most this many bytes a second; 0: as fast as storage goes. */
  bytesPerSecond: number;
  /** Ends the pass early, even in the middle of a blob (or of a pause to keep the rate). */
  signal?: AbortSignal;
}

/** Reads a blob whole through its check, at no more than the given rate; rejects with BlobDigestMismatch. */
async function readChecked(ctx: ScrubContext, blob: BlobToCheck, opts: ScrubOptions, counted: (n: number) => void): Promise<void> {
  const verify: ReadVerification = { expected: blob.expected, onMismatch: (err) => void ctx.corruption.report(blob, err, 'scrub') };
  if (isInlineBlobId(blob.blobId)) {
    const data = await ctx.objects.inlineData(blob.blobId);
    if (!data) throw blobGone(blob.blobId);
    counted(data.length);
    checkBuffer(data, verify);
    return;
  }
  // Paced on a monotonic clock: a wall-clock jump neither pauses the scrub for an hour nor unpaces it.
  const started = performance.now();
  let read = 0;
  const { signal } = opts;
  for await (const chunk of await ctx.storage.read(blob.blobId, { verify, ...(signal ? { signal } : {}) })) {
    read += (chunk as Buffer).length;
    counted((chunk as Buffer).length);
    if (opts.bytesPerSecond > 0) {
      const due = started + (read / opts.bytesPerSecond) * 1000;
      const now = performance.now();
      if (due > now) await sleep(due - now, undefined, signal ? { signal } : {});
    }
  }
}

export async function scrubBlobs(ctx: ScrubContext, opts: ScrubOptions): Promise<ScrubRun> {
  const run: ScrubRun = { checked: 0, bytes: 0, corrupt: [], missing: [] };
  const blobs = await ctx.integrity.blobsToCheck();
  // Marks of blobs no row references any more (rewritten or deleted objects) go.
  const referenced = new Set(blobs.map((b) => b.blobId));
  for (const marked of await ctx.integrity.corrupt()) if (!referenced.has(marked.blobId)) await ctx.integrity.forget(marked.blobId);
  for (const blob of blobs) {
    if (opts.signal?.aborted) break;
    try {
      await readChecked(ctx, blob, opts, (n) => (run.bytes += n));
    } catch (err) {
      if (opts.signal?.aborted) break;
      if (err instanceof BlobDigestMismatch) {
        run.checked++;
        run.corrupt.push({ owner: blob.owner, expected: formatDigest(err.expected), actual: formatDigest(err.actual) });
      } else if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        // Gone from the store: lost, if a row still needs it; else deleted or overwritten since the list was read.
        if (await ctx.blobRefs.isReferenced(blob.blobId)) {
          await ctx.corruption.reportMissing(blob, 'scrub');
          run.missing.push(blob.owner);
        }
      } else {
        ctx.log.warn({ err, owner: blob.owner }, 'scrub: could not read a blob');
      }
      continue;
    }
    run.checked++;
    await ctx.integrity.forget(blob.blobId);
  }
  return run;
}

export interface ScrubStats {
  runs: number;
  checked: number;
  bytes: number;
  corruptFound: number;
  missingFound: number;
}

/** The server's scrub: one pass at `bytesPerSecond` now and then every `intervalMs` after a pass ends. */
export class Scrubber {
  private readonly totals: ScrubStats = { runs: 0, checked: 0, bytes: 0, corruptFound: 0, missingFound: 0 };
  private readonly stopping = new AbortController();
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
    if (this.stopping.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.running = scrubBlobs(this.ctx, { bytesPerSecond: this.bytesPerSecond, signal: this.stopping.signal })
        .then((run) => {
          this.totals.runs++;
          this.totals.checked += run.checked;
          this.totals.bytes += run.bytes;
          this.totals.corruptFound += run.corrupt.length;
          this.totals.missingFound += run.missing.length;
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
    this.stopping.abort();
    clearTimeout(this.timer);
    await this.running;
  }
}
