// The edge reverse proxy (src/edge, src/projects): users' projects and their deployments, the project
// hostnames the proxy serves (each with its origin and protection rules, as JSON the services validate),
// the anomaly events detected on their traffic, and the request log's columns for proxied requests.
// A hostname is served only once verified (a DNS TXT record, or an operator from the CLI).
export const sql = `
CREATE TABLE projects (
  id         TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (user_id, name)
) WITHOUT ROWID;

CREATE TABLE deployments (
  id         TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name       TEXT NOT NULL,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX deployments_project ON deployments(project_id, created_at);

-- hostname: lower-case ASCII (punycode), no port, no trailing dot; one project of one user at most.
-- origin: JSON (src/edge/model.ts Origin), NULL until set. rules: JSON (HostRules).
-- verified_by: 'dns' (the TXT record was found) or 'operator' (the CLI); NULL with verified_at NULL.
CREATE TABLE project_hostnames (
  id                 TEXT PRIMARY KEY,
  hostname           TEXT NOT NULL UNIQUE,
  project_id         TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  origin             TEXT,
  rules              TEXT NOT NULL DEFAULT '{}',
  verification_token TEXT NOT NULL,
  verified_at        INTEGER,
  verified_by        TEXT CHECK (verified_by IN ('dns', 'operator')),
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX project_hostnames_project ON project_hostnames(project_id);

-- Anomalies on a hostname's traffic (src/proxy/detect). ended_at NULL while it lasts; at most one open
-- event of a kind per hostname. observed and baseline are in the kind's unit (requests per bucket, a share).
CREATE TABLE edge_anomalies (
  id         TEXT PRIMARY KEY,
  hostname   TEXT NOT NULL,
  owner_id   TEXT NOT NULL,
  kind       TEXT NOT NULL,
  severity   TEXT NOT NULL CHECK (severity IN ('low', 'medium', 'high')),
  started_at INTEGER NOT NULL,
  ended_at   INTEGER,
  observed   REAL NOT NULL,
  baseline   REAL NOT NULL,
  detail     TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;
CREATE INDEX edge_anomalies_owner_start ON edge_anomalies(owner_id, started_at);
CREATE UNIQUE INDEX edge_anomalies_open ON edge_anomalies(hostname, kind) WHERE ended_at IS NULL;

-- Proxied requests share the CDN's request log (one buffer, one flush): surface tells them apart,
-- decision is 'allowed' or the rule that blocked the request.
ALTER TABLE cdn_requests ADD COLUMN surface TEXT NOT NULL DEFAULT 'cdn' CHECK (surface IN ('cdn', 'proxy'));
ALTER TABLE cdn_requests ADD COLUMN method TEXT NOT NULL DEFAULT 'GET';
ALTER TABLE cdn_requests ADD COLUMN path TEXT NOT NULL DEFAULT '';
ALTER TABLE cdn_requests ADD COLUMN bytes_in INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cdn_requests ADD COLUMN decision TEXT NOT NULL DEFAULT 'allowed';
`;
