// Multipart uploads, their parts, the blob trash and recently completed uploads (db/store). Completing is one transaction: the object row appears, the listed parts become its
// manifest, the upload and its other parts go (their blobs into the trash, by trigger).
import { randomInt } from 'node:crypto';
import type { SqlExecutor } from '../store/types.js';
import { isForeignKeyViolation } from './errors.js';
import { ObjectsRepo, taggingColumn, type ObjectAcl, type ObjectRecord, type ObjectTag } from './objects.js';
import { markerPrefixBound, walkRolledUp } from './roll-up.js';
import { NotificationOutboxRepo, type OutboxEvent } from './notifications.js';

export type MultipartChecksumType = 'COMPOSITE' | 'FULL_OBJECT';

export interface MultipartUpload {
  uploadId: string;
  bucketId: string;
  key: string;
  ownerId: string;
  /** Unix milliseconds. */
  initiated: number;
  checksumAlgorithm: string | null;
  checksumType: MultipartChecksumType | null;
  contentType: string | null;
  contentEncoding: string | null;
  contentDisposition: string | null;
  contentLanguage: string | null;
  cacheControl: string | null;
  expires: string | null;
  userMetadata: Record<string, string>;
  /** x-amz-tagging of CreateMultipartUpload, for the completed object; absent for none. */
  tagging?: ObjectTag[];
  /** x-amz-acl public-read of CreateMultipartUpload, for the completed object. */
  acl?: ObjectAcl;
}

export interface UploadPart {
  uploadId: string;
  partNumber: number;
  blobId: string;
  size: number;
  /** Quoted MD5. */
  etag: string;
  /** CRC32C of the blob as stored; null for parts recorded before it was. */
  crc32c: number | null;
  checksumAlgorithm: string | null;
  checksumValue: string | null;
  lastModified: number;
}

/** What a finished CompleteMultipartUpload answered; kept a while so a retry gets the same answer. */
export interface CompletedUpload {
  uploadId: string;
  bucketId: string;
  key: string;
  etag: string;
  checksumAlgorithm: string | null;
  checksumValue: string | null;
  checksumType: string | null;
  completedAt: number;
  /** x-amz-version-id of the answer (WriteResult.versionId); set by complete(). */
  versionId?: string;
}

export interface CompletionPlan {
  record: ObjectRecord;
  /** Part numbers whose blobs the object now owns; every other part of the upload is thrown away. */
  claimed: number[];
  completed: CompletedUpload;
}

export interface UploadListQuery {
  prefix: string;
  delimiter: string;
  keyMarker: string;
  uploadIdMarker: string;
  maxUploads: number;
}

export interface UploadListPage {
  uploads: MultipartUpload[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker?: string;
  nextUploadIdMarker?: string;
}

interface UploadRow {
  upload_id: string;
  bucket_id: string;
  key: string;
  owner_id: string;
  initiated: number;
  checksum_algorithm: string | null;
  checksum_type: MultipartChecksumType | null;
  content_type: string | null;
  content_encoding: string | null;
  content_disposition: string | null;
  content_language: string | null;
  cache_control: string | null;
  expires: string | null;
  user_metadata: string;
  tagging: string | null;
  acl: string | null;
}

interface PartRow {
  upload_id: string;
  part_number: number;
  blob_id: string;
  size: number;
  etag: string;
  crc32c: number | null;
  checksum_algorithm: string | null;
  checksum_value: string | null;
  last_modified: number;
}

interface CompletedRow {
  upload_id: string;
  bucket_id: string;
  key: string;
  etag: string;
  checksum_algorithm: string | null;
  checksum_value: string | null;
  checksum_type: string | null;
  completed_at: number;
  version_id: string | null;
}

const UPLOAD_COLUMNS = `upload_id, bucket_id, key, owner_id, initiated, checksum_algorithm, checksum_type, content_type,
  content_encoding, content_disposition, content_language, cache_control, expires, user_metadata, tagging, acl`;
const PART_COLUMNS = 'upload_id, part_number, blob_id, size, etag, crc32c, checksum_algorithm, checksum_value, last_modified';
/** Above every upload id (they are ASCII): a key marker without an upload id marker skips the whole key. */
const AFTER_ALL_UPLOADS = '\u{10FFFF}';

function toUpload(r: UploadRow): MultipartUpload {
  return {
    uploadId: r.upload_id,
    bucketId: r.bucket_id,
    key: r.key,
    ownerId: r.owner_id,
    initiated: r.initiated,
    checksumAlgorithm: r.checksum_algorithm,
    checksumType: r.checksum_type,
    contentType: r.content_type,
    contentEncoding: r.content_encoding,
    contentDisposition: r.content_disposition,
    contentLanguage: r.content_language,
    cacheControl: r.cache_control,
    expires: r.expires,
    userMetadata: JSON.parse(r.user_metadata) as Record<string, string>,
    ...(r.tagging === null ? {} : { tagging: JSON.parse(r.tagging) as ObjectTag[] }),
    ...(r.acl === 'public-read' ? { acl: 'public-read' as const } : {}),
  };
}

function toPart(r: PartRow): UploadPart {
  return {
    uploadId: r.upload_id,
    partNumber: r.part_number,
    blobId: r.blob_id,
    size: r.size,
    etag: r.etag,
    crc32c: r.crc32c,
    checksumAlgorithm: r.checksum_algorithm,
    checksumValue: r.checksum_value,
    lastModified: r.last_modified,
  };
}

function toCompleted(r: CompletedRow): CompletedUpload {
  return {
    uploadId: r.upload_id,
    bucketId: r.bucket_id,
    key: r.key,
    etag: r.etag,
    checksumAlgorithm: r.checksum_algorithm,
    checksumValue: r.checksum_value,
    checksumType: r.checksum_type,
    completedAt: r.completed_at,
    ...(r.version_id === null ? {} : { versionId: r.version_id }),
  };
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * A new upload id: the initiation time as 12 hex digits (sorts by age), then 32 random letters and
 * digits (190 bits). URL-safe without escaping, never '+', and never starting with '-' (a CLI would
 * take it for an option).
 */
export function newUploadId(initiated: number): string {
  let id = Math.max(0, Math.floor(initiated)).toString(16).padStart(12, '0');
  for (let i = 0; i < 32; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

const INSERT_UPLOAD = `INSERT INTO multipart_uploads (${UPLOAD_COLUMNS}) VALUES (@upload_id, @bucket_id,
  @key, @owner_id, @initiated, @checksum_algorithm, @checksum_type, @content_type, @content_encoding,
  @content_disposition, @content_language, @cache_control, @expires, @user_metadata, @tagging, @acl)`;
const GET_UPLOAD = `SELECT ${UPLOAD_COLUMNS} FROM multipart_uploads WHERE upload_id = ?`;
const DELETE_UPLOAD = 'DELETE FROM multipart_uploads WHERE upload_id = ?';
const DELETE_PART = 'DELETE FROM multipart_parts WHERE upload_id = ? AND part_number = ?';
const INSERT_PART = `INSERT INTO multipart_parts (${PART_COLUMNS}) VALUES (@upload_id, @part_number,
  @blob_id, @size, @etag, @crc32c, @checksum_algorithm, @checksum_value, @last_modified)`;
const LIST_PARTS = `SELECT ${PART_COLUMNS} FROM multipart_parts WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?`;
const ALL_PARTS = `SELECT ${PART_COLUMNS} FROM multipart_parts WHERE upload_id = ? ORDER BY part_number`;
const CLAIM_PART = 'UPDATE multipart_parts SET claimed = 1 WHERE upload_id = ? AND part_number = ?';
// key >= prefix keeps the walk inside the prefix range; the row value is the resume cursor.
const LIST_UPLOADS = `SELECT ${UPLOAD_COLUMNS} FROM multipart_uploads
  WHERE bucket_id = @bucketId AND key >= @prefix AND (key, upload_id) > (@key, @uploadId)
  ORDER BY key, upload_id LIMIT @limit`;
const EXPIRED = 'SELECT upload_id FROM multipart_uploads WHERE initiated < ? ORDER BY initiated LIMIT ?';
const COUNT = 'SELECT count(*) AS n FROM multipart_uploads WHERE bucket_id = ?';
const TRASH_BATCH = 'SELECT blob_id FROM blob_trash LIMIT ?';
const UNTRASH = 'DELETE FROM blob_trash WHERE blob_id = ?';
const INSERT_COMPLETED = `INSERT INTO multipart_completed (upload_id, bucket_id, key, etag,
    checksum_algorithm, checksum_value, checksum_type, completed_at, version_id) VALUES (@upload_id, @bucket_id, @key, @etag,
    @checksum_algorithm, @checksum_value, @checksum_type, @completed_at, @version_id)
  ON CONFLICT (upload_id) DO UPDATE SET bucket_id = excluded.bucket_id, key = excluded.key, etag = excluded.etag,
    checksum_algorithm = excluded.checksum_algorithm, checksum_value = excluded.checksum_value,
    checksum_type = excluded.checksum_type, completed_at = excluded.completed_at, version_id = excluded.version_id`;
const GET_COMPLETED = 'SELECT * FROM multipart_completed WHERE upload_id = ?';
const PRUNE_COMPLETED = 'DELETE FROM multipart_completed WHERE completed_at < ?';

export class MultipartRepo {
  constructor(private readonly db: SqlExecutor) {}

  async create(u: MultipartUpload): Promise<void> {
    await this.db.run(INSERT_UPLOAD, {
      upload_id: u.uploadId,
      bucket_id: u.bucketId,
      key: u.key,
      owner_id: u.ownerId,
      initiated: u.initiated,
      checksum_algorithm: u.checksumAlgorithm,
      checksum_type: u.checksumType,
      content_type: u.contentType,
      content_encoding: u.contentEncoding,
      content_disposition: u.contentDisposition,
      content_language: u.contentLanguage,
      cache_control: u.cacheControl,
      expires: u.expires,
      user_metadata: JSON.stringify(u.userMetadata),
      tagging: taggingColumn(u.tagging),
      acl: u.acl ?? null,
    });
  }

  async get(uploadId: string): Promise<MultipartUpload | undefined> {
    const r = await this.db.get<UploadRow>(GET_UPLOAD, [uploadId]);
    return r && toUpload(r);
  }

  /**
   * Records a part, replacing one with the same number (whose blob goes to the trash). 'missing' when
   * the upload no longer exists: the caller still owns the part's blob.
   */
  async putPart(p: UploadPart): Promise<'added' | 'replaced' | 'missing'> {
    try {
      return await this.db.transaction(async (tx) => {
        const replaced = (await tx.run(DELETE_PART, [p.uploadId, p.partNumber])).changes > 0;
        await tx.run(INSERT_PART, {
          upload_id: p.uploadId,
          part_number: p.partNumber,
          blob_id: p.blobId,
          size: p.size,
          etag: p.etag,
          crc32c: p.crc32c,
          checksum_algorithm: p.checksumAlgorithm,
          checksum_value: p.checksumValue,
          last_modified: p.lastModified,
        });
        return replaced ? 'replaced' : 'added';
      });
    } catch (err) {
      if (isForeignKeyViolation(err)) return 'missing';
      throw err;
    }
  }

  /** Up to `limit` parts numbered above `afterPartNumber`, in order. */
  async listParts(uploadId: string, afterPartNumber: number, limit: number): Promise<UploadPart[]> {
    return (await this.db.all<PartRow>(LIST_PARTS, [uploadId, afterPartNumber, limit])).map(toPart);
  }

  async parts(uploadId: string): Promise<UploadPart[]> {
    return (await this.db.all<PartRow>(ALL_PARTS, [uploadId])).map(toPart);
  }

  /** Deletes the upload; its parts' blobs go to the trash. False when there was no such upload. */
  async abort(uploadId: string): Promise<boolean> {
    return (await this.db.run(DELETE_UPLOAD, [uploadId])).changes > 0;
  }

  /**
   * Completes the upload in one transaction: `plan` sees the upload and all its parts and decides the
   * object record (it may throw to refuse), `guard` sees the key's current version (conditional
   * writes). Returns undefined when the upload does not exist; otherwise the plan and the blob ids of
   * the replaced version that nothing references any more. `events`: the outbox rows reporting the new
   * object, written in the same transaction.
   */
  complete(
    uploadId: string,
    plan: (upload: MultipartUpload, parts: UploadPart[]) => CompletionPlan,
    guard?: (current: ObjectRecord | undefined) => void,
    events?: (record: ObjectRecord, versionId: string | undefined) => Pick<OutboxEvent, 'id' | 'targetId' | 'body' | 'createdAt'>[],
  ): Promise<{ plan: CompletionPlan; replaced: string[] } | undefined> {
    return this.db.transaction(async (tx) => {
      const uploads = new MultipartRepo(tx);
      const upload = await uploads.get(uploadId);
      if (!upload) return undefined;
      const decided = plan(upload, await uploads.parts(uploadId));
      const written = await new ObjectsRepo(tx).put(decided.record, guard);
      if (written.versionId !== undefined) decided.completed.versionId = written.versionId;
      // The object's events are queued with it (bucket notifications).
      if (events) await new NotificationOutboxRepo(tx).insert(events(decided.record, written.versionId));
      for (const n of decided.claimed) await tx.run(CLAIM_PART, [uploadId, n]);
      await tx.run(DELETE_UPLOAD, [uploadId]);
      const c = decided.completed;
      await tx.run(INSERT_COMPLETED, {
        upload_id: c.uploadId,
        bucket_id: c.bucketId,
        key: c.key,
        etag: c.etag,
        checksum_algorithm: c.checksumAlgorithm,
        checksum_value: c.checksumValue,
        checksum_type: c.checksumType,
        completed_at: c.completedAt,
        version_id: c.versionId ?? null,
      });
      return { plan: decided, replaced: written.replaced };
    });
  }

  async getCompleted(uploadId: string): Promise<CompletedUpload | undefined> {
    const r = await this.db.get<CompletedRow>(GET_COMPLETED, [uploadId]);
    return r && toCompleted(r);
  }

  /** Forgets completions older than `before`; returns how many. */
  async pruneCompleted(before: number): Promise<number> {
    return (await this.db.run(PRUNE_COMPLETED, [before])).changes;
  }

  /** Ids of up to `limit` uploads initiated before `before`, oldest first. */
  async expired(before: number, limit: number): Promise<string[]> {
    return (await this.db.all<{ upload_id: string }>(EXPIRED, [before, limit])).map((r) => r.upload_id);
  }

  async count(bucketId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(COUNT, [bucketId]))?.n ?? 0;
  }

  /** Up to `limit` blob ids waiting for removal. */
  async trash(limit: number): Promise<string[]> {
    return (await this.db.all<{ blob_id: string }>(TRASH_BATCH, [limit])).map((r) => r.blob_id);
  }

  /** Call once the blob is gone from storage. */
  async untrash(blobId: string): Promise<void> {
    await this.db.run(UNTRASH, [blobId]);
  }

  /**
   * One page of ListMultipartUploads: uploads under `prefix` ordered by key then age, after the
   * markers, with keys rolled up into common prefixes at the first `delimiter` past the prefix.
   */
  async listUploads(bucketId: string, q: UploadListQuery): Promise<UploadListPage> {
    const page: UploadListPage = { uploads: [], commonPrefixes: [], isTruncated: false };
    const bound = markerPrefixBound(q.keyMarker, q.prefix, q.delimiter);
    const uploadId = q.keyMarker && q.uploadIdMarker ? q.uploadIdMarker : q.keyMarker ? AFTER_ALL_UPLOADS : '';
    page.isTruncated = await walkRolledUp<UploadRow, { key: string; uploadId: string }>({
      prefix: q.prefix,
      delimiter: q.delimiter,
      max: q.maxUploads,
      start: bound === undefined ? { key: q.keyMarker, uploadId } : { key: bound, uploadId: '' },
      fetch: (c, limit) => this.db.all<UploadRow>(LIST_UPLOADS, { bucketId, prefix: q.prefix, key: c.key, uploadId: c.uploadId, limit }),
      afterRow: (row) => ({ key: row.key, uploadId: row.upload_id }),
      afterPrefix: (upper) => ({ key: upper, uploadId: '' }),
      onRow: (row) => {
        page.uploads.push(toUpload(row));
        page.nextKeyMarker = row.key;
        page.nextUploadIdMarker = row.upload_id;
      },
      onPrefix: (cp) => {
        page.commonPrefixes.push(cp);
        page.nextKeyMarker = cp;
        page.nextUploadIdMarker = undefined;
      },
    });
    return page;
  }
}
