// The rows a node caches for its hot paths (src/db/metadata-cache.ts: the current object rows of GET
// and HEAD, buckets by name) name themselves on NOTIFY s3edge_rows when a transaction changes them, so
// every node drops exactly what changed (docs/SCALE.md, "Coherence"). The payload is JSON:
//   ["o", bucket_id, key]  one object key
//   ["o", bucket_id]       every key of a bucket (a statement that changed more than 64 of its rows,
//                          or a key whose note would pass the payload limit)
//   ["b", name]            one bucket, by name
//   ["*"]                  everything (TRUNCATE, a statement that changed more than 64 buckets)
// Statement triggers with transition tables: one note per key a statement changed, however many rows,
// and a bulk statement (`metadata copy`) sends a note per bucket rather than one per row. PostgreSQL
// sends them at commit, to every listener, and folds identical ones of one transaction into one.
// NOTIFY refuses a payload of 8000 bytes or more: a key is at most 1024 bytes, but JSON escapes a
// control character as six, so a note above 7900 bytes is sent for its bucket instead.

const OBJECT_NOTES = (rows: string): string => `PERFORM pg_notify('s3edge_rows', note) FROM (
      SELECT DISTINCT s3edge_object_note(bucket_id, key, count(*) OVER (PARTITION BY bucket_id)) AS note
      FROM (SELECT DISTINCT bucket_id, key FROM ${rows}) changed) notes;`;

const BUCKET_NOTES = (rows: string): string => `PERFORM pg_notify('s3edge_rows', note) FROM (
      SELECT DISTINCT CASE WHEN count(*) OVER () > 64 THEN '["*"]' ELSE json_build_array('b', name)::text END AS note
      FROM (SELECT DISTINCT name FROM ${rows}) changed) notes;`;

export const sql = `
CREATE FUNCTION s3edge_object_note(bucket text, object_key text, rows_in_bucket bigint) RETURNS text
  LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN rows_in_bucket > 64 OR octet_length(note) > 7900 THEN json_build_array('o', bucket)::text ELSE note END
  FROM (SELECT json_build_array('o', bucket, object_key)::text AS note) one
$$;

CREATE FUNCTION s3edge_objects_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    ${OBJECT_NOTES('new_rows')}
  ELSIF TG_OP = 'UPDATE' THEN
    ${OBJECT_NOTES('(SELECT bucket_id, key FROM old_rows UNION ALL SELECT bucket_id, key FROM new_rows) both_sides')}
  ELSIF TG_OP = 'DELETE' THEN
    ${OBJECT_NOTES('old_rows')}
  ELSE
    PERFORM pg_notify('s3edge_rows', '["*"]');
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION s3edge_buckets_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    ${BUCKET_NOTES('new_rows')}
  ELSIF TG_OP = 'UPDATE' THEN
    ${BUCKET_NOTES('(SELECT name FROM old_rows UNION ALL SELECT name FROM new_rows) both_sides')}
  ELSIF TG_OP = 'DELETE' THEN
    ${BUCKET_NOTES('old_rows')}
  ELSE
    PERFORM pg_notify('s3edge_rows', '["*"]');
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER objects_inserted AFTER INSERT ON objects REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_objects_changed();
CREATE TRIGGER objects_updated AFTER UPDATE ON objects REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_objects_changed();
CREATE TRIGGER objects_deleted AFTER DELETE ON objects REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_objects_changed();
CREATE TRIGGER objects_truncated AFTER TRUNCATE ON objects
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_objects_changed();

CREATE TRIGGER buckets_inserted AFTER INSERT ON buckets REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_buckets_changed();
CREATE TRIGGER buckets_updated AFTER UPDATE ON buckets REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_buckets_changed();
CREATE TRIGGER buckets_deleted AFTER DELETE ON buckets REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_buckets_changed();
CREATE TRIGGER buckets_truncated AFTER TRUNCATE ON buckets
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_buckets_changed();
`;
