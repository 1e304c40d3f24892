// Blobs whose bytes no longer match the digest recorded when they were written, as found by the scrub
// (src/storage/scrub.ts): kept until the object is rewritten or deleted, for operators to act on.
export const sql = `
CREATE TABLE corrupt_blobs (
  blob_id      TEXT PRIMARY KEY,
  owner        TEXT NOT NULL,
  expected_md5 TEXT NOT NULL,
  actual_md5   TEXT NOT NULL,
  detected_at  INTEGER NOT NULL
) WITHOUT ROWID;
`;
