// The versions behind a key's current one, and delete markers (migration 016). `objects` keeps the
// current version of each key; on a versioned bucket an overwrite or a delete moves it here in the
// same transaction, and deleting the current version by id brings the newest one back. Used by
// ObjectsRepo inside its write transactions, and by ListObjectVersions and reads by version id.
import { randomBytes } from 'node:crypto';
import type { SqlExecutor } from '../store/types.js';
import { markerPrefixBound, walkRolledUp } from './roll-up.js';

/** A bucket's versioning state; null = never enabled (no version ids anywhere). */
export type Versioning = 'Enabled' | 'Suspended' | null;

/**
 * 32 URL-safe characters (192 random bits), like AWS's 32-character ids. Never a leading '-': a
 * command line reads `--version-id -x...` as an option (aws cli's usage error, 1 id in 64 before).
 */
export function newVersionId(): string {
  for (;;) {
    const id = randomBytes(24).toString('base64url');
    if (id[0] !== '-') return id;
  }
}

/** Whether `id` could be a version id this server made. */
export function isVersionId(id: string): boolean {
  return id.length === 32 && /^[A-Za-z0-9_-]{32}$/.test(id);
}

/** The ord the current row (in `objects`) has in the listing order: before every noncurrent one. */
const CURRENT_ORD = -1e15;

/** The columns objects and object_versions share, moved as they are (tagging included). */
export const VERSION_COLUMNS = `bucket_id, key, version_id, blob_id, blob_crc32c, size, etag, sha256, checksum_algorithm,
  checksum_value, checksum_type, content_type, content_encoding, content_disposition, content_language, cache_control,
  expires, user_metadata, last_modified, parts, tagging, acl`;

/** The next (newest) ord of a key: one below the smallest so far. */
const NEXT_ORD = '(SELECT coalesce(min(ord), 0) - 1 FROM object_versions WHERE bucket_id = @bucketId AND key = @key)';

export interface VersionEntry {
  key: string;
  /** null: the "null" version. */
  versionId: string | null;
  deleteMarker: boolean;
  isLatest: boolean;
  size: number;
  etag: string;
  lastModified: number;
}

export interface VersionListQuery {
  prefix: string;
  delimiter: string;
  keyMarker: string;
  /** undefined: resume after every version of keyMarker; null: after its "null" version. */
  versionIdMarker?: string | null;
  maxKeys: number;
}

export interface VersionListPage {
  entries: VersionEntry[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker?: string;
  /** With nextKeyMarker when the page ended on a version (not a common prefix). */
  nextVersionIdMarker?: string | null;
}

interface ListRow {
  key: string;
  ord: number;
  version_id: string | null;
  is_delete_marker: number;
  is_latest: number;
  size: number;
  etag: string;
  last_modified: number;
}

/** A noncurrent row, as stored (the caller turns it into a record). */
export interface VersionRow {
  ord: number;
  is_delete_marker: number;
  blob_id: string;
  parts: string | null;
  [column: string]: unknown;
}

interface Cursor {
  key: string;
  ord: number;
}

const MOVE = `INSERT INTO object_versions (ord, ${VERSION_COLUMNS})
  SELECT ${NEXT_ORD}, ${VERSION_COLUMNS} FROM objects WHERE bucket_id = @bucketId AND key = @key`;
const PROMOTE = `INSERT INTO objects (${VERSION_COLUMNS})
  SELECT ${VERSION_COLUMNS} FROM object_versions WHERE bucket_id = @bucketId AND key = @key AND ord = @ord`;
const DELETE_ROW = 'DELETE FROM object_versions WHERE bucket_id = ? AND key = ? AND ord = ?';
const NEWEST = `SELECT ord, is_delete_marker, version_id, last_modified FROM object_versions
  WHERE bucket_id = ? AND key = ? ORDER BY ord LIMIT 1`;
const MARKER = `INSERT INTO object_versions (bucket_id, key, ord, version_id, is_delete_marker, blob_id,
    size, etag, sha256, last_modified)
  VALUES (@bucketId, @key, ${NEXT_ORD}, @versionId, 1, '', 0, '', '', @now)`;
const BY_ID = `SELECT v.*, i.data AS inline_data FROM object_versions v
  LEFT JOIN inline_blobs i ON i.blob_id = v.blob_id WHERE v.bucket_id = ? AND v.key = ? AND v.version_id IS NOT DISTINCT FROM ?`;
const NULL_ROWS = 'SELECT * FROM object_versions WHERE bucket_id = ? AND key = ? AND version_id IS NULL';
const ORD_OF = `SELECT ${CURRENT_ORD} AS ord FROM objects
    WHERE bucket_id = @bucketId AND key = @key AND version_id IS NOT DISTINCT FROM @versionId
  UNION ALL SELECT ord FROM object_versions
    WHERE bucket_id = @bucketId AND key = @key AND version_id IS NOT DISTINCT FROM @versionId LIMIT 1`;
// Both arms are walked in (key, ord) order and bounded, so a page reads about `limit` rows of each.
const LIST = `SELECT * FROM (
    SELECT key, ${CURRENT_ORD} AS ord, version_id, 0 AS is_delete_marker, 1 AS is_latest, size, etag, last_modified
      FROM objects WHERE bucket_id = @bucketId AND key >= @prefix AND key >= @key AND (key > @key OR @ord < ${CURRENT_ORD})
      ORDER BY key LIMIT @limit) AS cur
  UNION ALL SELECT * FROM (
    SELECT v.key, v.ord, v.version_id, v.is_delete_marker,
        CASE WHEN NOT EXISTS (SELECT 1 FROM objects o WHERE o.bucket_id = v.bucket_id AND o.key = v.key)
          AND v.ord = (SELECT min(ord) FROM object_versions m WHERE m.bucket_id = v.bucket_id AND m.key = v.key) THEN 1 ELSE 0 END AS is_latest,
        v.size, v.etag, v.last_modified
      FROM object_versions v WHERE v.bucket_id = @bucketId AND v.key >= @prefix AND (v.key, v.ord) > (@key, @ord)
      ORDER BY v.key, v.ord LIMIT @limit) AS noncur
  ORDER BY key, ord LIMIT @limit`;
const COUNT_KEY = 'SELECT count(*) AS n FROM object_versions WHERE bucket_id = ? AND key = ?';
const HAS_ANY = 'SELECT CASE WHEN EXISTS (SELECT 1 FROM object_versions WHERE bucket_id = ?) THEN 1 ELSE 0 END AS has';
const SET_TAGGING = `UPDATE object_versions SET tagging = ?
  WHERE bucket_id = ? AND key = ? AND version_id IS NOT DISTINCT FROM ? AND is_delete_marker = 0`;

const SET_ACL = `UPDATE object_versions SET acl = ?
  WHERE bucket_id = ? AND key = ? AND version_id IS NOT DISTINCT FROM ? AND is_delete_marker = 0`;

type NewestRow = { ord: number; is_delete_marker: number; version_id: string | null; last_modified: number };

export class ObjectVersionsRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Moves the key's current row here as its newest noncurrent version (the caller replaces or deletes it). */
  async moveCurrent(bucketId: string, key: string): Promise<void> {
    await this.db.run(MOVE, { bucketId, key });
  }

  /** Adds a delete marker as the key's newest version. */
  async addDeleteMarker(bucketId: string, key: string, versionId: string | null, now: number): Promise<void> {
    await this.db.run(MARKER, { bucketId, key, versionId, now: Math.floor(now / 1000) * 1000 });
  }

  /**
   * Removes the key's noncurrent "null" version or null delete marker (a Suspended bucket's write
   * replaces it); returns its rows so the caller can release their blobs. Call inside a transaction.
   */
  async dropNull(bucketId: string, key: string): Promise<VersionRow[]> {
    const rows = await this.db.all<VersionRow>(NULL_ROWS, [bucketId, key]);
    for (const row of rows) await this.db.run(DELETE_ROW, [bucketId, key, row.ord]);
    return rows;
  }

  /** A noncurrent version or delete marker by id (null: the "null" one), with its inline bytes. */
  byId(bucketId: string, key: string, versionId: string | null): Promise<(VersionRow & { inline_data: Buffer | null }) | undefined> {
    return this.db.get<VersionRow & { inline_data: Buffer | null }>(BY_ID, [bucketId, key, versionId]);
  }

  /** Sets a noncurrent version's tags column (not a delete marker's); false when there is no such version. */
  async setTagging(bucketId: string, key: string, versionId: string | null, tagging: string | null): Promise<boolean> {
    return (await this.db.run(SET_TAGGING, [tagging, bucketId, key, versionId])).changes > 0;
  }

  async setAcl(bucketId: string, key: string, versionId: string | null, acl: string | null): Promise<boolean> {
    return (await this.db.run(SET_ACL, [acl, bucketId, key, versionId])).changes > 0;
  }

  async removeRow(bucketId: string, key: string, ord: number): Promise<void> {
    await this.db.run(DELETE_ROW, [bucketId, key, ord]);
  }

  /**
   * For a key with no current row: the newest noncurrent version becomes current again, unless it is
   * a delete marker (which stays here as the latest). Call inside a transaction.
   */
  async promoteNewest(bucketId: string, key: string): Promise<void> {
    const newest = await this.db.get<NewestRow>(NEWEST, [bucketId, key]);
    if (!newest || newest.is_delete_marker === 1) return;
    await this.db.run(PROMOTE, { bucketId, key, ord: newest.ord });
    await this.db.run(DELETE_ROW, [bucketId, key, newest.ord]);
  }

  /** The key's latest delete marker, when its newest version is one (call only for a key with no current row). */
  async latestDeleteMarker(bucketId: string, key: string): Promise<{ versionId: string | null; lastModified: number } | undefined> {
    const newest = await this.db.get<NewestRow>(NEWEST, [bucketId, key]);
    return newest && newest.is_delete_marker === 1 ? { versionId: newest.version_id, lastModified: newest.last_modified } : undefined;
  }

  /** The ord of the key's newest row here (the latest version when the key has no current row). */
  async newestOrd(bucketId: string, key: string): Promise<number | undefined> {
    return (await this.db.get<NewestRow>(NEWEST, [bucketId, key]))?.ord;
  }

  /** How many noncurrent versions and delete markers the key has. */
  async count(bucketId: string, key: string): Promise<number> {
    return (await this.db.get<{ n: number }>(COUNT_KEY, [bucketId, key]))?.n ?? 0;
  }

  /** Whether the bucket holds any noncurrent version or delete marker. */
  async hasAny(bucketId: string): Promise<boolean> {
    return (await this.db.get<{ has: number }>(HAS_ANY, [bucketId]))?.has === 1;
  }

  /**
   * One page of ListObjectVersions: every version and delete marker under `prefix`, key ascending and
   * newest first within a key, after the markers; keys rolled up into common prefixes at the first
   * `delimiter` past the prefix (a common prefix counts once, whatever its versions).
   */
  async list(bucketId: string, q: VersionListQuery): Promise<VersionListPage> {
    const page: VersionListPage = { entries: [], commonPrefixes: [], isTruncated: false };
    const bound = markerPrefixBound(q.keyMarker, q.prefix, q.delimiter);
    let start: Cursor;
    if (bound !== undefined) start = { key: bound, ord: -Infinity };
    else if (q.keyMarker === '') start = { key: '', ord: 0 };
    else if (q.versionIdMarker === undefined) start = { key: q.keyMarker, ord: 0 };
    else {
      // A version gone since the previous page: resume after every version of its key.
      const at = await this.db.get<{ ord: number }>(ORD_OF, { bucketId, key: q.keyMarker, versionId: q.versionIdMarker });
      start = { key: q.keyMarker, ord: at ? at.ord : 0 };
    }
    page.isTruncated = await walkRolledUp<ListRow, Cursor>({
      prefix: q.prefix,
      delimiter: q.delimiter,
      max: q.maxKeys,
      start,
      fetch: (c, limit) =>
        this.db.all<ListRow>(LIST, { bucketId, prefix: q.prefix, key: c.key, ord: c.ord === -Infinity ? CURRENT_ORD - 1 : c.ord, limit }),
      afterRow: (row) => ({ key: row.key, ord: row.ord }),
      afterPrefix: (upper) => ({ key: upper, ord: -Infinity }),
      onRow: (row) => {
        page.entries.push({
          key: row.key,
          versionId: row.version_id,
          deleteMarker: row.is_delete_marker === 1,
          isLatest: row.is_latest === 1,
          size: row.size,
          etag: row.etag,
          lastModified: row.last_modified,
        });
        page.nextKeyMarker = row.key;
        page.nextVersionIdMarker = row.version_id;
      },
      onPrefix: (cp) => {
        page.commonPrefixes.push(cp);
        page.nextKeyMarker = cp;
        page.nextVersionIdMarker = undefined;
      },
    });
    return page;
  }
}
