// Assets: uploaded files of the management API. blob_id (the bytes in the storage backend) stays inside.
import type { SqlExecutor } from '../store/types.js';

export type AssetVisibility = 'public' | 'private';
export type AssetKind = 'file' | 'artifact';

export interface AssetRecord {
  id: string;
  userId: string;
  projectId: string | null;
  deploymentId: string | null;
  blobId: string;
  /** CRC32C of the blob as stored, checked by whole reads; null for assets stored before it was recorded. */
  crc32c: number | null;
  fileName: string;
  contentType: string;
  size: number;
  sha256: string;
  /** Quoted, as in an HTTP ETag header. */
  etag: string;
  visibility: AssetVisibility;
  kind: AssetKind;
  /** Judged active content on upload (then private, and only ever an attachment on the CDN). */
  activeContent: boolean;
  /** Unix milliseconds. */
  createdAt: number;
  updatedAt: number;
}

export interface AssetQuery {
  userId: string;
  /** Substring of the file name, case-insensitive for ASCII. */
  search?: string;
  kind?: AssetKind;
  /** Only assets linked to this project. */
  projectId?: string;
  limit: number;
  offset: number;
  /** Newest first when absent. */
  sort?: AssetSort;
}

export type AssetSortField = 'createdAt' | 'name' | 'size';
export interface AssetSort {
  by: AssetSortField;
  descending: boolean;
}

/** Each sort's ORDER BY (a whitelist: no text of the caller's reaches the SQL); id breaks ties. */
const ORDER: Record<AssetSortField, string> = { createdAt: 'created_at', name: 'lower(file_name)', size: 'size' };

export interface AssetStats {
  totalFiles: number;
  storageBytes: number;
}

interface AssetRow {
  id: string;
  user_id: string;
  project_id: string | null;
  deployment_id: string | null;
  blob_id: string;
  crc32c: number | null;
  file_name: string;
  content_type: string;
  size: number;
  sha256: string;
  etag: string;
  visibility: AssetVisibility;
  kind: AssetKind;
  active_content: 0 | 1;
  created_at: number;
  updated_at: number;
}

function toAsset(r: AssetRow): AssetRecord {
  return {
    id: r.id,
    userId: r.user_id,
    projectId: r.project_id,
    deploymentId: r.deployment_id,
    blobId: r.blob_id,
    crc32c: r.crc32c,
    fileName: r.file_name,
    contentType: r.content_type,
    size: r.size,
    sha256: r.sha256,
    etag: r.etag,
    visibility: r.visibility,
    kind: r.kind,
    activeContent: r.active_content === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const COLUMNS =
  'id, user_id, project_id, deployment_id, blob_id, crc32c, file_name, content_type, size, sha256, etag, visibility, kind, active_content, created_at, updated_at';

/** `%` and `_` are LIKE wildcards: a search for them must match them literally. */
function likePattern(search: string): string {
  return `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

type QueryParams = {
  userId: string;
  pattern: string | null;
  kind: string | null;
  projectId: string | null;
};

/** A user's assets, or one project's of them. */
const OF_USER = 'user_id = @userId AND (CAST(@projectId AS TEXT) IS NULL OR project_id = @projectId)';
// lower() on both sides: SQLite's LIKE ignores ASCII case and PostgreSQL's does not.
const WHERE = `${OF_USER} AND (CAST(@pattern AS TEXT) IS NULL OR lower(file_name) LIKE lower(@pattern) ESCAPE '\\')
  AND (CAST(@kind AS TEXT) IS NULL OR kind = @kind)`;

const INSERT = `INSERT INTO assets (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const GET = `SELECT ${COLUMNS} FROM assets WHERE id = ?`;
const DELETE = 'DELETE FROM assets WHERE id = ?';
const pageSql = (sort: AssetSort): string =>
  `SELECT ${COLUMNS} FROM assets WHERE ${WHERE} ORDER BY ${ORDER[sort.by]} ${sort.descending ? 'DESC' : 'ASC'}, id LIMIT @limit OFFSET @offset`;
const NEWEST: AssetSort = { by: 'createdAt', descending: true };
const COUNT = `SELECT count(*) AS n FROM assets WHERE ${WHERE}`;
const STATS = `SELECT count(*) AS n, sum(size) AS bytes FROM assets WHERE ${OF_USER}`;
const CREATED_SINCE = `SELECT count(*) AS n FROM assets WHERE ${OF_USER} AND created_at >= @since`;
const UNLINK_PROJECT = 'UPDATE assets SET project_id = NULL, deployment_id = NULL WHERE project_id = ?';

export class AssetsRepo {
  constructor(private readonly db: SqlExecutor) {}

  async insert(a: AssetRecord): Promise<void> {
    await this.db.run(INSERT, [
      a.id, a.userId, a.projectId, a.deploymentId, a.blobId, a.crc32c, a.fileName, a.contentType, a.size, a.sha256, a.etag,
      a.visibility, a.kind, a.activeContent ? 1 : 0, a.createdAt, a.updatedAt,
    ]);
  }

  async get(id: string): Promise<AssetRecord | undefined> {
    const r = await this.db.get<AssetRow>(GET, [id]);
    return r && toAsset(r);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run(DELETE, [id])).changes > 0;
  }

  /** One page of the user's assets, newest first unless sorted otherwise, and how many match in all. */
  async page(q: AssetQuery): Promise<{ assets: AssetRecord[]; total: number }> {
    const params: QueryParams = { userId: q.userId, pattern: q.search ? likePattern(q.search) : null, kind: q.kind ?? null, projectId: q.projectId ?? null };
    const total = (await this.db.get<{ n: number }>(COUNT, params))?.n ?? 0;
    const assets = (await this.db.all<AssetRow>(pageSql(q.sort ?? NEWEST), { ...params, limit: q.limit, offset: q.offset })).map(toAsset);
    return { assets, total };
  }

  /** The user's assets, or those of one of the user's projects. */
  async stats(userId: string, projectId?: string): Promise<AssetStats> {
    const r = await this.db.get<{ n: number; bytes: number | null }>(STATS, { userId, projectId: projectId ?? null });
    return { totalFiles: r?.n ?? 0, storageBytes: r?.bytes ?? 0 };
  }

  async countCreatedSince(userId: string, sinceMs: number, projectId?: string): Promise<number> {
    return (await this.db.get<{ n: number }>(CREATED_SINCE, { userId, projectId: projectId ?? null, since: sinceMs }))?.n ?? 0;
  }

  /** A deleted project's assets stay, unlinked from it and its deployments. */
  async unlinkProject(projectId: string): Promise<number> {
    return (await this.db.run(UNLINK_PROJECT, [projectId])).changes;
  }
}
