// Removal of freed blobs when nodes share one upstream store (migration 020): a freed blob is recorded
// as due after a grace period instead of removed at once, because another node may be streaming it
// under a lease of its own; the node running the singleton jobs removes the due ones every few seconds.
// A removal that fails stays recorded and is tried again; a blob already gone counts as removed (the
// backends' remove is idempotent).
import type { Logger } from 'pino';
import type { BlobRemovalsRepo } from '../db/repos/blob-removals.js';
import type { StorageBackend } from './backend.js';

/** How long a freed blob stays readable to other nodes' readers. */
export const REMOVAL_GRACE_MS = 5 * 60_000;
const BATCH = 200;

export interface BlobRemovalsOptions {
  repo: BlobRemovalsRepo;
  storage: Pick<StorageBackend, 'remove'>;
  now: () => number;
  log: Pick<Logger, 'warn'>;
  graceMs?: number;
}

export class BlobRemovals {
  constructor(private readonly opts: BlobRemovalsOptions) {}

  /** BlobLeases' remove when the metadata is shared: records the blob as due after the grace. */
  schedule = async (blobId: string): Promise<void> => {
    const { opts } = this;
    await opts.repo.schedule(blobId, opts.now() + (opts.graceMs ?? REMOVAL_GRACE_MS)).catch((err: unknown) =>
      // Not recorded: the blob stays until the collector finds it unreferenced (storage/blob-gc.ts).
      opts.log.warn({ err, blobId }, 'blob removal could not be recorded; the blob collector will take it'),
    );
  };

  /** Removes every due blob; the number removed. */
  async removeDue(): Promise<number> {
    const { repo, storage, now, log } = this.opts;
    let removed = 0;
    for (;;) {
      const at = now();
      const due = await repo.due(at, BATCH);
      let failed = 0;
      for (const blobId of due) {
        try {
          await storage.remove(blobId);
          await repo.done(blobId, at);
          removed++;
        } catch (err) {
          failed++;
          log.warn({ err, blobId }, 'a due blob removal failed; tried again on the next round');
        }
      }
      if (due.length < BATCH || failed > 0) return removed;
    }
  }
}
