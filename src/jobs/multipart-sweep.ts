// Abandoned multipart uploads: aborted once older than multipartMaxAgeSeconds, by a sweep at start
// and every hour. The sweep also empties the blob trash (parts of aborted, completed-without and
// bucket-deleted uploads) and forgets old completions.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { MultipartRepo } from '../db/repos/multipart.js';
import type { Durability } from '../db/wal-sync.js';
import type { StorageBackend } from '../storage/backend.js';
import { startPeriodic, type Periodic } from './periodic.js';

export const SWEEP_INTERVAL_MS = 60 * 60 * 1000;
const BATCH = 256;

/** What emptying the trash needs (the context has it). */
export interface TrashDeps {
  multipart: MultipartRepo;
  storage: Pick<StorageBackend, 'remove'>;
  durability: Pick<Durability, 'syncSoon'>;
}

/** What the sweep needs. */
export interface SweepDeps extends TrashDeps {
  config: Pick<Config, 'multipartMaxAgeSeconds'>;
  clock: () => Date;
  log: Pick<Logger, 'info' | 'warn'>;
}

export interface SweepResult {
  aborted: number;
  blobsRemoved: number;
  completionsForgotten: number;
}

/**
 * Removes every trashed blob from storage; returns how many. Safe to run concurrently. A blob that
 * cannot be removed stays in the trash for the next sweep: the batch goes on, then the error is thrown.
 */
export async function drainTrash(ctx: TrashDeps, stop: () => boolean = () => false): Promise<number> {
  let removed = 0;
  // The commits that trashed these blobs must be durable before the bytes go (a power loss would
  // bring back rows pointing at them).
  await ctx.durability.syncSoon();
  while (!stop()) {
    const batch = await ctx.multipart.trash(BATCH);
    let failure: unknown;
    for (const blobId of batch) {
      // Part blobs are never served to readers, so no lease can hold them.
      try {
        await ctx.storage.remove(blobId);
      } catch (err) {
        failure ??= err;
        continue;
      }
      await ctx.multipart.untrash(blobId);
      removed++;
    }
    if (failure !== undefined) throw failure;
    if (batch.length < BATCH) break;
  }
  return removed;
}

/** Aborts expired uploads, forgets old completions, empties the trash. `stop` ends it early (shutdown). */
export async function sweepMultipart(ctx: SweepDeps, stop: () => boolean = () => false): Promise<SweepResult> {
  const before = ctx.clock().getTime() - ctx.config.multipartMaxAgeSeconds * 1000;
  let aborted = 0;
  for (;;) {
    const ids = await ctx.multipart.expired(before, BATCH);
    for (const id of ids) if (await ctx.multipart.abort(id)) aborted++;
    if (ids.length < BATCH) break;
  }
  const completionsForgotten = await ctx.multipart.pruneCompleted(before);
  const blobsRemoved = await drainTrash(ctx, stop);
  if (aborted > 0) ctx.log.info({ aborted, blobsRemoved }, 'multipart: aborted abandoned uploads');
  return { aborted, blobsRemoved, completionsForgotten };
}

/** Sweeps now and every `intervalMs`; the timer never keeps the process alive. */
export function startMultipartSweeper(ctx: SweepDeps, intervalMs = SWEEP_INTERVAL_MS): Periodic {
  return startPeriodic((stopped) => sweepMultipart(ctx, stopped), intervalMs, (err) => ctx.log.warn({ err }, 'multipart: sweep failed'));
}
