// What the scrub checks and what was found: every blob a row references (backend blobs and the small
// objects kept inline in SQLite, which has no checksums of its own), with the digest recorded when it
// was written (its CRC32C, or for older rows the MD5 of its ETag), and the blobs whose bytes no longer
// match it.
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';
import { expectedDigest, type BlobDigest } from '../../storage/blob-digest.js';

export interface BlobToCheck {
  blobId: string;
  expected: BlobDigest;
  /** Who holds it, for an operator: `object <bucket>/<key>`, `part 3 of <bucket>/<key>`, `asset <id>`. */
  owner: string;
}

/** A blob found corrupt; digests as `crc32c:<hex>` or `md5:<hex>` (formatDigest), `actual` 'missing' for a blob gone. */
export interface CorruptBlob {
  blobId: string;
  owner: string;
  expected: string;
  actual: string;
  foundBy: 'read' | 'scrub';
  detectedAt: number;
}

interface Row {
  blob_id: string | null;
  crc32c: number | null;
  etag: string | null;
  owner: string;
}

interface CorruptRow {
  blob_id: string;
  owner: string;
  expected: string;
  actual: string;
  found_by: 'read' | 'scrub';
  detected_at: number;
}

export class IntegrityRepo {
  private readonly allStmt: Statement<[], Row>;
  private readonly markStmt: Statement<CorruptRow>;
  private readonly listStmt: Statement<[], CorruptRow>;
  private readonly countStmt: Statement<[], { n: number }>;
  private readonly forgetStmt: Statement<[string]>;

  constructor(db: Db) {
    this.allStmt = db.prepare(`
      SELECT o.blob_id, o.blob_crc32c AS crc32c, o.etag, 'object ' || b.name || '/' || o.key AS owner
        FROM objects o JOIN buckets b ON b.id = o.bucket_id WHERE o.parts IS NULL
      UNION ALL
      SELECT json_extract(j.value, '$.blobId'), json_extract(j.value, '$.crc32c'), json_extract(j.value, '$.etag'),
          'part ' || (j.key + 1) || ' of ' || b.name || '/' || o.key
        FROM objects o JOIN buckets b ON b.id = o.bucket_id, json_each(o.parts) j WHERE o.parts IS NOT NULL
      UNION ALL
      SELECT v.blob_id, v.blob_crc32c, v.etag, 'object ' || b.name || '/' || v.key || ' version ' || coalesce(v.version_id, 'null')
        FROM object_versions v JOIN buckets b ON b.id = v.bucket_id WHERE v.parts IS NULL AND v.is_delete_marker = 0
      UNION ALL
      SELECT json_extract(j.value, '$.blobId'), json_extract(j.value, '$.crc32c'), json_extract(j.value, '$.etag'),
          'part ' || (j.key + 1) || ' of ' || b.name || '/' || v.key || ' version ' || coalesce(v.version_id, 'null')
        FROM object_versions v JOIN buckets b ON b.id = v.bucket_id, json_each(v.parts) j WHERE v.parts IS NOT NULL
      UNION ALL
      SELECT p.blob_id, p.crc32c, p.etag, 'part ' || p.part_number || ' of upload ' || p.upload_id FROM multipart_parts p WHERE p.claimed = 0
      UNION ALL
      SELECT a.blob_id, a.crc32c, a.etag, 'asset ' || a.id FROM assets a`);
    this.markStmt = db.prepare(`INSERT INTO corrupt_blobs (blob_id, owner, expected, actual, found_by, detected_at)
      VALUES (@blob_id, @owner, @expected, @actual, @found_by, @detected_at)
      ON CONFLICT (blob_id) DO UPDATE SET owner = excluded.owner, expected = excluded.expected, actual = excluded.actual,
        found_by = excluded.found_by`);
    this.listStmt = db.prepare('SELECT * FROM corrupt_blobs ORDER BY detected_at, blob_id');
    this.countStmt = db.prepare('SELECT count(*) AS n FROM corrupt_blobs');
    this.forgetStmt = db.prepare('DELETE FROM corrupt_blobs WHERE blob_id = ?');
  }

  /** Every referenced blob with a digest to check, read at once (no statement stays open across reads). */
  blobsToCheck(): BlobToCheck[] {
    const out: BlobToCheck[] = [];
    for (const r of this.allStmt.iterate()) {
      const expected = expectedDigest(r.crc32c, r.etag);
      if (r.blob_id && expected) out.push({ blobId: r.blob_id, expected, owner: r.owner });
    }
    return out;
  }

  /** Marks a blob; one marked already keeps the time it was first found. */
  markCorrupt(c: CorruptBlob): void {
    this.markStmt.run({ blob_id: c.blobId, owner: c.owner, expected: c.expected, actual: c.actual, found_by: c.foundBy, detected_at: c.detectedAt });
  }

  /** A blob that checked out again (repaired by hand, or a false alarm from a torn read). */
  forget(blobId: string): void {
    this.forgetStmt.run(blobId);
  }

  corrupt(): CorruptBlob[] {
    return this.listStmt.all().map((r) => ({
      blobId: r.blob_id,
      owner: r.owner,
      expected: r.expected,
      actual: r.actual,
      foundBy: r.found_by,
      detectedAt: r.detected_at,
    }));
  }

  corruptCount(): number {
    return this.countStmt.get()?.n ?? 0;
  }
}
