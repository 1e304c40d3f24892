// Assets: uploaded files of the management API. blob_id (the bytes in the storage backend) stays inside.
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';

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
}

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

interface QueryParams {
  userId: string;
  pattern: string | null;
  kind: string | null;
  projectId: string | null;
}

/** A user's assets, or one project's of them. */
const OF_USER = 'user_id = @userId AND (@projectId IS NULL OR project_id = @projectId)';
const WHERE = `${OF_USER} AND (@pattern IS NULL OR file_name LIKE @pattern ESCAPE '\\') AND (@kind IS NULL OR kind = @kind)`;

export class AssetsRepo {
  private readonly insertStmt: Statement<unknown[]>;
  private readonly getStmt: Statement<[string], AssetRow>;
  private readonly deleteStmt: Statement<[string]>;
  private readonly pageStmt: Statement<QueryParams & { limit: number; offset: number }, AssetRow>;
  private readonly countStmt: Statement<QueryParams, { n: number }>;
  private readonly statsStmt: Statement<{ userId: string; projectId: string | null }, { n: number; bytes: number | null }>;
  private readonly createdSinceStmt: Statement<{ userId: string; projectId: string | null; since: number }, { n: number }>;
  private readonly unlinkProjectStmt: Statement<[string]>;

  constructor(db: Db) {
    this.insertStmt = db.prepare(`INSERT INTO assets (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.getStmt = db.prepare(`SELECT ${COLUMNS} FROM assets WHERE id = ?`);
    this.deleteStmt = db.prepare('DELETE FROM assets WHERE id = ?');
    this.pageStmt = db.prepare(`SELECT ${COLUMNS} FROM assets WHERE ${WHERE} ORDER BY created_at DESC, id LIMIT @limit OFFSET @offset`);
    this.countStmt = db.prepare(`SELECT count(*) AS n FROM assets WHERE ${WHERE}`);
    this.statsStmt = db.prepare(`SELECT count(*) AS n, sum(size) AS bytes FROM assets WHERE ${OF_USER}`);
    this.createdSinceStmt = db.prepare(`SELECT count(*) AS n FROM assets WHERE ${OF_USER} AND created_at >= @since`);
    this.unlinkProjectStmt = db.prepare('UPDATE assets SET project_id = NULL, deployment_id = NULL WHERE project_id = ?');
  }

  insert(a: AssetRecord): void {
    this.insertStmt.run(
      a.id, a.userId, a.projectId, a.deploymentId, a.blobId, a.crc32c, a.fileName, a.contentType, a.size, a.sha256, a.etag,
      a.visibility, a.kind, a.activeContent ? 1 : 0, a.createdAt, a.updatedAt,
    );
  }

  get(id: string): AssetRecord | undefined {
    const r = this.getStmt.get(id);
    return r && toAsset(r);
  }

  delete(id: string): boolean {
    return this.deleteStmt.run(id).changes > 0;
  }

  /** One page of the user's assets, newest first, and how many match in all. */
  page(q: AssetQuery): { assets: AssetRecord[]; total: number } {
    const params: QueryParams = { userId: q.userId, pattern: q.search ? likePattern(q.search) : null, kind: q.kind ?? null, projectId: q.projectId ?? null };
    const total = this.countStmt.get(params)?.n ?? 0;
    const assets = this.pageStmt.all({ ...params, limit: q.limit, offset: q.offset }).map(toAsset);
    return { assets, total };
  }

  /** The user's assets, or those of one of the user's projects. */
  stats(userId: string, projectId?: string): AssetStats {
    const r = this.statsStmt.get({ userId, projectId: projectId ?? null });
    return { totalFiles: r?.n ?? 0, storageBytes: r?.bytes ?? 0 };
  }

  countCreatedSince(userId: string, sinceMs: number, projectId?: string): number {
    return this.createdSinceStmt.get({ userId, projectId: projectId ?? null, since: sinceMs })?.n ?? 0;
  }

  /** A deleted project's assets stay, unlinked from it and its deployments. */
  unlinkProject(projectId: string): number {
    return this.unlinkProjectStmt.run(projectId).changes;
  }
}
