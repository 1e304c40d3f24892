// Blob removals held for a grace period (migration 020, storage/blob-removals.ts).
import type { SqlExecutor } from '../store/types.js';

const SCHEDULE = `INSERT INTO blob_removals (blob_id, due_at) VALUES (?, ?)
  ON CONFLICT (blob_id) DO UPDATE SET due_at = CASE WHEN excluded.due_at > blob_removals.due_at THEN excluded.due_at ELSE blob_removals.due_at END`;
const DUE = 'SELECT blob_id FROM blob_removals WHERE due_at <= ? ORDER BY due_at, blob_id LIMIT ?';
const DONE = 'DELETE FROM blob_removals WHERE blob_id = ? AND due_at <= ?';

export class BlobRemovalsRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Records that `blobId` may be removed from `dueAt` on (a later due time wins over an earlier one). */
  async schedule(blobId: string, dueAt: number): Promise<void> {
    await this.db.run(SCHEDULE, [blobId, dueAt]);
  }

  /** Up to `limit` blobs due at `now`, the longest due first. */
  async due(now: number, limit: number): Promise<string[]> {
    return (await this.db.all<{ blob_id: string }>(DUE, [now, limit])).map((r) => r.blob_id);
  }

  /** The removal of `blobId` is done, unless it was scheduled again for later meanwhile. */
  async done(blobId: string, now: number): Promise<void> {
    await this.db.run(DONE, [blobId, now]);
  }
}
