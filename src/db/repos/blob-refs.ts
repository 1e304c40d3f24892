// Every blob id a row points at: object versions, current and noncurrent (a blob, or a multipart
// manifest's parts), parts of uploads in progress, assets, and the trash the multipart sweep empties. The blob collector
// (src/storage/blob-gc.ts) removes only stored blobs outside this set.
import type { SqlDialect, SqlExecutor } from '../store/types.js';

/** Every referenced id, one row each (a multipart manifest's parts unpacked; the JSON functions differ). */
function references(dialect: SqlDialect): string {
  const partIds = (table: string, alias: string): string =>
    dialect === 'postgres'
      ? `SELECT j.value->>'blobId' FROM ${table} AS ${alias}, jsonb_array_elements(${alias}.parts::jsonb) AS j(value) WHERE ${alias}.parts IS NOT NULL`
      : `SELECT json_extract(j.value, '$.blobId') FROM ${table} AS ${alias}, json_each(${alias}.parts) AS j WHERE ${alias}.parts IS NOT NULL`;
  return `
  SELECT blob_id AS id FROM objects WHERE parts IS NULL
  UNION ALL ${partIds('objects', 'o')}
  UNION ALL SELECT blob_id FROM object_versions WHERE parts IS NULL AND is_delete_marker = 0
  UNION ALL ${partIds('object_versions', 'v')}
  UNION ALL SELECT blob_id FROM multipart_parts
  UNION ALL SELECT blob_id FROM assets
  UNION ALL SELECT blob_id FROM blob_trash`;
}

const SQL = {
  sqlite: { all: references('sqlite'), one: oneOf(references('sqlite')) },
  postgres: { all: references('postgres'), one: oneOf(references('postgres')) },
};

// A scan (blob ids are not indexed): asked only for the few blobs the collector is about to remove.
function oneOf(refs: string): string {
  return `SELECT CASE WHEN EXISTS (SELECT 1 FROM (${refs}) AS refs WHERE id = ?) THEN 1 ELSE 0 END AS found`;
}

export class BlobRefsRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Whether a row references the blob now. */
  async isReferenced(blobId: string): Promise<boolean> {
    return (await this.db.get<{ found: number }>(SQL[this.db.dialect].one, [blobId]))?.found === 1;
  }

  /** The referenced ids, read in one statement (one consistent snapshot of the database). */
  async referenced(): Promise<Set<string>> {
    const out = new Set<string>();
    for (const row of await this.db.all<{ id: string | null }>(SQL[this.db.dialect].all)) if (row.id) out.add(row.id);
    return out;
  }
}
