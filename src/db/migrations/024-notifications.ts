// Event notifications (issue 35): the webhook targets an operator defines (their secret sealed with the
// master key: deliveries are signed with it), each bucket's NotificationConfiguration (JSON, checked
// before it gets here), and the outbox: one row per event and target, written in the transaction of
// the object change it reports, so no event is lost to a crash; deleted once delivered, kept as a dead
// letter once its attempts are spent. (023 is the lifecycle's.)
export const sql = `
CREATE TABLE notification_targets (
  id         TEXT PRIMARY KEY,
  url        TEXT NOT NULL,
  secret_enc TEXT NOT NULL,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE bucket_notifications (
  bucket_id  TEXT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  config     TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE notification_outbox (
  id         TEXT PRIMARY KEY,
  target_id  TEXT NOT NULL,
  body       TEXT NOT NULL,
  attempts   INTEGER NOT NULL DEFAULT 0,
  due_at     INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  last_error TEXT,
  dead       INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE INDEX notification_outbox_due ON notification_outbox(dead, due_at);
`;
