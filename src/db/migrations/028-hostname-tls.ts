// HTTPS for project hostnames (issue 38): per hostname its TLS settings (redirect, HSTS, minimum version)
// and its certificate, issued by ACME or uploaded, the private key sealed with the master key (key_enc)
// so every worker and node serves the same one; the removal of a hostname removes its key (cascade).
// next_attempt_at is when the ACME job acts on the hostname next (a first issue, a retry after a failure,
// a renewal at two-thirds of the lifetime); NULL: never (an uploaded certificate). claimed_until makes an
// issuance exclusive across processes. acme_challenges holds the HTTP-01 answers any process serves;
// acme_orders each order started, counted by the per-hostname and per-account issuance limits.
export const sql = `
CREATE TABLE hostname_tls (
  hostname_id     TEXT PRIMARY KEY REFERENCES project_hostnames(id) ON DELETE CASCADE,
  redirect_https  INTEGER NOT NULL DEFAULT 0,
  hsts_max_age    INTEGER NOT NULL DEFAULT 0,
  hsts_subdomains INTEGER NOT NULL DEFAULT 0,
  min_tls         TEXT NOT NULL DEFAULT '1.2' CHECK (min_tls IN ('1.2', '1.3')),
  source          TEXT CHECK (source IN ('acme', 'uploaded')),
  cert_pem        TEXT,
  key_enc         TEXT,
  fingerprint     TEXT,
  not_before      INTEGER,
  not_after       INTEGER,
  issued_at       INTEGER,
  state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'issuing', 'issued', 'failed')),
  last_error      TEXT,
  failures        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  claimed_until   INTEGER,
  updated_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX hostname_tls_next ON hostname_tls(next_attempt_at);

CREATE TABLE acme_challenges (
  token      TEXT PRIMARY KEY,
  hostname   TEXT NOT NULL,
  key_auth   TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE acme_orders (
  id          TEXT PRIMARY KEY,
  hostname_id TEXT NOT NULL,
  user_id     TEXT NOT NULL,
  started_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX acme_orders_hostname ON acme_orders(hostname_id, started_at);
CREATE INDEX acme_orders_user ON acme_orders(user_id, started_at);
`;
