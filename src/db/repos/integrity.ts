// What the scrub checks and what was found: every blob a row references (backend blobs and the small
// objects kept inline in SQLite, which has no checksums of its own), with the digest recorded when it
// was written (its CRC32C, or for older rows the MD5 of its ETag), and the blobs whose bytes no longer
// match it.
import type { SqlDialect, SqlExecutor } from '../store/types.js';
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

/** Every referenced blob with its digest and owner (a manifest's parts unpacked; the JSON functions differ). */
function toCheck(dialect: SqlDialect): string {
  // A manifest part's blob id, CRC32C, ETag and 1-based place, from the alias `j`.
  const [parts, blobId, crc, etag, place] =
    dialect === 'postgres'
      ? ['jsonb_array_elements(%.parts::jsonb) WITH ORDINALITY AS j(value, n)', "j.value->>'blobId'", "CAST(j.value->>'crc32c' AS BIGINT)", "j.value->>'etag'", 'j.n']
      : ['json_each(%.parts) j', "json_extract(j.value, '$.blobId')", "json_extract(j.value, '$.crc32c')", "json_extract(j.value, '$.etag')", '(j.key + 1)'];
  return `
  SELECT o.blob_id, o.blob_crc32c AS crc32c, o.etag, 'object ' || b.name || '/' || o.key AS owner
    FROM objects o JOIN buckets b ON b.id = o.bucket_id WHERE o.parts IS NULL
  UNION ALL
  SELECT ${blobId}, ${crc}, ${etag}, 'part ' || ${place} || ' of ' || b.name || '/' || o.key
    FROM objects o JOIN buckets b ON b.id = o.bucket_id CROSS JOIN ${parts.replace('%', 'o')} WHERE o.parts IS NOT NULL
  UNION ALL
  SELECT v.blob_id, v.blob_crc32c, v.etag, 'object ' || b.name || '/' || v.key || ' version ' || coalesce(v.version_id, 'null')
    FROM object_versions v JOIN buckets b ON b.id = v.bucket_id WHERE v.parts IS NULL AND v.is_delete_marker = 0
  UNION ALL
  SELECT ${blobId}, ${crc}, ${etag}, 'part ' || ${place} || ' of ' || b.name || '/' || v.key || ' version ' || coalesce(v.version_id, 'null')
    FROM object_versions v JOIN buckets b ON b.id = v.bucket_id CROSS JOIN ${parts.replace('%', 'v')} WHERE v.parts IS NOT NULL
  UNION ALL
  SELECT p.blob_id, p.crc32c, p.etag, 'part ' || p.part_number || ' of upload ' || p.upload_id FROM multipart_parts p WHERE p.claimed = 0
  UNION ALL
  SELECT a.blob_id, a.crc32c, a.etag, 'asset ' || a.id FROM assets a`;
}

const TO_CHECK = { sqlite: toCheck('sqlite'), postgres: toCheck('postgres') };
const MARK = `INSERT INTO corrupt_blobs (blob_id, owner, expected, actual, found_by, detected_at)
  VALUES (@blob_id, @owner, @expected, @actual, @found_by, @detected_at)
  ON CONFLICT (blob_id) DO UPDATE SET owner = excluded.owner, expected = excluded.expected, actual = excluded.actual,
    found_by = excluded.found_by`;
const LIST = 'SELECT * FROM corrupt_blobs ORDER BY detected_at, blob_id';
const COUNT = 'SELECT count(*) AS n FROM corrupt_blobs';
const FORGET = 'DELETE FROM corrupt_blobs WHERE blob_id = ?';

export class IntegrityRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Every referenced blob with a digest to check, read at once (one statement, one snapshot). */
  async blobsToCheck(): Promise<BlobToCheck[]> {
    const out: BlobToCheck[] = [];
    for (const r of await this.db.all<Row>(TO_CHECK[this.db.dialect])) {
      const expected = expectedDigest(r.crc32c, r.etag);
      if (r.blob_id && expected) out.push({ blobId: r.blob_id, expected, owner: r.owner });
    }
    return out;
  }

  /** Marks a blob; one marked already keeps the time it was first found. */
  async markCorrupt(c: CorruptBlob): Promise<void> {
    await this.db.run(MARK, { blob_id: c.blobId, owner: c.owner, expected: c.expected, actual: c.actual, found_by: c.foundBy, detected_at: c.detectedAt });
  }

  /** A blob that checked out again (repaired by hand, or a false alarm from a torn read). */
  async forget(blobId: string): Promise<void> {
    await this.db.run(FORGET, [blobId]);
  }

  async corrupt(): Promise<CorruptBlob[]> {
    return (await this.db.all<CorruptRow>(LIST)).map((r) => ({
      blobId: r.blob_id,
      owner: r.owner,
      expected: r.expected,
      actual: r.actual,
      foundBy: r.found_by,
      detectedAt: r.detected_at,
    }));
  }

  async corruptCount(): Promise<number> {
    return (await this.db.get<{ n: number }>(COUNT))?.n ?? 0;
  }
}
