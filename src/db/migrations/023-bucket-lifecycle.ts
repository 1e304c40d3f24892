// Bucket lifecycle (PutBucketLifecycleConfiguration, issue 35): the validated rules as one JSON document
// per bucket, and where the lifecycle job's walk of each bucket stands (src/lifecycle/run.ts), so that a
// restarted server resumes a walk instead of starting it again. Deleting a bucket deletes both.
// (022 is another branch's: the two are applied in their numbers' order once merged.)
export const sql = `
CREATE TABLE bucket_lifecycle (
  bucket_id  TEXT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  rules      TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per bucket the job has walked: the walk under way (phase versions or uploads, resumed after
-- key_marker and, for uploads, id_marker), or the last one done. started_at spaces the walks.
CREATE TABLE lifecycle_progress (
  bucket_id  TEXT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  phase      TEXT NOT NULL CHECK (phase IN ('versions', 'uploads', 'done')),
  key_marker TEXT NOT NULL,
  id_marker  TEXT,
  started_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`;
