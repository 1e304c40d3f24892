// SQLite migration 023's twin: bucket lifecycle rules and the lifecycle job's progress per bucket.
// (007 is another branch's: the two are applied in their numbers' order once merged.)
export const sql = `
CREATE TABLE bucket_lifecycle (
  bucket_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  rules      TEXT COLLATE "C" NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE TABLE lifecycle_progress (
  bucket_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  phase      TEXT COLLATE "C" NOT NULL CHECK (phase IN ('versions', 'uploads', 'done')),
  key_marker TEXT COLLATE "C" NOT NULL,
  id_marker  TEXT COLLATE "C",
  started_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
`;
