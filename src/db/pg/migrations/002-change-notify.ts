// Node-to-node coherence (docs/SCALE.md): a commit that changes data other nodes cache by version (the
// route table's projects and hostnames, the TLD catalogue, settings, the cache invalidation feed) sends
// NOTIFY s3edge_changes with the table's name; every node LISTENs (src/db/store/pg-change-feed.ts) and
// its SqlStore.changeVersion() moves, as SQLite's data_version does for another process's commit.
// PostgreSQL sends a notification at commit and folds identical ones of one transaction into one.
const WATCHED = ['settings', 'tlds', 'tld_promotions', 'domain_names', 'projects', 'deployments', 'project_hostnames', 'cache_invalidations'];

export const sql = `
CREATE FUNCTION s3edge_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('s3edge_changes', TG_TABLE_NAME);
  RETURN NULL;
END
$$;
${WATCHED.map((table) => `CREATE TRIGGER ${table}_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${table}
  FOR EACH STATEMENT EXECUTE FUNCTION s3edge_notify_change();`).join('\n')}
`;
