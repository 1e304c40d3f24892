// SQLite migration 027's twin: stored bytes counted by triggers (bucket_usage, asset_usage,
// multipart_uploads.bytes), quotas, quota reservations, storage samples and charges, depleted_at.
// The counting triggers stand aside while `s3edge metadata copy` fills the database
// (SET LOCAL s3edge.copying = 'on'): the counters are copied as SQLite has them.
export const sql = `
CREATE TABLE bucket_usage (
  bucket_id TEXT COLLATE "C" PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  owner_id  TEXT COLLATE "C" NOT NULL,
  bytes     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX bucket_usage_owner ON bucket_usage(owner_id);

CREATE TABLE asset_usage (
  user_id TEXT COLLATE "C" PRIMARY KEY,
  bytes   BIGINT NOT NULL DEFAULT 0
);

ALTER TABLE multipart_uploads ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
UPDATE multipart_uploads SET bytes = (SELECT COALESCE(SUM(p.size), 0) FROM multipart_parts p WHERE p.upload_id = multipart_uploads.upload_id);

INSERT INTO bucket_usage (bucket_id, owner_id, bytes)
  SELECT b.id, b.owner_id,
    (SELECT COALESCE(SUM(o.size), 0) FROM objects o WHERE o.bucket_id = b.id)
    + (SELECT COALESCE(SUM(v.size), 0) FROM object_versions v WHERE v.bucket_id = b.id)
    + (SELECT COALESCE(SUM(u.bytes), 0) FROM multipart_uploads u WHERE u.bucket_id = b.id)
  FROM buckets b;
INSERT INTO asset_usage (user_id, bytes) SELECT user_id, SUM(size) FROM assets GROUP BY user_id;

CREATE FUNCTION s3edge_counting() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT COALESCE(current_setting('s3edge.copying', true), '') <> 'on'
$$;

CREATE FUNCTION s3edge_bucket_usage_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF s3edge_counting() THEN
    INSERT INTO bucket_usage (bucket_id, owner_id, bytes) VALUES (NEW.id, NEW.owner_id, 0);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER bucket_usage_row AFTER INSERT ON buckets FOR EACH ROW EXECUTE FUNCTION s3edge_bucket_usage_row();

-- objects and object_versions: the row's size, in or out of its bucket.
CREATE FUNCTION s3edge_object_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT s3edge_counting() THEN RETURN NULL; END IF;
  IF TG_OP = 'INSERT' THEN
    UPDATE bucket_usage SET bytes = bytes + NEW.size WHERE bucket_id = NEW.bucket_id;
  ELSIF TG_OP = 'UPDATE' THEN
    UPDATE bucket_usage SET bytes = bytes + NEW.size - OLD.size WHERE bucket_id = NEW.bucket_id;
  ELSE
    UPDATE bucket_usage SET bytes = bytes - OLD.size WHERE bucket_id = OLD.bucket_id;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER objects_usage_insert AFTER INSERT ON objects FOR EACH ROW EXECUTE FUNCTION s3edge_object_usage();
CREATE TRIGGER objects_usage_update AFTER UPDATE OF size ON objects FOR EACH ROW EXECUTE FUNCTION s3edge_object_usage();
CREATE TRIGGER objects_usage_delete AFTER DELETE ON objects FOR EACH ROW EXECUTE FUNCTION s3edge_object_usage();
CREATE TRIGGER object_versions_usage_insert AFTER INSERT ON object_versions FOR EACH ROW EXECUTE FUNCTION s3edge_object_usage();
CREATE TRIGGER object_versions_usage_update AFTER UPDATE OF size ON object_versions FOR EACH ROW EXECUTE FUNCTION s3edge_object_usage();
CREATE TRIGGER object_versions_usage_delete AFTER DELETE ON object_versions FOR EACH ROW EXECUTE FUNCTION s3edge_object_usage();

-- A part: its bytes on its upload and on the upload's bucket (neither, once the upload is gone).
CREATE FUNCTION s3edge_part_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta BIGINT;
  upload TEXT;
BEGIN
  IF NOT s3edge_counting() THEN RETURN NULL; END IF;
  IF TG_OP = 'INSERT' THEN
    delta := NEW.size; upload := NEW.upload_id;
  ELSIF TG_OP = 'UPDATE' THEN
    delta := NEW.size - OLD.size; upload := NEW.upload_id;
  ELSE
    delta := -OLD.size; upload := OLD.upload_id;
  END IF;
  UPDATE bucket_usage SET bytes = bytes + delta
    WHERE bucket_id = (SELECT bucket_id FROM multipart_uploads WHERE upload_id = upload);
  UPDATE multipart_uploads SET bytes = bytes + delta WHERE upload_id = upload;
  RETURN NULL;
END
$$;
CREATE TRIGGER multipart_parts_usage_insert AFTER INSERT ON multipart_parts FOR EACH ROW EXECUTE FUNCTION s3edge_part_usage();
CREATE TRIGGER multipart_parts_usage_update AFTER UPDATE OF size ON multipart_parts FOR EACH ROW EXECUTE FUNCTION s3edge_part_usage();
CREATE TRIGGER multipart_parts_usage_delete AFTER DELETE ON multipart_parts FOR EACH ROW EXECUTE FUNCTION s3edge_part_usage();

CREATE FUNCTION s3edge_upload_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF s3edge_counting() THEN
    UPDATE bucket_usage SET bytes = bytes - OLD.bytes WHERE bucket_id = OLD.bucket_id;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER multipart_uploads_usage_delete AFTER DELETE ON multipart_uploads FOR EACH ROW EXECUTE FUNCTION s3edge_upload_usage();

CREATE FUNCTION s3edge_asset_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT s3edge_counting() THEN RETURN NULL; END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO asset_usage (user_id, bytes) VALUES (NEW.user_id, NEW.size)
      ON CONFLICT (user_id) DO UPDATE SET bytes = asset_usage.bytes + excluded.bytes;
  ELSE
    UPDATE asset_usage SET bytes = bytes - OLD.size WHERE user_id = OLD.user_id;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER assets_usage_insert AFTER INSERT ON assets FOR EACH ROW EXECUTE FUNCTION s3edge_asset_usage();
CREATE TRIGGER assets_usage_delete AFTER DELETE ON assets FOR EACH ROW EXECUTE FUNCTION s3edge_asset_usage();

ALTER TABLE users ADD COLUMN storage_quota BIGINT;
ALTER TABLE buckets ADD COLUMN storage_quota BIGINT;

CREATE TABLE storage_reservations (
  id          TEXT COLLATE "C" PRIMARY KEY,
  user_id     TEXT COLLATE "C" NOT NULL,
  bucket_id   TEXT COLLATE "C" NOT NULL,
  bytes       BIGINT NOT NULL CHECK (bytes >= 0),
  holder      TEXT COLLATE "C" NOT NULL,
  created_at  BIGINT NOT NULL
);
CREATE INDEX storage_reservations_user ON storage_reservations(user_id);
CREATE INDEX storage_reservations_bucket ON storage_reservations(bucket_id);
CREATE INDEX storage_reservations_holder ON storage_reservations(holder);

CREATE TABLE storage_samples (
  owner_id TEXT COLLATE "C" NOT NULL,
  hour     BIGINT NOT NULL,
  bytes    BIGINT NOT NULL,
  PRIMARY KEY (owner_id, hour)
);
CREATE INDEX storage_samples_hour ON storage_samples(hour);

CREATE TABLE storage_charges (
  owner_id      TEXT COLLATE "C" NOT NULL,
  day           BIGINT NOT NULL,
  hours         INTEGER NOT NULL,
  bytes         BIGINT NOT NULL,
  credits_milli BIGINT NOT NULL,
  PRIMARY KEY (owner_id, day)
);

ALTER TABLE credit_accounts ADD COLUMN depleted_at BIGINT;
`;
