// SQLite migration 024's twin: notification targets, bucket notification configurations, the outbox.
export const sql = `
CREATE TABLE notification_targets (
  id         TEXT COLLATE "C" PRIMARY KEY,
  url        TEXT COLLATE "C" NOT NULL,
  secret_enc TEXT COLLATE "C" NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE bucket_notifications (
  bucket_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  config     TEXT COLLATE "C" NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE TABLE notification_outbox (
  id         TEXT COLLATE "C" PRIMARY KEY,
  target_id  TEXT COLLATE "C" NOT NULL,
  body       TEXT COLLATE "C" NOT NULL,
  attempts   BIGINT NOT NULL DEFAULT 0,
  due_at     BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  last_error TEXT COLLATE "C",
  dead       BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX notification_outbox_due ON notification_outbox(dead, due_at);
`;
