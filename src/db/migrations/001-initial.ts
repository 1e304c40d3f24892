// Initial schema. Times are unix milliseconds. Secrets are AES-256-GCM encrypted (src/auth/secrets.ts).
export const sql = `
CREATE TABLE settings (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE users (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE buckets (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  owner_id   TEXT NOT NULL REFERENCES users(id),
  region     TEXT NOT NULL,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX buckets_owner ON buckets(owner_id);

-- kind: 'root' (everything), 'account' (its user's buckets, may create buckets),
-- 'bucket' (one bucket, with permission 'read' or 'read_write').
CREATE TABLE access_keys (
  access_key_id TEXT PRIMARY KEY,
  kind          TEXT NOT NULL CHECK (kind IN ('root', 'account', 'bucket')),
  user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  bucket_id     TEXT REFERENCES buckets(id) ON DELETE CASCADE,
  permission    TEXT CHECK (permission IN ('read', 'read_write')),
  name          TEXT NOT NULL DEFAULT '',
  secret_enc    TEXT NOT NULL,
  created_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX access_keys_user ON access_keys(user_id);
CREATE INDEX access_keys_bucket ON access_keys(bucket_id);

-- One row per visible object version (no versioning: one per key). blob_id names the bytes in the
-- storage backend; keys never reach the file system. BINARY collation = UTF-8 byte order, as S3 lists.
CREATE TABLE objects (
  bucket_id           TEXT NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
  key                 TEXT NOT NULL,
  blob_id             TEXT NOT NULL,
  size                INTEGER NOT NULL,
  etag                TEXT NOT NULL,
  sha256              TEXT NOT NULL,
  checksum_algorithm  TEXT,
  checksum_value      TEXT,
  checksum_type       TEXT,
  content_type        TEXT,
  content_encoding    TEXT,
  content_disposition TEXT,
  content_language    TEXT,
  cache_control       TEXT,
  expires             TEXT,
  user_metadata       TEXT NOT NULL DEFAULT '{}',
  last_modified       INTEGER NOT NULL,
  PRIMARY KEY (bucket_id, key)
) WITHOUT ROWID;
`;
