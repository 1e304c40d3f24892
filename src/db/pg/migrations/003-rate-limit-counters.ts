// SQLite migration 019's twin: the management API's rate-limit counters, shared by every node.
export const sql = `
CREATE TABLE rate_limit_counters (
  limiter    TEXT COLLATE "C" NOT NULL,
  key        TEXT COLLATE "C" NOT NULL,
  count      BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  window_ms  BIGINT NOT NULL,
  PRIMARY KEY (limiter, key)
);
`;
