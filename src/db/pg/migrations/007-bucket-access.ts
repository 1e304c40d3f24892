// SQLite migration 022's twin: bucket policies and canned bucket ACLs.
export const sql = `
CREATE TABLE bucket_policies (
  bucket_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  policy     TEXT COLLATE "C" NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE TABLE bucket_acls (
  bucket_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  acl        TEXT COLLATE "C" NOT NULL,
  updated_at BIGINT NOT NULL
);
`;
