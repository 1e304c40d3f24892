// Object metadata rows (db/store: SQLite or PostgreSQL); listing walks the primary key in UTF-8 byte
// order (PostgreSQL's key columns are COLLATE "C").
import type { SqlExecutor } from '../store/types.js';
import type { CachedObject, MetadataCache } from '../metadata-cache.js';
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
  /** The part number it was uploaded as (1-10000, gaps allowed); absent in manifests written before it was recorded: its place. */
  number?: number;
}

/** An object's canned ACL when it grants more than its owner's FULL_CONTROL. */
export type ObjectAcl = 'public-read';

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
  /** 'public-read': everyone may read this version (its canned ACL); absent: only by keys and policies. */
  acl?: ObjectAcl;
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
  acl: string | null;
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
    // Always present, as blobCrc32c: one object shape for every record on the GET path.
    acl: r.acl === 'public-read' ? 'public-read' : undefined,
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

const GET = 'SELECT * FROM objects WHERE bucket_id = ? AND key = ?';
/** A write's one read: the current row and the bucket's versioning state, inside its transaction. */
const WRITE_READ = `SELECT o.*, b.versioning AS bucket_versioning FROM buckets b
  LEFT JOIN objects o ON o.bucket_id = b.id AND o.key = ? WHERE b.id = ?`;
const GET_BY_VERSION = `SELECT o.*, i.data AS inline_data FROM objects o
  LEFT JOIN inline_blobs i ON i.blob_id = o.blob_id WHERE o.bucket_id = ? AND o.key = ? AND o.version_id IS NOT DISTINCT FROM ?`;
const UPSERT = `INSERT INTO objects (bucket_id, key, blob_id, blob_crc32c, size, etag, sha256,
    checksum_algorithm, checksum_value, checksum_type, content_type, content_encoding, content_disposition,
    content_language, cache_control, expires, user_metadata, last_modified, parts, tagging, acl, version_id)
  VALUES (@bucket_id, @key, @blob_id, @blob_crc32c, @size, @etag, @sha256, @checksum_algorithm, @checksum_value,
    @checksum_type, @content_type, @content_encoding, @content_disposition, @content_language,
    @cache_control, @expires, @user_metadata, @last_modified, @parts, @tagging, @acl, @version_id)
  ON CONFLICT (bucket_id, key) DO UPDATE SET blob_id = excluded.blob_id, blob_crc32c = excluded.blob_crc32c, size = excluded.size,
    etag = excluded.etag, sha256 = excluded.sha256, checksum_algorithm = excluded.checksum_algorithm,
    checksum_value = excluded.checksum_value, checksum_type = excluded.checksum_type,
    content_type = excluded.content_type, content_encoding = excluded.content_encoding,
    content_disposition = excluded.content_disposition, content_language = excluded.content_language,
    cache_control = excluded.cache_control, expires = excluded.expires,
    user_metadata = excluded.user_metadata, last_modified = excluded.last_modified, parts = excluded.parts,
    tagging = excluded.tagging, acl = excluded.acl,
    version_id = excluded.version_id`;
const SET_TAGGING = 'UPDATE objects SET tagging = ? WHERE bucket_id = ? AND key = ? AND version_id IS NOT DISTINCT FROM ?';
const SET_ACL = 'UPDATE objects SET acl = ? WHERE bucket_id = ? AND key = ? AND version_id IS NOT DISTINCT FROM ?';
const DELETE = 'DELETE FROM objects WHERE bucket_id = ? AND key = ?';
// key >= prefix keeps the walk inside the prefix range without a second bound.
const LIST_AFTER = `SELECT ${LIST_COLUMNS} FROM objects WHERE bucket_id = ? AND key > ? AND key >= ? ORDER BY key LIMIT ?`;
const LIST_FROM = `SELECT ${LIST_COLUMNS} FROM objects WHERE bucket_id = ? AND key >= ? AND key >= ? ORDER BY key LIMIT ?`;
const COUNT = 'SELECT count(*) AS n FROM objects WHERE bucket_id = ?';
const INLINE_GET = 'SELECT data FROM inline_blobs WHERE blob_id = ?';
const GET_WITH_INLINE = `SELECT o.*, i.data AS inline_data FROM objects o
  LEFT JOIN inline_blobs i ON i.blob_id = o.blob_id WHERE o.bucket_id = ? AND o.key = ?`;
const INLINE_INSERT = 'INSERT INTO inline_blobs (blob_id, data) VALUES (?, ?)';
const INLINE_DELETE = 'DELETE FROM inline_blobs WHERE blob_id = ?';

type InlineRow = ObjectRow & { inline_data: Buffer | null };

export class ObjectsRepo {
  /** Noncurrent versions and delete markers. */
  readonly versions: ObjectVersionsRepo;

  /**
   * `cache`: the node's coherent cache of current rows (PostgreSQL, outside transactions), which
   * getWithInline and get read through; a transaction's repository reads its own snapshot.
   */
  constructor(
    private readonly db: SqlExecutor,
    private readonly cache?: MetadataCache,
  ) {
    this.versions = new ObjectVersionsRepo(db);
  }

  /** The record and, for a small object kept inline, its bytes: one statement for a GET. */
  getWithInline(bucketId: string, key: string): Promise<CachedObject | undefined> {
    if (this.cache) return this.cache.object(bucketId, key, () => this.readWithInline(bucketId, key));
    return this.readWithInline(bucketId, key);
  }

  private async readWithInline(bucketId: string, key: string): Promise<CachedObject | undefined> {
    const row = await this.db.get<InlineRow>(GET_WITH_INLINE, [bucketId, key]);
    if (!row) return undefined;
    return row.inline_data === null ? { rec: toRecord(row) } : { rec: toRecord(row), inline: row.inline_data };
  }

  /** The bytes of an inline blob (a small object kept in the database), if it still exists. */
  async inlineData(blobId: string): Promise<Buffer | undefined> {
    return (await this.db.get<{ data: Buffer }>(INLINE_GET, [blobId]))?.data;
  }

  async get(bucketId: string, key: string): Promise<ObjectRecord | undefined> {
    // Cached: the entry of getWithInline (the row read with its bytes, one entry per key).
    if (this.cache) return (await this.getWithInline(bucketId, key))?.rec;
    const row = await this.db.get<ObjectRow>(GET, [bucketId, key]);
    return row && toRecord(row);
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
  put(rec: ObjectRecord, guard?: (current: ObjectRecord | undefined) => void, inline?: Buffer): Promise<WriteResult> {
    return this.db.transaction(async (tx): Promise<WriteResult> => {
      const w = new ObjectWrites(tx);
      const { versioning, old } = await w.currentForWrite(rec.bucketId, rec.key);
      guard?.(old);
      if (inline) await tx.run(INLINE_INSERT, [rec.blobId, inline]);
      const versionId = versioning === 'Enabled' ? newVersionId() : null;
      let replaced: ObjectRecord | undefined;
      let released: string[] = [];
      if (old && (versioning === null || (versioning === 'Suspended' && old.versionId === null))) replaced = old;
      else if (old) await w.versions.moveCurrent(rec.bucketId, rec.key);
      if (versioning === 'Suspended') released = await w.releaseRows(await w.versions.dropNull(rec.bucketId, rec.key));
      await tx.run(UPSERT, {
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
        acl: rec.acl ?? null,
        version_id: versionId,
      });
      if (replaced) {
        const kept = new Set(objectBlobIds(rec));
        released.push(...(await w.dropInline(objectBlobIds(replaced).filter((id) => !kept.has(id)))));
      }
      return versioning === null ? { replaced: released } : { replaced: released, versionId: versionIdText(versionId) };
    });
  }

  /**
   * Replaces one version's tags (null: the "null" version), current or noncurrent, nothing else:
   * bytes, ETag, Last-Modified and the version's place stay, as on AWS. False when the key has no
   * such version (a delete marker has no tags).
   */
  setTagging(bucketId: string, key: string, versionId: string | null, tags: readonly ObjectTag[] | undefined): Promise<boolean> {
    return this.db.transaction(async (tx): Promise<boolean> => {
      const column = taggingColumn(tags);
      if ((await tx.run(SET_TAGGING, [column, bucketId, key, versionId])).changes > 0) return true;
      return new ObjectVersionsRepo(tx).setTagging(bucketId, key, versionId, column);
    });
  }

  /**
   * Replaces one version's canned ACL (PutObjectAcl), current or noncurrent, nothing else. False when
   * the key has no such version.
   */
  setAcl(bucketId: string, key: string, versionId: string | null, acl: ObjectAcl | null): Promise<boolean> {
    return this.db.transaction(async (tx): Promise<boolean> => {
      if ((await tx.run(SET_ACL, [acl, bucketId, key, versionId])).changes > 0) return true;
      return new ObjectVersionsRepo(tx).setAcl(bucketId, key, versionId, acl);
    });
  }

  /**
   * DeleteObject without a version id. Never-versioned bucket: deletes the row (and its inline blob)
   * and returns the backend blob ids it pointed at; `existed` tells "no row" apart for an inline
   * object. Versioned bucket: a delete marker becomes the latest version (Enabled: with a new id;
   * Suspended: the "null" one, replacing the previous "null" version), the current version is kept
   * as noncurrent unless it was the "null" version of a Suspended bucket. `guard` sees the current
   * record inside the transaction; false leaves everything as it is (existed false): the lifecycle
   * job deletes only what is still due.
   */
  delete(bucketId: string, key: string, now: number = Date.now(), guard?: (current: ObjectRecord | undefined) => boolean): Promise<RemoveResult> {
    return this.db.transaction(async (tx): Promise<RemoveResult> => {
      const w = new ObjectWrites(tx);
      const { versioning, old } = await w.currentForWrite(bucketId, key);
      if (guard && !guard(old)) return { existed: false, blobIds: [] };
      if (versioning === null) {
        if (!old) return { existed: false, blobIds: [] };
        await tx.run(DELETE, [bucketId, key]);
        return { existed: true, blobIds: await w.dropInline(objectBlobIds(old)) };
      }
      const blobIds: string[] = [];
      if (old && versioning === 'Suspended' && old.versionId === null) blobIds.push(...(await w.dropInline(objectBlobIds(old))));
      else if (old) await w.versions.moveCurrent(bucketId, key);
      if (old) await tx.run(DELETE, [bucketId, key]);
      if (versioning === 'Suspended') blobIds.push(...(await w.releaseRows(await w.versions.dropNull(bucketId, key))));
      const versionId = versioning === 'Enabled' ? newVersionId() : null;
      await w.versions.addDeleteMarker(bucketId, key, versionId, now);
      return { existed: old !== undefined, blobIds, versionId: versionIdText(versionId), deleteMarker: true };
    });
  }

  /**
   * DeleteObject with a version id (null: the "null" version): removes that version or delete marker
   * for good; if it was the latest, the newest remaining version becomes current (a delete marker
   * stays the latest). A version that does not exist is no error (existed false). `only` (the
   * lifecycle job) removes the version only while it is noncurrent (some version is newer), or only
   * while it is a delete marker with no other version of the key left; else existed false.
   */
  deleteVersion(bucketId: string, key: string, versionId: string | null, only?: 'noncurrent' | 'lone-delete-marker'): Promise<RemoveResult> {
    return this.db.transaction(async (tx): Promise<RemoveResult> => {
      const w = new ObjectWrites(tx);
      const answer = versionIdText(versionId);
      const current = await tx.get<InlineRow>(GET_BY_VERSION, [bucketId, key, versionId]);
      // The current version is neither noncurrent nor a delete marker.
      if (current && only) return { existed: false, blobIds: [], versionId: answer };
      if (current) {
        await tx.run(DELETE, [bucketId, key]);
        const blobIds = await w.dropInline(objectBlobIds(toRecord(current)));
        await w.versions.promoteNewest(bucketId, key);
        return { existed: true, blobIds, versionId: answer, deleteMarker: false };
      }
      const row = await w.versions.byId(bucketId, key, versionId);
      if (!row) return { existed: false, blobIds: [], versionId: answer };
      if (only) {
        const latest = !(await tx.get<ObjectRow>(GET, [bucketId, key])) && (await w.versions.newestOrd(bucketId, key)) === row.ord;
        const allowed = only === 'noncurrent' ? !latest : latest && row.is_delete_marker === 1 && (await w.versions.count(bucketId, key)) === 1;
        if (!allowed) return { existed: false, blobIds: [], versionId: answer };
      }
      await w.versions.removeRow(bucketId, key, row.ord);
      const blobIds = await w.releaseRows([row]);
      if (!(await tx.get<ObjectRow>(GET, [bucketId, key]))) await w.versions.promoteNewest(bucketId, key);
      return { existed: true, blobIds, versionId: answer, deleteMarker: row.is_delete_marker === 1 };
    });
  }

  /** A version or delete marker by id (null: the "null" version), current or not. */
  async getVersion(bucketId: string, key: string, versionId: string | null): Promise<VersionRead | undefined> {
    const row = (await this.db.get<InlineRow>(GET_BY_VERSION, [bucketId, key, versionId])) ?? (await this.versions.byId(bucketId, key, versionId));
    if (!row) return undefined;
    if ('is_delete_marker' in row && row.is_delete_marker === 1) return { deleteMarker: true, versionId, lastModified: row.last_modified as number };
    const rec = toRecord(row as unknown as ObjectRow);
    return row.inline_data === null ? { deleteMarker: false, rec } : { deleteMarker: false, rec, inline: row.inline_data };
  }

  async count(bucketId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(COUNT, [bucketId]))?.n ?? 0;
  }

  /**
   * One page of a listing with S3 semantics: keys under `prefix`, after `after`, rolled up into common
   * prefixes at the first `delimiter` past the prefix. A common prefix counts as one entry of maxKeys.
   */
  async list(bucketId: string, q: ListQuery): Promise<ListPage> {
    const page: ListPage = { contents: [], commonPrefixes: [], isTruncated: false };
    const bound = markerPrefixBound(q.after, q.prefix, q.delimiter);
    page.isTruncated = await walkRolledUp<ListEntryRow, { key: string; inclusive: boolean }>({
      prefix: q.prefix,
      delimiter: q.delimiter,
      max: q.maxKeys,
      start: bound === undefined ? { key: q.after, inclusive: false } : { key: bound, inclusive: true },
      fetch: (c, limit) => this.db.all<ListEntryRow>(c.inclusive ? LIST_FROM : LIST_AFTER, [bucketId, c.key, q.prefix, limit]),
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

/** The statements of one write transaction that several of ObjectsRepo's writes share. */
class ObjectWrites {
  readonly versions: ObjectVersionsRepo;

  constructor(private readonly tx: SqlExecutor) {
    this.versions = new ObjectVersionsRepo(tx);
  }

  /** The current row of a write and the bucket's versioning state. */
  async currentForWrite(bucketId: string, key: string): Promise<{ versioning: Versioning; old?: ObjectRecord }> {
    const row = await this.tx.get<WriteRow>(WRITE_READ, [key, bucketId]);
    if (!row) return { versioning: null };
    return { versioning: row.bucket_versioning, old: row.key == null ? undefined : toRecord(row as ObjectRow) };
  }

  /** Drops the inline blobs among `blobIds`; returns the backend ones. */
  async dropInline(blobIds: readonly string[]): Promise<string[]> {
    const backend: string[] = [];
    for (const id of blobIds) {
      if (isInlineBlobId(id)) await this.tx.run(INLINE_DELETE, [id]);
      else backend.push(id);
    }
    return backend;
  }

  /** The blobs of noncurrent rows removed for good (inline ones dropped here; the backend ones returned). */
  releaseRows(rows: readonly VersionRow[]): Promise<string[]> {
    const ids: string[] = [];
    for (const row of rows) {
      if (row.is_delete_marker === 1) continue;
      ids.push(...objectBlobIds({ blobId: row.blob_id, parts: row.parts === null ? undefined : (JSON.parse(row.parts) as ObjectPart[]) }));
    }
    return this.dropInline(ids);
  }
}

interface ListEntryRow {
  key: string;
  size: number;
  etag: string;
  last_modified: number;
}
