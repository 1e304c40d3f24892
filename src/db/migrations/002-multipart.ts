// Multipart uploads. An upload is a row with the object's future headers; each part is its own blob.
// Completing turns the listed parts into the object's manifest (objects.parts, JSON) without copying
// a byte. Times are unix milliseconds.
export const sql = `
-- Upload ids begin with the initiation time (fixed-width hex), so (key, upload_id) order is the
-- oldest-first order in which S3 lists the uploads of one key.
CREATE TABLE multipart_uploads (
  upload_id           TEXT PRIMARY KEY,
  bucket_id           TEXT NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
  key                 TEXT NOT NULL,
  owner_id            TEXT NOT NULL,
  initiated           INTEGER NOT NULL,
  checksum_algorithm  TEXT,
  checksum_type       TEXT,
  content_type        TEXT,
  content_encoding    TEXT,
  content_disposition TEXT,
  content_language    TEXT,
  cache_control       TEXT,
  expires             TEXT,
  user_metadata       TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;
CREATE INDEX multipart_uploads_key ON multipart_uploads(bucket_id, key, upload_id);
CREATE INDEX multipart_uploads_initiated ON multipart_uploads(initiated);

-- claimed = 1 marks the parts a completion hands over to the object, so deleting their rows does
-- not throw their blobs away.
CREATE TABLE multipart_parts (
  upload_id          TEXT NOT NULL REFERENCES multipart_uploads(upload_id) ON DELETE CASCADE,
  part_number        INTEGER NOT NULL,
  blob_id            TEXT NOT NULL,
  size               INTEGER NOT NULL,
  etag               TEXT NOT NULL,
  checksum_algorithm TEXT,
  checksum_value     TEXT,
  last_modified      INTEGER NOT NULL,
  claimed            INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (upload_id, part_number)
) WITHOUT ROWID;

-- Blobs no row points at any more, removed from storage by the multipart sweep. Filled in the same
-- transaction that drops the reference (also when a bucket delete cascades through its uploads), so
-- a crash never leaks the bytes.
CREATE TABLE blob_trash (
  blob_id TEXT PRIMARY KEY
) WITHOUT ROWID;

CREATE TRIGGER multipart_parts_to_trash AFTER DELETE ON multipart_parts WHEN OLD.claimed = 0
BEGIN
  INSERT OR IGNORE INTO blob_trash (blob_id) VALUES (OLD.blob_id);
END;

-- Recently completed uploads: a retried CompleteMultipartUpload gets the same answer (as on AWS)
-- instead of NoSuchUpload. Pruned by the sweep.
CREATE TABLE multipart_completed (
  upload_id          TEXT PRIMARY KEY,
  bucket_id          TEXT NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
  key                TEXT NOT NULL,
  etag               TEXT NOT NULL,
  checksum_algorithm TEXT,
  checksum_value     TEXT,
  checksum_type      TEXT,
  completed_at       INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX multipart_completed_at ON multipart_completed(completed_at);

-- NULL: the object's bytes are blob_id. Otherwise a JSON array of {blobId, size, etag, checksum?}.
ALTER TABLE objects ADD COLUMN parts TEXT;
`;
