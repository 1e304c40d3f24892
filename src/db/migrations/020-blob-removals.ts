// Blob removals held for a grace period (issue 21, many nodes): when nodes share one upstream store, a
// blob freed by one node may still be streaming from another, whose leases (storage/blob-leases.ts) are
// its own. So a node with PostgreSQL metadata does not remove a freed blob at once: it records it here,
// and the node running the singleton jobs removes it once due (storage/blob-removals.ts). One SQLite data
// directory's processes share their leases through the supervisor and leave this table empty.
export const sql = `
CREATE TABLE blob_removals (
  blob_id TEXT PRIMARY KEY,
  -- Unix milliseconds from which the blob may be removed.
  due_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX blob_removals_due ON blob_removals(due_at);
`;
