// The management API's rate-limit counters in the metadata store (issue 21, many nodes): when nodes share
// a PostgreSQL, a limit of 30 a minute is 30 a minute across all of them. One fixed window per limiter
// (a route, or the sign-in limits) and key (an API key, an address); src/cluster/store-rate-limits.ts.
// One SQLite data directory counts in memory (or in a cluster's supervisor) and leaves this table empty.
export const sql = `
CREATE TABLE rate_limit_counters (
  limiter    TEXT NOT NULL,
  key        TEXT NOT NULL,
  count      INTEGER NOT NULL,
  -- Unix milliseconds the window started, and its length.
  started_at INTEGER NOT NULL,
  window_ms  INTEGER NOT NULL,
  PRIMARY KEY (limiter, key)
) WITHOUT ROWID;
`;
