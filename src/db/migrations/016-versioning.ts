// Bucket versioning (issue 20). `objects` stays the current, visible version of each key, so every
// reader (GET, listings, the CDN) is untouched; the versions behind it and the delete markers live in
// object_versions. A key whose latest version is a delete marker has no `objects` row.
export const sql = `
-- NULL: versioning was never enabled (no version ids at all); else 'Enabled' or 'Suspended'. Once
-- set it never goes back to NULL, as on AWS.
ALTER TABLE buckets ADD COLUMN versioning TEXT CHECK (versioning IN ('Enabled', 'Suspended'));

-- NULL is the "null" version: written while versioning was never enabled, or Suspended.
ALTER TABLE objects ADD COLUMN version_id TEXT;

-- Noncurrent versions and delete markers: the columns of objects, plus the order within a key. ord
-- is negative and falls with each row added (a newer version has a smaller ord), so (key, ord) is
-- ListObjectVersions order (key ascending, newest first) and the primary key walks it. A delete
-- marker has no bytes (blob_id '', size 0, etag '').
CREATE TABLE object_versions (
  bucket_id           TEXT NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
  key                 TEXT NOT NULL,
  ord                 INTEGER NOT NULL,
  version_id          TEXT,
  is_delete_marker    INTEGER NOT NULL DEFAULT 0,
  blob_id             TEXT NOT NULL,
  blob_crc32c         INTEGER,
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
  parts               TEXT,
  tagging             TEXT,
  PRIMARY KEY (bucket_id, key, ord)
) WITHOUT ROWID;
CREATE INDEX object_versions_id ON object_versions(bucket_id, key, version_id);

-- The version id a completion answered, for a retried CompleteMultipartUpload.
ALTER TABLE multipart_completed ADD COLUMN version_id TEXT;
`;
