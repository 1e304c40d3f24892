// Bucket lifecycle rules, one JSON document per bucket (validated before they get here:
// src/s3/lifecycle.ts), and where the lifecycle job's walk of each bucket stands (migration 023;
// src/lifecycle/run.ts walks, resumes and records it).
import type { SqlExecutor } from '../store/types.js';
import { BucketDocumentRepo } from './bucket-document.js';
import type { ObjectTag } from './objects.js';

/** Which objects a rule applies to: every condition given must hold. */
export interface LifecycleFilter {
  prefix: string;
  tags: ObjectTag[];
  sizeGreaterThan: number | null;
  sizeLessThan: number | null;
  /** How the filter was written, so that GET gives back what PUT took: Prefix (legacy), Filter. */
  form: 'legacy-prefix' | 'filter';
  /** A Filter that named an empty Prefix (`<Prefix></Prefix>`), given back so. */
  emptyPrefix?: true;
}

/** One Rule of a LifecycleConfiguration; times are Unix ms. */
export interface LifecycleRule {
  id: string;
  enabled: boolean;
  filter: LifecycleFilter;
  expiration: { days: number } | { date: number } | { expiredObjectDeleteMarker: true } | null;
  noncurrentExpiration: { noncurrentDays: number; newerNoncurrentVersions: number | null } | null;
  abortIncompleteMultipartDays: number | null;
}

/** What a walk of a bucket does now: its versions (current, noncurrent, delete markers), then its multipart uploads. */
export type LifecyclePhase = 'versions' | 'uploads' | 'done';

export interface LifecycleProgress {
  bucketId: string;
  phase: LifecyclePhase;
  /** Resume after this key ('' from the start); in `uploads`, with idMarker, after that upload. */
  keyMarker: string;
  idMarker: string | null;
  /** When this walk began (Unix ms). */
  startedAt: number;
}

interface ProgressRow {
  bucket_id: string;
  phase: LifecyclePhase;
  key_marker: string;
  id_marker: string | null;
  started_at: number;
}

const BUCKET_IDS = 'SELECT bucket_id FROM bucket_lifecycle WHERE bucket_id > ? ORDER BY bucket_id LIMIT ?';
const GET_PROGRESS = 'SELECT bucket_id, phase, key_marker, id_marker, started_at FROM lifecycle_progress WHERE bucket_id = ?';
const SAVE_PROGRESS = `INSERT INTO lifecycle_progress (bucket_id, phase, key_marker, id_marker, started_at, updated_at)
  VALUES (@bucketId, @phase, @keyMarker, @idMarker, @startedAt, @updatedAt)
  ON CONFLICT (bucket_id) DO UPDATE SET phase = excluded.phase, key_marker = excluded.key_marker,
    id_marker = excluded.id_marker, started_at = excluded.started_at, updated_at = excluded.updated_at`;
const FORGET_PROGRESS = 'DELETE FROM lifecycle_progress WHERE bucket_id = ?';

export class BucketLifecycleRepo extends BucketDocumentRepo<LifecycleRule[]> {
  constructor(db: SqlExecutor, clock: () => number = Date.now) {
    super(db, 'bucket_lifecycle', clock);
  }

  /** New rules are walked from the start, at the job's next round: the walk of the old ones is forgotten. */
  override async put(bucketId: string, rules: LifecycleRule[]): Promise<void> {
    await super.put(bucketId, rules);
    await this.db.run(FORGET_PROGRESS, [bucketId]);
  }

  override async delete(bucketId: string): Promise<boolean> {
    await this.db.run(FORGET_PROGRESS, [bucketId]);
    return super.delete(bucketId);
  }

  /** Up to `limit` ids of buckets that have rules, after `after`, in id order. */
  async bucketIds(after: string, limit: number): Promise<string[]> {
    return (await this.db.all<{ bucket_id: string }>(BUCKET_IDS, [after, limit])).map((r) => r.bucket_id);
  }

  async progress(bucketId: string): Promise<LifecycleProgress | undefined> {
    const r = await this.db.get<ProgressRow>(GET_PROGRESS, [bucketId]);
    return r && { bucketId: r.bucket_id, phase: r.phase, keyMarker: r.key_marker, idMarker: r.id_marker, startedAt: r.started_at };
  }

  async saveProgress(p: LifecycleProgress): Promise<void> {
    await this.db.run(SAVE_PROGRESS, { ...p, updatedAt: this.clock() });
  }
}
