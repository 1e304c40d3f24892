// SQLite migration 020's twin: blob removals held for a grace period, for nodes sharing one upstream store.
export const sql = `
CREATE TABLE blob_removals (
  blob_id TEXT COLLATE "C" PRIMARY KEY,
  due_at  BIGINT NOT NULL
);
CREATE INDEX blob_removals_due ON blob_removals(due_at);
`;
