// SQLite migration 021's twin: bucket tags.
export const sql = `
CREATE TABLE bucket_tagging (
  bucket_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  tags       TEXT COLLATE "C" NOT NULL,
  updated_at BIGINT NOT NULL
);
`;
