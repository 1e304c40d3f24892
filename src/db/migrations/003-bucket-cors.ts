// Per-bucket CORS configuration: the validated rules as one JSON document (src/s3/cors.ts defines the
// shape). Deleting a bucket deletes its configuration.
export const sql = `
CREATE TABLE bucket_cors (
  bucket_id  TEXT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  rules      TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`;
