// Who may reach a bucket besides its keys (issue 35): the bucket policy as its owner wrote it (JSON text,
// parsed and checked before it gets here) and the canned ACL that opens it to everyone (public-read or
// public-read-write; private is no row). Deleting a bucket deletes both.
export const sql = `
CREATE TABLE bucket_policies (
  bucket_id  TEXT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  policy     TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE bucket_acls (
  bucket_id  TEXT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  acl        TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`;
