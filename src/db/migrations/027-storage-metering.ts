// Storage metering, quotas and what happens at zero (issue 37, docs/API.md "Usage and credits").
//
// Stored bytes are counted by triggers in the transaction of every change, whichever code path makes
// it (PUT, copy, multipart, versioning, lifecycle, deletes, cascades), so quotas and the storage meter
// read a row instead of summing a bucket:
//   bucket_usage: per bucket, its objects, noncurrent versions and parts of uploads in progress;
//   asset_usage:  per user, the assets of the management API.
// A part's bytes also add up on its upload (multipart_uploads.bytes), so an upload that goes, by an
// abort, a completion or a bucket's cascade, takes exactly its parts' bytes with it whichever row
// goes first: a part whose upload is already gone finds no row to change.
//
// storage_samples: each owner's stored bytes, one sample an hour (the first taken in an hour stays);
// storage_charges: per owner and UTC day, the sampled hours, byte-days (byte-hours / 24) and
// milli-credits the ledger has charged.
// storage_reservations: bytes an upload in progress set aside against a quota (bucket_id '' for an
// asset), live while their holder (credit_holders) beats, as credit reservations are.
// credit_accounts.depleted_at: since when a balance is at or below zero (NULL while positive).
export const sql = `
CREATE TABLE bucket_usage (
  bucket_id TEXT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  owner_id  TEXT NOT NULL,
  bytes     INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX bucket_usage_owner ON bucket_usage(owner_id);

CREATE TABLE asset_usage (
  user_id TEXT PRIMARY KEY,
  bytes   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

ALTER TABLE multipart_uploads ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE multipart_uploads SET bytes = (SELECT COALESCE(SUM(p.size), 0) FROM multipart_parts p WHERE p.upload_id = multipart_uploads.upload_id);

INSERT INTO bucket_usage (bucket_id, owner_id, bytes)
  SELECT b.id, b.owner_id,
    (SELECT COALESCE(SUM(o.size), 0) FROM objects o WHERE o.bucket_id = b.id)
    + (SELECT COALESCE(SUM(v.size), 0) FROM object_versions v WHERE v.bucket_id = b.id)
    + (SELECT COALESCE(SUM(u.bytes), 0) FROM multipart_uploads u WHERE u.bucket_id = b.id)
  FROM buckets b;
INSERT INTO asset_usage (user_id, bytes) SELECT user_id, SUM(size) FROM assets GROUP BY user_id;

CREATE TRIGGER bucket_usage_row AFTER INSERT ON buckets BEGIN
  INSERT INTO bucket_usage (bucket_id, owner_id, bytes) VALUES (NEW.id, NEW.owner_id, 0);
END;

CREATE TRIGGER objects_usage_insert AFTER INSERT ON objects BEGIN
  UPDATE bucket_usage SET bytes = bytes + NEW.size WHERE bucket_id = NEW.bucket_id;
END;
CREATE TRIGGER objects_usage_update AFTER UPDATE OF size ON objects BEGIN
  UPDATE bucket_usage SET bytes = bytes + NEW.size - OLD.size WHERE bucket_id = NEW.bucket_id;
END;
CREATE TRIGGER objects_usage_delete AFTER DELETE ON objects BEGIN
  UPDATE bucket_usage SET bytes = bytes - OLD.size WHERE bucket_id = OLD.bucket_id;
END;

CREATE TRIGGER object_versions_usage_insert AFTER INSERT ON object_versions BEGIN
  UPDATE bucket_usage SET bytes = bytes + NEW.size WHERE bucket_id = NEW.bucket_id;
END;
CREATE TRIGGER object_versions_usage_update AFTER UPDATE OF size ON object_versions BEGIN
  UPDATE bucket_usage SET bytes = bytes + NEW.size - OLD.size WHERE bucket_id = NEW.bucket_id;
END;
CREATE TRIGGER object_versions_usage_delete AFTER DELETE ON object_versions BEGIN
  UPDATE bucket_usage SET bytes = bytes - OLD.size WHERE bucket_id = OLD.bucket_id;
END;

CREATE TRIGGER multipart_parts_usage_insert AFTER INSERT ON multipart_parts BEGIN
  UPDATE bucket_usage SET bytes = bytes + NEW.size
    WHERE bucket_id = (SELECT bucket_id FROM multipart_uploads WHERE upload_id = NEW.upload_id);
  UPDATE multipart_uploads SET bytes = bytes + NEW.size WHERE upload_id = NEW.upload_id;
END;
CREATE TRIGGER multipart_parts_usage_update AFTER UPDATE OF size ON multipart_parts BEGIN
  UPDATE bucket_usage SET bytes = bytes + NEW.size - OLD.size
    WHERE bucket_id = (SELECT bucket_id FROM multipart_uploads WHERE upload_id = NEW.upload_id);
  UPDATE multipart_uploads SET bytes = bytes + NEW.size - OLD.size WHERE upload_id = NEW.upload_id;
END;
CREATE TRIGGER multipart_parts_usage_delete AFTER DELETE ON multipart_parts BEGIN
  UPDATE bucket_usage SET bytes = bytes - OLD.size
    WHERE bucket_id = (SELECT bucket_id FROM multipart_uploads WHERE upload_id = OLD.upload_id);
  UPDATE multipart_uploads SET bytes = bytes - OLD.size WHERE upload_id = OLD.upload_id;
END;
CREATE TRIGGER multipart_uploads_usage_delete AFTER DELETE ON multipart_uploads BEGIN
  UPDATE bucket_usage SET bytes = bytes - OLD.bytes WHERE bucket_id = OLD.bucket_id;
END;

CREATE TRIGGER assets_usage_insert AFTER INSERT ON assets BEGIN
  INSERT INTO asset_usage (user_id, bytes) VALUES (NEW.user_id, NEW.size)
    ON CONFLICT (user_id) DO UPDATE SET bytes = asset_usage.bytes + excluded.bytes;
END;
CREATE TRIGGER assets_usage_delete AFTER DELETE ON assets BEGIN
  UPDATE asset_usage SET bytes = bytes - OLD.size WHERE user_id = OLD.user_id;
END;

-- NULL: no quota.
ALTER TABLE users ADD COLUMN storage_quota INTEGER;
ALTER TABLE buckets ADD COLUMN storage_quota INTEGER;

CREATE TABLE storage_reservations (
  id          TEXT PRIMARY KEY,
  user_id     TEXT NOT NULL,
  bucket_id   TEXT NOT NULL,
  bytes       INTEGER NOT NULL CHECK (bytes >= 0),
  holder      TEXT NOT NULL,
  created_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX storage_reservations_user ON storage_reservations(user_id);
CREATE INDEX storage_reservations_bucket ON storage_reservations(bucket_id);
CREATE INDEX storage_reservations_holder ON storage_reservations(holder);

CREATE TABLE storage_samples (
  owner_id TEXT NOT NULL,
  hour     INTEGER NOT NULL,
  bytes    INTEGER NOT NULL,
  PRIMARY KEY (owner_id, hour)
) WITHOUT ROWID;
CREATE INDEX storage_samples_hour ON storage_samples(hour);

CREATE TABLE storage_charges (
  owner_id      TEXT NOT NULL,
  day           INTEGER NOT NULL,
  hours         INTEGER NOT NULL,
  bytes         INTEGER NOT NULL,
  credits_milli INTEGER NOT NULL,
  PRIMARY KEY (owner_id, day)
) WITHOUT ROWID;

ALTER TABLE credit_accounts ADD COLUMN depleted_at INTEGER;
`;
