// What the scrub checks and what it found: every blob of the storage backend a row references, with
// the MD5 recorded when it was written (an object's or part's ETag, an asset's), and the blobs whose
// bytes no longer match it.
import type { Statement } from 'better-sqlite3';
import type { Db } from '../open.js';

export interface BlobToCheck {
  blobId: string;
  /** Lowercase hex MD5 of the blob's bytes, as recorded at write time. */
  md5Hex: string;
  /** Who holds it, for an operator: `object <bucket>/<key>`, `part 3 of <bucket>/<key>`, `asset <id>`. */
  owner: string;
}

export interface CorruptBlob extends BlobToCheck {
  actualMd5Hex: string;
  detectedAt: number;
}

interface Row {
  blob_id: string;
  etag: string;
  owner: string;
}

/** A quoted MD5 ETag (`"0123..."`): multipart-style ETags (`"...-3"`) are no digest of one blob. */
const MD5_ETAG = /^"?([0-9a-f]{32})"?$/;

export class IntegrityRepo {
  private readonly allStmt: Statement<[], Row>;
  private readonly markStmt: Statement<[string, string, string, string, number]>;
  private readonly listStmt: Statement<[], { blob_id: string; owner: string; expected_md5: string; actual_md5: string; detected_at: number }>;
  private readonly countStmt: Statement<[], { n: number }>;
  private readonly forgetStmt: Statement<[string]>;

  constructor(db: Db) {
    // Inline blobs live in SQLite, which checks its own pages: only backend blobs are listed.
    this.allStmt = db.prepare(`
      SELECT o.blob_id, o.etag, 'object ' || b.name || '/' || o.key AS owner
        FROM objects o JOIN buckets b ON b.id = o.bucket_id WHERE o.parts IS NULL AND o.blob_id NOT LIKE 'inline-%'
      UNION ALL
      SELECT json_extract(j.value, '$.blobId'), json_extract(j.value, '$.etag'), 'part ' || (j.key + 1) || ' of ' || b.name || '/' || o.key
        FROM objects o JOIN buckets b ON b.id = o.bucket_id, json_each(o.parts) j WHERE o.parts IS NOT NULL
      UNION ALL
      SELECT p.blob_id, p.etag, 'part ' || p.part_number || ' of upload ' || p.upload_id FROM multipart_parts p WHERE p.claimed = 0
      UNION ALL
      SELECT a.blob_id, a.etag, 'asset ' || a.id FROM assets a`);
    this.markStmt = db.prepare(`INSERT INTO corrupt_blobs (blob_id, owner, expected_md5, actual_md5, detected_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (blob_id) DO UPDATE SET owner = excluded.owner, actual_md5 = excluded.actual_md5, detected_at = excluded.detected_at`);
    this.listStmt = db.prepare('SELECT blob_id, owner, expected_md5, actual_md5, detected_at FROM corrupt_blobs ORDER BY detected_at, blob_id');
    this.countStmt = db.prepare('SELECT count(*) AS n FROM corrupt_blobs');
    this.forgetStmt = db.prepare('DELETE FROM corrupt_blobs WHERE blob_id = ?');
  }

  /** Every referenced backend blob with a single-blob MD5, read at once (no statement stays open across reads). */
  blobsToCheck(): BlobToCheck[] {
    const out: BlobToCheck[] = [];
    for (const r of this.allStmt.iterate()) {
      const md5 = MD5_ETAG.exec(r.etag ?? '')?.[1];
      if (r.blob_id && md5) out.push({ blobId: r.blob_id, md5Hex: md5, owner: r.owner });
    }
    return out;
  }

  markCorrupt(blob: BlobToCheck, actualMd5Hex: string, at: number): void {
    this.markStmt.run(blob.blobId, blob.owner, blob.md5Hex, actualMd5Hex, at);
  }

  /** A blob that checked out again (repaired by hand, or a false alarm from a torn read). */
  forget(blobId: string): void {
    this.forgetStmt.run(blobId);
  }

  corrupt(): CorruptBlob[] {
    return this.listStmt.all().map((r) => ({ blobId: r.blob_id, owner: r.owner, md5Hex: r.expected_md5, actualMd5Hex: r.actual_md5, detectedAt: r.detected_at }));
  }

  corruptCount(): number {
    return this.countStmt.get()?.n ?? 0;
  }
}
