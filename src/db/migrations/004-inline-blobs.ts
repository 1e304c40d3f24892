// Small object bodies kept in the metadata database instead of a file of their own: written in the
// same transaction as their object row (one WAL sync makes both durable, shared by concurrent PUTs)
// and read without touching the file system. blob_id is an inline blob id (src/storage/blob-id.ts).
export const sql = `
CREATE TABLE inline_blobs (
  blob_id TEXT PRIMARY KEY,
  data    BLOB NOT NULL
);
`;
