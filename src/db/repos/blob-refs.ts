// Every blob id a row points at: object versions, current and noncurrent (a blob, or a multipart
// manifest's parts), parts of uploads in progress, assets, and the trash the multipart sweep empties. The blob collector
// (src/storage/blob-gc.ts) removes only stored blobs outside this set.
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';

/** Every referenced id, one row each (a multipart manifest's parts unpacked). */
const REFERENCES = `
  SELECT blob_id AS id FROM objects WHERE parts IS NULL
  UNION ALL SELECT json_extract(j.value, '$.blobId') FROM objects AS o, json_each(o.parts) AS j WHERE o.parts IS NOT NULL
  UNION ALL SELECT blob_id FROM object_versions WHERE parts IS NULL AND is_delete_marker = 0
  UNION ALL SELECT json_extract(j.value, '$.blobId') FROM object_versions AS v, json_each(v.parts) AS j WHERE v.parts IS NOT NULL
  UNION ALL SELECT blob_id FROM multipart_parts
  UNION ALL SELECT blob_id FROM assets
  UNION ALL SELECT blob_id FROM blob_trash`;

export class BlobRefsRepo {
  private readonly allStmt: Statement<[], { id: string | null }>;
  private readonly oneStmt: Statement<[string], { found: 0 | 1 }>;

  constructor(db: Db) {
    this.allStmt = db.prepare(REFERENCES);
    // A scan (blob ids are not indexed): asked only for the few blobs the collector is about to remove.
    this.oneStmt = db.prepare(`SELECT EXISTS (SELECT 1 FROM (${REFERENCES}) WHERE id = ?) AS found`);
  }

  /** Whether a row references the blob now. */
  isReferenced(blobId: string): boolean {
    return this.oneStmt.get(blobId)?.found === 1;
  }

  /** The referenced ids, read in one statement (one consistent snapshot of the database). */
  referenced(): Set<string> {
    const out = new Set<string>();
    for (const row of this.allStmt.iterate()) if (row.id) out.add(row.id);
    return out;
  }
}
