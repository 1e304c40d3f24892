// The cache invalidation feed (issue 21): every purge of the CDN edge cache or the proxy response cache
// that a change causes is appended here by the process that made it, and every gateway process on the
// data directory tails the feed and applies the purges of the others (src/cdn/cache-purges.ts). Rows
// are kept for minutes only: a process reads the feed every 250 ms and starts at its end.
export const sql = `
-- seq: AUTOINCREMENT, so a seq is never reused even after every row was pruned (a reader's position
-- stays valid). writer: the instance id of the process that purged (it skips its own rows).
-- kind and its arguments: asset (a = asset id), object (a = bucket id, b = key), prefix (a = bucket
-- id, b = key prefix), owner (a = user id), hostname (a = project hostname id).
CREATE TABLE cache_invalidations (
  seq    INTEGER PRIMARY KEY AUTOINCREMENT,
  at     INTEGER NOT NULL,
  writer TEXT NOT NULL,
  kind   TEXT NOT NULL CHECK (kind IN ('asset', 'object', 'prefix', 'owner', 'hostname')),
  a      TEXT NOT NULL,
  b      TEXT
);

-- Pruning by age.
CREATE INDEX cache_invalidations_at ON cache_invalidations (at);
`;
