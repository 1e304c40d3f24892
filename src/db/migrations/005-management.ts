// The management API (SPEC.md): API keys, spaces, assets, usage events and the credit ledger.
// Credits are integers in milli-credits (1 credit = 1000); the ledger is append-only and
// credit_accounts holds each user's running balance, updated in the same transaction as its entry.
export const sql = `
-- Bearer tokens: 's3e_' || id || '_' || secret. Only SHA-256(secret) is stored; scopes is a JSON array.
CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name         TEXT NOT NULL DEFAULT '',
  secret_hash  TEXT NOT NULL,
  scopes       TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER
) WITHOUT ROWID;
CREATE INDEX api_keys_user ON api_keys(user_id);

-- One space per user, created on first use. status: 'active' or 'suspended'.
CREATE TABLE spaces (
  id           TEXT PRIMARY KEY,
  user_id      TEXT NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  status       TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
  suspended_at INTEGER,
  created_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- Uploaded files. blob_id names the bytes in the storage backend and never leaves the server.
CREATE TABLE assets (
  id            TEXT PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES users(id),
  project_id    TEXT,
  deployment_id TEXT,
  blob_id       TEXT NOT NULL,
  file_name     TEXT NOT NULL,
  content_type  TEXT NOT NULL,
  size          INTEGER NOT NULL,
  sha256        TEXT NOT NULL,
  etag          TEXT NOT NULL,
  visibility    TEXT NOT NULL CHECK (visibility IN ('public', 'private')),
  kind          TEXT NOT NULL CHECK (kind IN ('file', 'artifact')),
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX assets_user_created ON assets(user_id, created_at DESC, id);

CREATE TABLE usage_events (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  id          TEXT NOT NULL UNIQUE,
  user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  asset_id    TEXT NOT NULL,
  event_type  TEXT NOT NULL,
  source      TEXT NOT NULL,
  bytes       INTEGER NOT NULL,
  hostname    TEXT NOT NULL,
  country     TEXT NOT NULL DEFAULT '',
  status_code INTEGER NOT NULL,
  client_ip   TEXT NOT NULL DEFAULT '',
  metadata    TEXT NOT NULL DEFAULT '{}',
  created_at  INTEGER NOT NULL
);
CREATE INDEX usage_events_user ON usage_events(user_id, seq);
CREATE INDEX usage_events_user_time ON usage_events(user_id, created_at);

CREATE TABLE credit_accounts (
  user_id        TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  balance_milli  INTEGER NOT NULL,
  used_milli     INTEGER NOT NULL,
  -- 'YYYY-MM' (UTC) of the last free monthly grant.
  granted_month  TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- credits_milli: what the entry charged (negative when it added credits: grants).
CREATE TABLE credit_ledger (
  seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
  id                  TEXT NOT NULL UNIQUE,
  user_id             TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  asset_id            TEXT NOT NULL DEFAULT '',
  event_type          TEXT NOT NULL,
  bytes               INTEGER NOT NULL DEFAULT 0,
  rate_milli          INTEGER NOT NULL DEFAULT 0,
  credits_milli       INTEGER NOT NULL,
  balance_after_milli INTEGER NOT NULL,
  metadata            TEXT NOT NULL DEFAULT '{}',
  created_at          INTEGER NOT NULL
);
CREATE INDEX credit_ledger_user ON credit_ledger(user_id, seq);
`;
