// Bucket tags (PutBucketTagging): the validated tag set as JSON [[key, value], ...] in the order given.
// Deleting a bucket deletes its tags.
export const sql = `
CREATE TABLE bucket_tagging (
  bucket_id  TEXT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
  tags       TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`;
