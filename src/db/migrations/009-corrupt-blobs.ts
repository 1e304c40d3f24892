// Blobs whose bytes no longer match the digest recorded when they were written, as found by the scrub
// (src/storage/scrub.ts) or by a read that checked them (src/storage/blob-digest.ts): kept until the
// object is rewritten or deleted, or the blob checks out again, for operators to act on. Digests are
// written `crc32c:<8 hex>` or `md5:<32 hex>`.
export const sql = `
CREATE TABLE corrupt_blobs (
  blob_id     TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  expected    TEXT NOT NULL,
  actual      TEXT NOT NULL,
  found_by    TEXT NOT NULL CHECK (found_by IN ('scrub', 'read')),
  detected_at INTEGER NOT NULL
) WITHOUT ROWID;
`;
