// The whole schema that SQLite migrations 001..018 produce (src/db/migrations), in PostgreSQL: the same
// tables, columns (in the same order), primary keys, foreign keys, indexes, CHECKs and the trigger, so
// rows copy 1:1 (`s3edge metadata copy`). Types keep SQLite's values: INTEGER is BIGINT (unix ms,
// sizes, milli-credits, CRC32C up to 2^32), 0/1 flags SMALLINT, REAL DOUBLE PRECISION, BLOB BYTEA.
// INTEGER PRIMARY KEY (a rowid, AUTOINCREMENT or not) is an identity column; the copy sets each
// sequence past the rows it copied. Every text column collates "C" (byte order): SQLite's BINARY
// collation, which S3 listings rely on (UTF-8 byte order), whatever the database's locale.
// test/contract/pg-schema.test.ts holds this twin to the SQLite schema.
export const sql = `
CREATE TABLE settings (
  name  TEXT COLLATE "C" PRIMARY KEY,
  value TEXT COLLATE "C" NOT NULL
);

CREATE TABLE users (
  id            TEXT COLLATE "C" PRIMARY KEY,
  name          TEXT COLLATE "C" NOT NULL UNIQUE,
  created_at    BIGINT NOT NULL,
  password_hash TEXT COLLATE "C"
);

CREATE TABLE buckets (
  id         TEXT COLLATE "C" PRIMARY KEY,
  name       TEXT COLLATE "C" NOT NULL UNIQUE,
  owner_id   TEXT COLLATE "C" NOT NULL REFERENCES users(id),
  region     TEXT COLLATE "C" NOT NULL,
  created_at BIGINT NOT NULL,
  public     SMALLINT NOT NULL DEFAULT 0 CHECK (public IN (0, 1)),
  versioning TEXT COLLATE "C" CHECK (versioning IN ('Enabled', 'Suspended'))
);
CREATE INDEX buckets_owner ON buckets(owner_id);

CREATE TABLE access_keys (
  access_key_id TEXT COLLATE "C" PRIMARY KEY,
  kind          TEXT COLLATE "C" NOT NULL CHECK (kind IN ('root', 'account', 'bucket')),
  user_id       TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  bucket_id     TEXT COLLATE "C" REFERENCES buckets(id) ON DELETE CASCADE,
  permission    TEXT COLLATE "C" CHECK (permission IN ('read', 'read_write')),
  name          TEXT COLLATE "C" NOT NULL DEFAULT '',
  secret_enc    TEXT COLLATE "C" NOT NULL,
  created_at    BIGINT NOT NULL
);
CREATE INDEX access_keys_user ON access_keys(user_id);
CREATE INDEX access_keys_bucket ON access_keys(bucket_id);

CREATE TABLE objects (
  bucket_id           TEXT COLLATE "C" NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
  key                 TEXT COLLATE "C" NOT NULL,
  blob_id             TEXT COLLATE "C" NOT NULL,
  size                BIGINT NOT NULL,
  etag                TEXT COLLATE "C" NOT NULL,
  sha256              TEXT COLLATE "C" NOT NULL,
  checksum_algorithm  TEXT COLLATE "C",
  checksum_value      TEXT COLLATE "C",
  checksum_type       TEXT COLLATE "C",
  content_type        TEXT COLLATE "C",
  content_encoding    TEXT COLLATE "C",
  content_disposition TEXT COLLATE "C",
  content_language    TEXT COLLATE "C",
  cache_control       TEXT COLLATE "C",
  expires             TEXT COLLATE "C",
  user_metadata       TEXT COLLATE "C" NOT NULL DEFAULT '{}',
  last_modified       BIGINT NOT NULL,
  parts               TEXT COLLATE "C",
  blob_crc32c         BIGINT,
  tagging             TEXT COLLATE "C",
  version_id          TEXT COLLATE "C",
  PRIMARY KEY (bucket_id, key)
);

CREATE TABLE multipart_uploads (
  upload_id           TEXT COLLATE "C" PRIMARY KEY,
  bucket_id           TEXT COLLATE "C" NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
  key                 TEXT COLLATE "C" NOT NULL,
  owner_id            TEXT COLLATE "C" NOT NULL,
  initiated           BIGINT NOT NULL,
  checksum_algorithm  TEXT COLLATE "C",
  checksum_type       TEXT COLLATE "C",
  content_type        TEXT COLLATE "C",
  content_encoding    TEXT COLLATE "C",
  content_disposition TEXT COLLATE "C",
  content_language    TEXT COLLATE "C",
  cache_control       TEXT COLLATE "C",
  expires             TEXT COLLATE "C",
  user_metadata       TEXT COLLATE "C" NOT NULL DEFAULT '{}',
  tagging             TEXT COLLATE "C"
);
CREATE INDEX multipart_uploads_key ON multipart_uploads(bucket_id, key, upload_id);
CREATE INDEX multipart_uploads_initiated ON multipart_uploads(initiated);

CREATE TABLE multipart_parts (
  upload_id          TEXT COLLATE "C" NOT NULL REFERENCES multipart_uploads(upload_id) ON DELETE CASCADE,
  part_number        BIGINT NOT NULL,
  blob_id            TEXT COLLATE "C" NOT NULL,
  size               BIGINT NOT NULL,
  etag               TEXT COLLATE "C" NOT NULL,
  checksum_algorithm TEXT COLLATE "C",
  checksum_value     TEXT COLLATE "C",
  last_modified      BIGINT NOT NULL,
  claimed            SMALLINT NOT NULL DEFAULT 0,
  crc32c             BIGINT,
  PRIMARY KEY (upload_id, part_number)
);

CREATE TABLE blob_trash (
  blob_id TEXT COLLATE "C" PRIMARY KEY
);

-- SQLite's multipart_parts_to_trash trigger: a deleted part nobody claimed leaves its blob to the sweep.
CREATE FUNCTION multipart_parts_to_trash() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO blob_trash (blob_id) VALUES (OLD.blob_id) ON CONFLICT DO NOTHING;
  RETURN NULL;
END;
$$;
CREATE TRIGGER multipart_parts_to_trash AFTER DELETE ON multipart_parts
  FOR EACH ROW WHEN (OLD.claimed = 0) EXECUTE FUNCTION multipart_parts_to_trash();

CREATE TABLE multipart_completed (
  upload_id          TEXT COLLATE "C" PRIMARY KEY,
  bucket_id          TEXT COLLATE "C" NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
  key                TEXT COLLATE "C" NOT NULL,
  etag               TEXT COLLATE "C" NOT NULL,
  checksum_algorithm TEXT COLLATE "C",
  checksum_value     TEXT COLLATE "C",
  checksum_type      TEXT COLLATE "C",
  completed_at       BIGINT NOT NULL,
  version_id         TEXT COLLATE "C"
);
CREATE INDEX multipart_completed_at ON multipart_completed(completed_at);

CREATE TABLE bucket_cors (
  bucket_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  rules      TEXT COLLATE "C" NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE TABLE inline_blobs (
  blob_id TEXT COLLATE "C" PRIMARY KEY,
  data    BYTEA NOT NULL
);

CREATE TABLE api_keys (
  id           TEXT COLLATE "C" PRIMARY KEY,
  user_id      TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name         TEXT COLLATE "C" NOT NULL DEFAULT '',
  secret_hash  TEXT COLLATE "C" NOT NULL,
  scopes       TEXT COLLATE "C" NOT NULL,
  created_at   BIGINT NOT NULL,
  last_used_at BIGINT
);
CREATE INDEX api_keys_user ON api_keys(user_id);

CREATE TABLE spaces (
  id           TEXT COLLATE "C" PRIMARY KEY,
  user_id      TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
  name         TEXT COLLATE "C" NOT NULL,
  status       TEXT COLLATE "C" NOT NULL CHECK (status IN ('active', 'suspended')),
  suspended_at BIGINT,
  created_at   BIGINT NOT NULL
);

CREATE TABLE assets (
  id             TEXT COLLATE "C" PRIMARY KEY,
  user_id        TEXT COLLATE "C" NOT NULL REFERENCES users(id),
  project_id     TEXT COLLATE "C",
  deployment_id  TEXT COLLATE "C",
  blob_id        TEXT COLLATE "C" NOT NULL,
  file_name      TEXT COLLATE "C" NOT NULL,
  content_type   TEXT COLLATE "C" NOT NULL,
  size           BIGINT NOT NULL,
  sha256         TEXT COLLATE "C" NOT NULL,
  etag           TEXT COLLATE "C" NOT NULL,
  visibility     TEXT COLLATE "C" NOT NULL CHECK (visibility IN ('public', 'private')),
  kind           TEXT COLLATE "C" NOT NULL CHECK (kind IN ('file', 'artifact')),
  created_at     BIGINT NOT NULL,
  updated_at     BIGINT NOT NULL,
  active_content SMALLINT NOT NULL DEFAULT 0 CHECK (active_content IN (0, 1)),
  crc32c         BIGINT
);
CREATE INDEX assets_user_created ON assets(user_id, created_at DESC, id);

CREATE TABLE usage_events (
  seq         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  id          TEXT COLLATE "C" NOT NULL UNIQUE,
  user_id     TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  asset_id    TEXT COLLATE "C" NOT NULL,
  event_type  TEXT COLLATE "C" NOT NULL,
  source      TEXT COLLATE "C" NOT NULL,
  bytes       BIGINT NOT NULL,
  hostname    TEXT COLLATE "C" NOT NULL,
  country     TEXT COLLATE "C" NOT NULL DEFAULT '',
  status_code BIGINT NOT NULL,
  client_ip   TEXT COLLATE "C" NOT NULL DEFAULT '',
  metadata    TEXT COLLATE "C" NOT NULL DEFAULT '{}',
  created_at  BIGINT NOT NULL
);
CREATE INDEX usage_events_user ON usage_events(user_id, seq);
CREATE INDEX usage_events_user_time ON usage_events(user_id, created_at);

CREATE TABLE credit_accounts (
  user_id        TEXT COLLATE "C" PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  balance_milli  BIGINT NOT NULL,
  used_milli     BIGINT NOT NULL,
  granted_month  TEXT COLLATE "C" NOT NULL DEFAULT ''
);

CREATE TABLE credit_ledger (
  seq                 BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  id                  TEXT COLLATE "C" NOT NULL UNIQUE,
  user_id             TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  asset_id            TEXT COLLATE "C" NOT NULL DEFAULT '',
  event_type          TEXT COLLATE "C" NOT NULL,
  bytes               BIGINT NOT NULL DEFAULT 0,
  rate_milli          BIGINT NOT NULL DEFAULT 0,
  credits_milli       BIGINT NOT NULL,
  balance_after_milli BIGINT NOT NULL,
  metadata            TEXT COLLATE "C" NOT NULL DEFAULT '{}',
  created_at          BIGINT NOT NULL
);
CREATE INDEX credit_ledger_user ON credit_ledger(user_id, seq);

CREATE TABLE cdn_requests (
  id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  time         BIGINT NOT NULL,
  host         TEXT COLLATE "C" NOT NULL,
  asset_id     TEXT COLLATE "C",
  bucket       TEXT COLLATE "C",
  object_key   TEXT COLLATE "C",
  owner_id     TEXT COLLATE "C",
  status       BIGINT NOT NULL CHECK (status BETWEEN 100 AND 999),
  bytes_sent   BIGINT NOT NULL CHECK (bytes_sent >= 0),
  cache_status TEXT COLLATE "C" CHECK (cache_status IN ('HIT', 'MISS', 'EXPIRED', 'BYPASS')),
  client_ip    TEXT COLLATE "C" NOT NULL,
  country      TEXT COLLATE "C" NOT NULL,
  user_agent   TEXT COLLATE "C" NOT NULL,
  duration_ms  DOUBLE PRECISION NOT NULL,
  surface      TEXT COLLATE "C" NOT NULL DEFAULT 'cdn' CHECK (surface IN ('cdn', 'proxy')),
  method       TEXT COLLATE "C" NOT NULL DEFAULT 'GET',
  path         TEXT COLLATE "C" NOT NULL DEFAULT '',
  bytes_in     BIGINT NOT NULL DEFAULT 0,
  decision     TEXT COLLATE "C" NOT NULL DEFAULT 'allowed'
);
CREATE INDEX cdn_requests_owner_time ON cdn_requests(owner_id, time);
CREATE INDEX cdn_requests_time ON cdn_requests(time);

CREATE TABLE cdn_hourly (
  owner_id       TEXT COLLATE "C" NOT NULL,
  hour           BIGINT NOT NULL,
  requests       BIGINT NOT NULL,
  bytes          BIGINT NOT NULL,
  cached_bytes   BIGINT NOT NULL,
  hits           BIGINT NOT NULL,
  cache_lookups  BIGINT NOT NULL,
  status_counts  TEXT COLLATE "C" NOT NULL,
  country_counts TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (owner_id, hour)
);
CREATE INDEX cdn_hourly_hour ON cdn_hourly(hour);

CREATE TABLE cdn_rollup_state (
  id           BIGINT PRIMARY KEY CHECK (id = 1),
  rolled_until BIGINT NOT NULL
);
INSERT INTO cdn_rollup_state (id, rolled_until) VALUES (1, 0);

CREATE TABLE corrupt_blobs (
  blob_id     TEXT COLLATE "C" PRIMARY KEY,
  owner       TEXT COLLATE "C" NOT NULL,
  expected    TEXT COLLATE "C" NOT NULL,
  actual      TEXT COLLATE "C" NOT NULL,
  found_by    TEXT COLLATE "C" NOT NULL CHECK (found_by IN ('scrub', 'read')),
  detected_at BIGINT NOT NULL
);

CREATE TABLE tlds (
  tld                     TEXT COLLATE "C" PRIMARY KEY,
  register_usd            BIGINT NOT NULL CHECK (register_usd >= 0),
  renew_usd               BIGINT NOT NULL CHECK (renew_usd >= 0),
  transfer_usd            BIGINT NOT NULL CHECK (transfer_usd >= 0),
  register_ngn            BIGINT CHECK (register_ngn >= 0),
  renew_ngn               BIGINT CHECK (renew_ngn >= 0),
  transfer_ngn            BIGINT CHECK (transfer_ngn >= 0),
  min_years               BIGINT NOT NULL CHECK (min_years BETWEEN 1 AND 10),
  max_years               BIGINT NOT NULL CHECK (max_years BETWEEN min_years AND 10),
  restrictions            TEXT COLLATE "C" NOT NULL DEFAULT '',
  requires_local_presence SMALLINT NOT NULL DEFAULT 0,
  rdap_not_found_reliable SMALLINT NOT NULL DEFAULT 0,
  popular_rank            BIGINT,
  updated_at              BIGINT NOT NULL
);
CREATE INDEX tlds_popular ON tlds(popular_rank) WHERE popular_rank IS NOT NULL;

CREATE TABLE tld_promotions (
  id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  tld        TEXT COLLATE "C" NOT NULL REFERENCES tlds(tld) ON DELETE CASCADE,
  bonus_ngn  BIGINT CHECK (bonus_ngn > 0),
  bonus_usd  BIGINT CHECK (bonus_usd > 0),
  ends_on    TEXT COLLATE "C" NOT NULL,
  created_at BIGINT NOT NULL,
  ended_at   BIGINT,
  CHECK (bonus_ngn IS NOT NULL OR bonus_usd IS NOT NULL)
);
CREATE INDEX tld_promotions_tld ON tld_promotions(tld);

CREATE TABLE domain_names (
  name       TEXT COLLATE "C" PRIMARY KEY,
  status     TEXT COLLATE "C" NOT NULL CHECK (status IN ('reserved', 'sold', 'premium')),
  price_usd  BIGINT CHECK (price_usd >= 0),
  price_ngn  BIGINT CHECK (price_ngn >= 0),
  note       TEXT COLLATE "C" NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  CHECK (status <> 'premium' OR price_usd IS NOT NULL)
);

CREATE TABLE projects (
  id         TEXT COLLATE "C" PRIMARY KEY,
  user_id    TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name       TEXT COLLATE "C" NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (user_id, name)
);

CREATE TABLE deployments (
  id         TEXT COLLATE "C" PRIMARY KEY,
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name       TEXT COLLATE "C" NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX deployments_project ON deployments(project_id, created_at);

CREATE TABLE project_hostnames (
  id                 TEXT COLLATE "C" PRIMARY KEY,
  hostname           TEXT COLLATE "C" NOT NULL UNIQUE,
  project_id         TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  origin             TEXT COLLATE "C",
  rules              TEXT COLLATE "C" NOT NULL DEFAULT '{}',
  verification_token TEXT COLLATE "C" NOT NULL,
  verified_at        BIGINT,
  verified_by        TEXT COLLATE "C" CHECK (verified_by IN ('dns', 'operator')),
  created_at         BIGINT NOT NULL,
  updated_at         BIGINT NOT NULL
);
CREATE INDEX project_hostnames_project ON project_hostnames(project_id);

CREATE TABLE edge_anomalies (
  id         TEXT COLLATE "C" PRIMARY KEY,
  hostname   TEXT COLLATE "C" NOT NULL,
  owner_id   TEXT COLLATE "C" NOT NULL,
  kind       TEXT COLLATE "C" NOT NULL,
  severity   TEXT COLLATE "C" NOT NULL CHECK (severity IN ('low', 'medium', 'high')),
  started_at BIGINT NOT NULL,
  ended_at   BIGINT,
  observed   DOUBLE PRECISION NOT NULL,
  baseline   DOUBLE PRECISION NOT NULL,
  detail     TEXT COLLATE "C" NOT NULL DEFAULT '{}'
);
CREATE INDEX edge_anomalies_owner_start ON edge_anomalies(owner_id, started_at);
CREATE UNIQUE INDEX edge_anomalies_open ON edge_anomalies(hostname, kind) WHERE ended_at IS NULL;

CREATE TABLE dashboard_sessions (
  token_hash   TEXT COLLATE "C" PRIMARY KEY,
  user_id      TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  csrf_token   TEXT COLLATE "C" NOT NULL,
  created_at   BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL
);
CREATE INDEX dashboard_sessions_user ON dashboard_sessions (user_id);

CREATE TABLE object_versions (
  bucket_id           TEXT COLLATE "C" NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
  key                 TEXT COLLATE "C" NOT NULL,
  ord                 BIGINT NOT NULL,
  version_id          TEXT COLLATE "C",
  is_delete_marker    SMALLINT NOT NULL DEFAULT 0,
  blob_id             TEXT COLLATE "C" NOT NULL,
  blob_crc32c         BIGINT,
  size                BIGINT NOT NULL,
  etag                TEXT COLLATE "C" NOT NULL,
  sha256              TEXT COLLATE "C" NOT NULL,
  checksum_algorithm  TEXT COLLATE "C",
  checksum_value      TEXT COLLATE "C",
  checksum_type       TEXT COLLATE "C",
  content_type        TEXT COLLATE "C",
  content_encoding    TEXT COLLATE "C",
  content_disposition TEXT COLLATE "C",
  content_language    TEXT COLLATE "C",
  cache_control       TEXT COLLATE "C",
  expires             TEXT COLLATE "C",
  user_metadata       TEXT COLLATE "C" NOT NULL DEFAULT '{}',
  last_modified       BIGINT NOT NULL,
  parts               TEXT COLLATE "C",
  tagging             TEXT COLLATE "C",
  PRIMARY KEY (bucket_id, key, ord)
);
CREATE INDEX object_versions_id ON object_versions(bucket_id, key, version_id);

CREATE TABLE cache_invalidations (
  seq    BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  at     BIGINT NOT NULL,
  writer TEXT COLLATE "C" NOT NULL,
  kind   TEXT COLLATE "C" NOT NULL CHECK (kind IN ('asset', 'object', 'prefix', 'owner', 'hostname')),
  a      TEXT COLLATE "C" NOT NULL,
  b      TEXT COLLATE "C"
);
CREATE INDEX cache_invalidations_at ON cache_invalidations (at);

CREATE TABLE credit_holders (
  holder  TEXT COLLATE "C" PRIMARY KEY,
  seen_at BIGINT NOT NULL
);

CREATE TABLE credit_reservations (
  id         TEXT COLLATE "C" PRIMARY KEY,
  user_id    TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  milli      BIGINT NOT NULL CHECK (milli >= 0),
  holder     TEXT COLLATE "C" NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX credit_reservations_user ON credit_reservations(user_id);
CREATE INDEX credit_reservations_holder ON credit_reservations(holder);
`;
