// The blob collector: removes stored blobs that no row references. A crash between a blob's rename
// into place and its metadata commit, or before an overwritten version's bytes were released, leaves
// such a blob behind (docs/ARCHITECTURE.md "Garbage collection"). Safe against writers in flight: a
// blob younger than the grace period is never touched, and a candidate is looked at again just before
// it goes: a leased blob (a reader streams it, or its commit is in progress: commit-staged.ts) is
// skipped, and so is one a row references by then. Runs at start-up and then every interval, on disk
// and upstream S3 alike (StorageBackend.list); one blob that cannot be removed does not stop the pass.
// On the local disk the start-up pass also takes what an earlier process left, however young.
import type { Logger } from 'pino';
import type { BlobRefsRepo } from '../db/repos/blob-refs.js';
import type { StorageBackend } from './backend.js';
import type { BlobLeases } from './blob-leases.js';

export interface BlobGcContext {
  storage: StorageBackend;
  blobRefs: BlobRefsRepo;
  leases: BlobLeases;
  clock: () => Date;
  log: Pick<Logger, 'info' | 'warn'>;
  graceMs: number;
  /**
   * The backend's only writers are this node's processes, all started at or after this time (the start
   * of the process that collects): the first pass also takes unreferenced blobs written before it, however
   * young (StorageBackend.sweepStaged). Absent: the grace alone.
   */
  leftoversBefore?: number;
}

export interface BlobGcRun {
  scanned: number;
  collected: number;
  bytes: number;
  /** Removals that failed (logged; tried again next pass). */
  failed: number;
}

export interface BlobGcStats {
  runs: number;
  failures: number;
  collected: number;
  bytes: number;
}

/** One pass: every stored blob that is unreferenced, older than the grace period and not being read, removed. */
export async function collectBlobs(ctx: BlobGcContext, stop: () => boolean = () => false, leftoversBefore?: number): Promise<BlobGcRun> {
  const referenced = await ctx.blobRefs.referenced();
  // A crash's leftovers from before this process started cannot be a commit in flight: none of this
  // node's writers is that old, and the lease and row checks below still apply.
  const cutoff = Math.max(ctx.clock().getTime() - ctx.graceMs, leftoversBefore ?? Number.NEGATIVE_INFINITY);
  const run: BlobGcRun = { scanned: 0, collected: 0, bytes: 0, failed: 0 };
  for await (const blob of ctx.storage.list()) {
    if (stop()) break;
    run.scanned++;
    if (referenced.has(blob.blobId) || blob.modifiedAt > cutoff) continue;
    // The snapshot may predate a commit that finished since: in this order, a blob not leased now has
    // its row in by now if it is to have one (its commit held a lease until the row was written).
    if (ctx.leases.isLeased(blob.blobId) || (await ctx.blobRefs.isReferenced(blob.blobId))) continue;
    try {
      await ctx.storage.remove(blob.blobId);
    } catch (err) {
      run.failed++;
      ctx.log.warn({ err, blobId: blob.blobId }, 'blob gc: could not remove an unreferenced blob');
      continue;
    }
    run.collected++;
    run.bytes += blob.size;
  }
  if (run.collected > 0) ctx.log.info({ ...run }, 'blob gc: removed unreferenced blobs');
  return run;
}

export class BlobCollector {
  private readonly totals: BlobGcStats = { runs: 0, failures: 0, collected: 0, bytes: 0 };
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private readonly timer: NodeJS.Timeout;

  /** Collects now (in the background) and every `intervalMs`; the timer never keeps the process alive. */
  constructor(
    private readonly ctx: BlobGcContext,
    intervalMs: number,
  ) {
    this.runOnce();
    this.timer = setInterval(() => this.runOnce(), intervalMs);
    this.timer.unref();
  }

  /** Starts a pass after the one in progress, if any; resolves when it is done. */
  runOnce(): Promise<unknown> {
    this.running = this.running
      .then(async () => {
        if (this.stopped) return;
        const run = await collectBlobs(this.ctx, () => this.stopped, this.totals.runs === 0 ? this.ctx.leftoversBefore : undefined);
        this.totals.runs++;
        this.totals.collected += run.collected;
        this.totals.bytes += run.bytes;
        this.totals.failures += run.failed;
      })
      .catch((err: unknown) => {
        this.totals.failures++;
        this.ctx.log.warn({ err }, 'blob gc: pass failed');
      });
    return this.running;
  }

  stats(): BlobGcStats {
    return { ...this.totals };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }
}
