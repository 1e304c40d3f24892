// The CDN request log (analytics/request-log.ts): one row per CDN request, written in batches, and
// hourly roll-ups per owner that the summary reads for complete hours. Both expire after
// cdn.log.retentionDays. Owners are not foreign keys: a log row outlives nothing it must guard, and
// a foreign-key check on every inserted row would cost the hot path.
export const sql = `
CREATE TABLE cdn_requests (
  id           INTEGER PRIMARY KEY,
  -- Unix milliseconds when the request arrived.
  time         INTEGER NOT NULL,
  host         TEXT NOT NULL,
  asset_id     TEXT,
  bucket       TEXT,
  object_key   TEXT,
  -- NULL: the request named nothing known (it belongs to no user's analytics).
  owner_id     TEXT,
  status       INTEGER NOT NULL CHECK (status BETWEEN 100 AND 999),
  bytes_sent   INTEGER NOT NULL CHECK (bytes_sent >= 0),
  -- NULL: the request never reached the cache.
  cache_status TEXT CHECK (cache_status IN ('HIT', 'MISS', 'EXPIRED', 'BYPASS')),
  client_ip    TEXT NOT NULL,
  -- ISO 3166 alpha-2, or '' when unknown.
  country      TEXT NOT NULL,
  user_agent   TEXT NOT NULL,
  duration_ms  REAL NOT NULL
);
-- A user's time window (summary, proxy logs); the time index serves roll-ups and retention.
CREATE INDEX cdn_requests_owner_time ON cdn_requests(owner_id, time);
CREATE INDEX cdn_requests_time ON cdn_requests(time);

-- One row per owner ('' for requests of no owner) and hour (Unix ms of its start).
-- cached_bytes: bytes sent by HITs; hits / cache_lookups: requests with cache status HIT / any cache status.
-- status_counts: {"200": n, ...}; country_counts: {"DE": n, ...} (requests of unknown country are left out).
CREATE TABLE cdn_hourly (
  owner_id       TEXT NOT NULL,
  hour           INTEGER NOT NULL,
  requests       INTEGER NOT NULL,
  bytes          INTEGER NOT NULL,
  cached_bytes   INTEGER NOT NULL,
  hits           INTEGER NOT NULL,
  cache_lookups  INTEGER NOT NULL,
  status_counts  TEXT NOT NULL,
  country_counts TEXT NOT NULL,
  PRIMARY KEY (owner_id, hour)
) WITHOUT ROWID;
CREATE INDEX cdn_hourly_hour ON cdn_hourly(hour);

-- Every request before rolled_until (an hour boundary) is in cdn_hourly; advanced in the roll-up's transaction.
CREATE TABLE cdn_rollup_state (
  id            INTEGER PRIMARY KEY CHECK (id = 1),
  rolled_until  INTEGER NOT NULL
);
INSERT INTO cdn_rollup_state (id, rolled_until) VALUES (1, 0);
`;
