// SQLite migration 028's twin: project hostnames' TLS settings and certificates, ACME challenges and
// orders. hostname_tls is in the change feed: a certificate issued on one node is served by every node.
export const sql = `
CREATE TABLE hostname_tls (
  hostname_id     TEXT COLLATE "C" PRIMARY KEY REFERENCES project_hostnames(id) ON DELETE CASCADE,
  redirect_https  BIGINT NOT NULL DEFAULT 0,
  hsts_max_age    BIGINT NOT NULL DEFAULT 0,
  hsts_subdomains BIGINT NOT NULL DEFAULT 0,
  min_tls         TEXT COLLATE "C" NOT NULL DEFAULT '1.2' CHECK (min_tls IN ('1.2', '1.3')),
  source          TEXT COLLATE "C" CHECK (source IN ('acme', 'uploaded')),
  cert_pem        TEXT COLLATE "C",
  key_enc         TEXT COLLATE "C",
  fingerprint     TEXT COLLATE "C",
  not_before      BIGINT,
  not_after       BIGINT,
  issued_at       BIGINT,
  state           TEXT COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'issuing', 'issued', 'failed')),
  last_error      TEXT COLLATE "C",
  failures        BIGINT NOT NULL DEFAULT 0,
  next_attempt_at BIGINT,
  claimed_until   BIGINT,
  updated_at      BIGINT NOT NULL
);
CREATE INDEX hostname_tls_next ON hostname_tls(next_attempt_at);

CREATE TABLE acme_challenges (
  token      TEXT COLLATE "C" PRIMARY KEY,
  hostname   TEXT COLLATE "C" NOT NULL,
  key_auth   TEXT COLLATE "C" NOT NULL,
  expires_at BIGINT NOT NULL
);

CREATE TABLE acme_orders (
  id          TEXT COLLATE "C" PRIMARY KEY,
  hostname_id TEXT COLLATE "C" NOT NULL,
  user_id     TEXT COLLATE "C" NOT NULL,
  started_at  BIGINT NOT NULL
);
CREATE INDEX acme_orders_hostname ON acme_orders(hostname_id, started_at);
CREATE INDEX acme_orders_user ON acme_orders(user_id, started_at);

CREATE TRIGGER hostname_tls_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON hostname_tls
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_notify_change();
`;
