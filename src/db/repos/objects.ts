// Object metadata rows. Statements are prepared once; listing walks the primary key in UTF-8 byte order.
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';
import { isInlineBlobId } from '../../storage/blob-id.js';
import { markerPrefixBound, prefixUpperBound, walkRolledUp } from './roll-up.js';
import { newVersionId, ObjectVersionsRepo, type VersionRow, type Versioning } from './object-versions.js';

/** One part of an object completed from a multipart upload: its own blob, in object order. */
export interface ObjectPart {
  blobId: string;
  size: number;
  /** Quoted MD5 of the part. */
  etag: string;
  /** Base64 checksum of the part in the object's checksum algorithm, when it has one. */
  checksum?: string;
  /** CRC32C of the part's blob as stored; absent in manifests written before it was recorded. */
  crc32c?: number;
}

/** One object tag, [key, value]; a tag set keeps the order it was given in. */
export type ObjectTag = [key: string, value: string];

export interface ObjectRecord {
  bucketId: string;
  key: string;
  /** The object's bytes; '' when `parts` holds them instead. */
  blobId: string;
  /** CRC32C of blobId's bytes as stored, checked by whole reads; absent for multipart and older rows. */
  blobCrc32c?: number;
  size: number;
  etag: string;
  sha256: string;
  checksumAlgorithm: string | null;
  checksumValue: string | null;
  checksumType: string | null;
  contentType: string | null;
  contentEncoding: string | null;
  contentDisposition: string | null;
  contentLanguage: string | null;
  cacheControl: string | null;
  expires: string | null;
  userMetadata: Record<string, string>;
  lastModified: number;
  /** Set for objects completed from a multipart upload: the bytes are these blobs concatenated. */
  parts?: ObjectPart[];
  /** The object's tags (objects.tagging); absent when it has none. */
  tagging?: ObjectTag[];
  /** Set on records read back: the version id, null for the "null" version (object-versions.ts). */
  versionId?: string | null;
}

export interface ObjectRow {
  bucket_id: string;
  key: string;
  blob_id: string;
  blob_crc32c: number | null;
  size: number;
  etag: string;
  sha256: string;
  checksum_algorithm: string | null;
  checksum_value: string | null;
  checksum_type: string | null;
  content_type: string | null;
  content_encoding: string | null;
  content_disposition: string | null;
  content_language: string | null;
  cache_control: string | null;
  expires: string | null;
  user_metadata: string;
  last_modified: number;
  parts: string | null;
  tagging: string | null;
  version_id: string | null;
}

/** What a listing page holds before it is rendered as XML. */
export interface ListEntry {
  key: string;
  size: number;
  etag: string;
  lastModified: number;
}

export interface ListPage {
  contents: ListEntry[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** The last key or common prefix returned; resume after it. */
  last?: string;
}

export interface ListQuery {
  prefix: string;
  delimiter: string;
  /** Exclusive: only keys after this (a key, or a common prefix whose keys are all skipped). */
  after: string;
  maxKeys: number;
}

const LIST_COLUMNS = 'key, size, etag, last_modified';

export function toRecord(r: ObjectRow): ObjectRecord {
  return {
    bucketId: r.bucket_id,
    key: r.key,
    blobId: r.blob_id,
    // Always present (undefined when not recorded): one object shape for every record on the GET path.
    blobCrc32c: r.blob_crc32c ?? undefined,
    size: r.size,
    etag: r.etag,
    sha256: r.sha256,
    checksumAlgorithm: r.checksum_algorithm,
    checksumValue: r.checksum_value,
    checksumType: r.checksum_type,
    contentType: r.content_type,
    contentEncoding: r.content_encoding,
    contentDisposition: r.content_disposition,
    contentLanguage: r.content_language,
    cacheControl: r.cache_control,
    expires: r.expires,
    userMetadata: JSON.parse(r.user_metadata) as Record<string, string>,
    lastModified: r.last_modified,
    ...(r.parts === null ? {} : { parts: JSON.parse(r.parts) as ObjectPart[] }),
    ...(r.tagging === null ? {} : { tagging: JSON.parse(r.tagging) as ObjectTag[] }),
    versionId: r.version_id,
  };
}

/** objects.tagging / multipart_uploads.tagging: NULL for no tags, else the JSON of the pairs. */
export function taggingColumn(tags: readonly ObjectTag[] | undefined): string | null {
  return tags && tags.length > 0 ? JSON.stringify(tags) : null;
}

/** Every blob a version's bytes live in. */
export function objectBlobIds(rec: Pick<ObjectRecord, 'blobId' | 'parts'>): string[] {
  return rec.parts ? rec.parts.map((p) => p.blobId) : [rec.blobId];
}

export { prefixUpperBound };

/**
 * What a write did to the key's versions: the backend blobs nothing references any more, and the
 * version id to answer (x-amz-version-id): undefined on a bucket versioning was never enabled on,
 * 'null' for the "null" version.
 */
export interface WriteResult {
  replaced: string[];
  versionId?: string;
}

export interface RemoveResult {
  /** A version was removed (or, on a versioned bucket, there was a current version to hide). */
  existed: boolean;
  blobIds: string[];
  /** As in WriteResult; for a delete marker made or removed, its id. */
  versionId?: string;
  /** A delete marker was made, or the version removed by id was one. */
  deleteMarker?: boolean;
}

/** A version read by id. */
export type VersionRead =
  | { deleteMarker: false; rec: ObjectRecord; inline?: Buffer }
  | { deleteMarker: true; versionId: string | null; lastModified: number };

type WriteRow = Partial<ObjectRow> & { bucket_versioning: Versioning };

/** The answer's form of a version id. */
function versionIdText(id: string | null | undefined): string {
  return id ?? 'null';
}

export class ObjectsRepo {
  /** Noncurrent versions and delete markers. */
  readonly versions: ObjectVersionsRepo;
  private readonly writeStmt: Statement<[string, string], WriteRow>;
  private readonly getByVersionStmt: Statement<[string, string, string | null], ObjectRow & { inline_data: Buffer | null }>;
  private readonly getStmt: Statement<[string, string], ObjectRow>;
  private readonly upsertStmt: Statement<ObjectRow>;
  private readonly deleteStmt: Statement<[string, string]>;
  private readonly setTaggingStmt: Statement<[string | null, string, string, string | null]>;
  private readonly afterStmt: Statement<[string, string, string, number], ListEntryRow>;
  private readonly fromStmt: Statement<[string, string, string, number], ListEntryRow>;
  private readonly countStmt: Statement<[string], { n: number }>;
  private readonly inlineGetStmt: Statement<[string], { data: Buffer }>;
  private readonly getWithInlineStmt: Statement<[string, string], ObjectRow & { inline_data: Buffer | null }>;
  private readonly inlineInsertStmt: Statement<[string, Buffer]>;
  private readonly inlineDeleteStmt: Statement<[string]>;

  constructor(private readonly db: Db) {
    this.versions = new ObjectVersionsRepo(db);
    this.getStmt = db.prepare('SELECT * FROM objects WHERE bucket_id = ? AND key = ?');
    // A write's one read: the current row and the bucket's versioning state, inside its transaction.
    this.writeStmt = db.prepare(`SELECT o.*, b.versioning AS bucket_versioning FROM buckets b
      LEFT JOIN objects o ON o.bucket_id = b.id AND o.key = ? WHERE b.id = ?`);
    this.getByVersionStmt = db.prepare(`SELECT o.*, i.data AS inline_data FROM objects o
      LEFT JOIN inline_blobs i ON i.blob_id = o.blob_id WHERE o.bucket_id = ? AND o.key = ? AND o.version_id IS ?`);
    this.upsertStmt = db.prepare(`INSERT INTO objects (bucket_id, key, blob_id, blob_crc32c, size, etag, sha256,
        checksum_algorithm, checksum_value, checksum_type, content_type, content_encoding, content_disposition,
        content_language, cache_control, expires, user_metadata, last_modified, parts, tagging, version_id)
      VALUES (@bucket_id, @key, @blob_id, @blob_crc32c, @size, @etag, @sha256, @checksum_algorithm, @checksum_value,
        @checksum_type, @content_type, @content_encoding, @content_disposition, @content_language,
        @cache_control, @expires, @user_metadata, @last_modified, @parts, @tagging, @version_id)
      ON CONFLICT (bucket_id, key) DO UPDATE SET blob_id = excluded.blob_id, blob_crc32c = excluded.blob_crc32c, size = excluded.size,
        etag = excluded.etag, sha256 = excluded.sha256, checksum_algorithm = excluded.checksum_algorithm,
        checksum_value = excluded.checksum_value, checksum_type = excluded.checksum_type,
        content_type = excluded.content_type, content_encoding = excluded.content_encoding,
        content_disposition = excluded.content_disposition, content_language = excluded.content_language,
        cache_control = excluded.cache_control, expires = excluded.expires,
        user_metadata = excluded.user_metadata, last_modified = excluded.last_modified, parts = excluded.parts,
        tagging = excluded.tagging,
        version_id = excluded.version_id`);
    this.setTaggingStmt = db.prepare('UPDATE objects SET tagging = ? WHERE bucket_id = ? AND key = ? AND version_id IS ?');
    this.deleteStmt = db.prepare('DELETE FROM objects WHERE bucket_id = ? AND key = ?');
    // key >= prefix keeps the walk inside the prefix range without a second bound.
    this.afterStmt = db.prepare(
      `SELECT ${LIST_COLUMNS} FROM objects WHERE bucket_id = ? AND key > ? AND key >= ? ORDER BY key LIMIT ?`,
    );
    this.fromStmt = db.prepare(
      `SELECT ${LIST_COLUMNS} FROM objects WHERE bucket_id = ? AND key >= ? AND key >= ? ORDER BY key LIMIT ?`,
    );
    this.countStmt = db.prepare('SELECT count(*) AS n FROM objects WHERE bucket_id = ?');
    this.inlineGetStmt = db.prepare('SELECT data FROM inline_blobs WHERE blob_id = ?');
    this.getWithInlineStmt = db.prepare(`SELECT o.*, i.data AS inline_data FROM objects o
      LEFT JOIN inline_blobs i ON i.blob_id = o.blob_id WHERE o.bucket_id = ? AND o.key = ?`);
    this.inlineInsertStmt = db.prepare('INSERT INTO inline_blobs (blob_id, data) VALUES (?, ?)');
    this.inlineDeleteStmt = db.prepare('DELETE FROM inline_blobs WHERE blob_id = ?');
  }

  /** The record and, for a small object kept inline, its bytes: one statement for a GET. */
  getWithInline(bucketId: string, key: string): { rec: ObjectRecord; inline?: Buffer } | undefined {
    const row = this.getWithInlineStmt.get(bucketId, key);
    if (!row) return undefined;
    return row.inline_data === null ? { rec: toRecord(row) } : { rec: toRecord(row), inline: row.inline_data };
  }

  /** The bytes of an inline blob (a small object kept in the database), if it still exists. */
  inlineData(blobId: string): Buffer | undefined {
    return this.inlineGetStmt.get(blobId)?.data;
  }

  /** Drops the inline blobs among `blobIds` (inside the caller's transaction); returns the backend ones. */
  private dropInline(blobIds: readonly string[]): string[] {
    const backend: string[] = [];
    for (const id of blobIds) {
      if (isInlineBlobId(id)) this.inlineDeleteStmt.run(id);
      else backend.push(id);
    }
    return backend;
  }

  get(bucketId: string, key: string): ObjectRecord | undefined {
    const row = this.getStmt.get(bucketId, key);
    return row && toRecord(row);
  }

  /** The current row of a write and the bucket's versioning state (inside the caller's transaction). */
  private currentForWrite(bucketId: string, key: string): { versioning: Versioning; old?: ObjectRecord } {
    const row = this.writeStmt.get(key, bucketId);
    if (!row) return { versioning: null };
    return { versioning: row.bucket_versioning, old: row.key == null ? undefined : toRecord(row as ObjectRow) };
  }

  /** The blobs of noncurrent rows removed for good (inline ones dropped here; the backend ones returned). */
  private releaseRows(rows: readonly VersionRow[]): string[] {
    const ids: string[] = [];
    for (const row of rows) {
      if (row.is_delete_marker === 1) continue;
      ids.push(...objectBlobIds({ blobId: row.blob_id, parts: row.parts === null ? undefined : (JSON.parse(row.parts) as ObjectPart[]) }));
    }
    return this.dropInline(ids);
  }

  /**
   * Makes `rec` the key's current version in one transaction. On a bucket versioning was never enabled
   * on, the row is replaced and the replaced version's blobs that the new one does not use are
   * returned (its inline blob goes in the same transaction). On an Enabled bucket the new version gets
   * a new id and the previous one is kept as noncurrent; on a Suspended one it is the "null" version,
   * which replaces the previous "null" version wherever it is (AWS). `guard` sees the current record
   * inside the transaction and may throw to refuse the write. `inline` is the body of a small object
   * whose rec.blobId is an inline blob id, stored with the row.
   */
  put(rec: ObjectRecord, guard?: (current: ObjectRecord | undefined) => void, inline?: Buffer): WriteResult {
    return this.db.transaction((): WriteResult => {
      const { versioning, old } = this.currentForWrite(rec.bucketId, rec.key);
      guard?.(old);
      if (inline) this.inlineInsertStmt.run(rec.blobId, inline);
      const versionId = versioning === 'Enabled' ? newVersionId() : null;
      let replaced: ObjectRecord | undefined;
      let released: string[] = [];
      if (old && (versioning === null || (versioning === 'Suspended' && old.versionId === null))) replaced = old;
      else if (old) this.versions.moveCurrent(rec.bucketId, rec.key);
      if (versioning === 'Suspended') released = this.releaseRows(this.versions.dropNull(rec.bucketId, rec.key));
      this.upsertStmt.run({
        bucket_id: rec.bucketId,
        key: rec.key,
        blob_id: rec.blobId,
        blob_crc32c: rec.blobCrc32c ?? null,
        size: rec.size,
        etag: rec.etag,
        sha256: rec.sha256,
        checksum_algorithm: rec.checksumAlgorithm,
        checksum_value: rec.checksumValue,
        checksum_type: rec.checksumType,
        content_type: rec.contentType,
        content_encoding: rec.contentEncoding,
        content_disposition: rec.contentDisposition,
        content_language: rec.contentLanguage,
        cache_control: rec.cacheControl,
        expires: rec.expires,
        user_metadata: JSON.stringify(rec.userMetadata),
        last_modified: rec.lastModified,
        parts: rec.parts ? JSON.stringify(rec.parts) : null,
        tagging: taggingColumn(rec.tagging),
        version_id: versionId,
      });
      if (replaced) {
        const kept = new Set(objectBlobIds(rec));
        released.push(...this.dropInline(objectBlobIds(replaced).filter((id) => !kept.has(id))));
      }
      return versioning === null ? { replaced: released } : { replaced: released, versionId: versionIdText(versionId) };
    }).immediate();
  }

  /**
   * Replaces one version's tags (null: the "null" version), current or noncurrent, nothing else:
   * bytes, ETag, Last-Modified and the version's place stay, as on AWS. False when the key has no
   * such version (a delete marker has no tags).
   */
  setTagging(bucketId: string, key: string, versionId: string | null, tags: readonly ObjectTag[] | undefined): boolean {
    return this.db.transaction((): boolean => {
      const column = taggingColumn(tags);
      if (this.setTaggingStmt.run(column, bucketId, key, versionId).changes > 0) return true;
      return this.versions.setTagging(bucketId, key, versionId, column);
    }).immediate();
  }

  /**
   * DeleteObject without a version id. Never-versioned bucket: deletes the row (and its inline blob)
   * and returns the backend blob ids it pointed at; `existed` tells "no row" apart for an inline
   * object. Versioned bucket: a delete marker becomes the latest version (Enabled: with a new id;
   * Suspended: the "null" one, replacing the previous "null" version), the current version is kept
   * as noncurrent unless it was the "null" version of a Suspended bucket.
   */
  delete(bucketId: string, key: string, now: number = Date.now()): RemoveResult {
    return this.db.transaction((): RemoveResult => {
      const { versioning, old } = this.currentForWrite(bucketId, key);
      if (versioning === null) {
        if (!old) return { existed: false, blobIds: [] };
        this.deleteStmt.run(bucketId, key);
        return { existed: true, blobIds: this.dropInline(objectBlobIds(old)) };
      }
      const blobIds: string[] = [];
      if (old && versioning === 'Suspended' && old.versionId === null) blobIds.push(...this.dropInline(objectBlobIds(old)));
      else if (old) this.versions.moveCurrent(bucketId, key);
      if (old) this.deleteStmt.run(bucketId, key);
      if (versioning === 'Suspended') blobIds.push(...this.releaseRows(this.versions.dropNull(bucketId, key)));
      const versionId = versioning === 'Enabled' ? newVersionId() : null;
      this.versions.addDeleteMarker(bucketId, key, versionId, now);
      return { existed: old !== undefined, blobIds, versionId: versionIdText(versionId), deleteMarker: true };
    }).immediate();
  }

  /**
   * DeleteObject with a version id (null: the "null" version): removes that version or delete marker
   * for good; if it was the latest, the newest remaining version becomes current (a delete marker
   * stays the latest). A version that does not exist is no error (existed false).
   */
  deleteVersion(bucketId: string, key: string, versionId: string | null): RemoveResult {
    return this.db.transaction((): RemoveResult => {
      const answer = versionIdText(versionId);
      const current = this.getByVersionStmt.get(bucketId, key, versionId);
      if (current) {
        this.deleteStmt.run(bucketId, key);
        const blobIds = this.dropInline(objectBlobIds(toRecord(current)));
        this.versions.promoteNewest(bucketId, key);
        return { existed: true, blobIds, versionId: answer, deleteMarker: false };
      }
      const row = this.versions.byId(bucketId, key, versionId);
      if (!row) return { existed: false, blobIds: [], versionId: answer };
      this.versions.removeRow(bucketId, key, row.ord);
      const blobIds = this.releaseRows([row]);
      if (!this.getStmt.get(bucketId, key)) this.versions.promoteNewest(bucketId, key);
      return { existed: true, blobIds, versionId: answer, deleteMarker: row.is_delete_marker === 1 };
    }).immediate();
  }

  /** A version or delete marker by id (null: the "null" version), current or not. */
  getVersion(bucketId: string, key: string, versionId: string | null): VersionRead | undefined {
    const row = this.getByVersionStmt.get(bucketId, key, versionId) ?? this.versions.byId(bucketId, key, versionId);
    if (!row) return undefined;
    if ('is_delete_marker' in row && row.is_delete_marker === 1) return { deleteMarker: true, versionId, lastModified: row.last_modified as number };
    const rec = toRecord(row as unknown as ObjectRow);
    return row.inline_data === null ? { deleteMarker: false, rec } : { deleteMarker: false, rec, inline: row.inline_data };
  }

  count(bucketId: string): number {
    return this.countStmt.get(bucketId)?.n ?? 0;
  }

  /**
   * One page of a listing with S3 semantics: keys under `prefix`, after `after`, rolled up into common
   * prefixes at the first `delimiter` past the prefix. A common prefix counts as one entry of maxKeys.
   */
  list(bucketId: string, q: ListQuery): ListPage {
    const page: ListPage = { contents: [], commonPrefixes: [], isTruncated: false };
    const bound = markerPrefixBound(q.after, q.prefix, q.delimiter);
    page.isTruncated = walkRolledUp<ListEntryRow, { key: string; inclusive: boolean }>({
      prefix: q.prefix,
      delimiter: q.delimiter,
      max: q.maxKeys,
      start: bound === undefined ? { key: q.after, inclusive: false } : { key: bound, inclusive: true },
      fetch: (c, limit) => (c.inclusive ? this.fromStmt : this.afterStmt).all(bucketId, c.key, q.prefix, limit),
      afterRow: (row) => ({ key: row.key, inclusive: false }),
      afterPrefix: (upper) => ({ key: upper, inclusive: true }),
      onRow: (row) => {
        page.contents.push({ key: row.key, size: row.size, etag: row.etag, lastModified: row.last_modified });
        page.last = row.key;
      },
      onPrefix: (cp) => {
        page.commonPrefixes.push(cp);
        page.last = cp;
      },
    });
    return page;
  }
}

interface ListEntryRow {
  key: string;
  size: number;
  etag: string;
  last_modified: number;
}
