// Buckets. Deleting is guarded in one statement so an object committed meanwhile is never cascaded away.
import type { Statement } from '../sqlite/index.js';
import { newId } from '../../auth/ids.js';
import type { Db } from '../open.js';
import { ConstraintError, isForeignKeyViolation, isUniqueViolation } from './errors.js';

export interface Bucket {
  id: string;
  name: string;
  ownerId: string;
  region: string;
  /** Unix milliseconds. */
  createdAt: number;
  /** The CDN serves its objects to anyone (migration 007). */
  public: boolean;
  /** Versioning (migration 016): null (or absent) until it is first enabled (or suspended). */
  versioning?: 'Enabled' | 'Suspended' | null;
}

export interface NewBucket {
  name: string;
  ownerId: string;
  region: string;
}

export type BucketDeleteResult = 'deleted' | 'not_empty' | 'not_found';

interface BucketRow {
  id: string;
  name: string;
  owner_id: string;
  region: string;
  created_at: number;
  public: number;
  versioning: 'Enabled' | 'Suspended' | null;
}

function toBucket(r: BucketRow): Bucket {
  return { id: r.id, name: r.name, ownerId: r.owner_id, region: r.region, createdAt: r.created_at, public: r.public === 1, versioning: r.versioning };
}

const INSERT_COLUMNS = 'id, name, owner_id, region, created_at';
const COLUMNS = `${INSERT_COLUMNS}, public, versioning`;

export class BucketsRepo {
  private readonly insertStmt: Statement<[string, string, string, string, number]>;
  private readonly byNameStmt: Statement<[string], BucketRow>;
  private readonly byIdStmt: Statement<[string], BucketRow>;
  private readonly listAllStmt: Statement<[], BucketRow>;
  private readonly listByOwnerStmt: Statement<[string], BucketRow>;
  private readonly deleteIfEmptyStmt: Statement<{ id: string }>;
  private readonly countStmt: Statement<[string], { n: number }>;
  private readonly hasObjectsStmt: Statement<[string], { has: number }>;
  private readonly setPublicStmt: Statement<[number, string]>;
  private readonly setVersioningStmt: Statement<[string, string]>;

  constructor(db: Db, private readonly clock: () => number = Date.now) {
    this.insertStmt = db.prepare(`INSERT INTO buckets (${INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?)`);
    this.byNameStmt = db.prepare(`SELECT ${COLUMNS} FROM buckets WHERE name = ?`);
    this.byIdStmt = db.prepare(`SELECT ${COLUMNS} FROM buckets WHERE id = ?`);
    this.listAllStmt = db.prepare(`SELECT ${COLUMNS} FROM buckets ORDER BY name`);
    this.listByOwnerStmt = db.prepare(`SELECT ${COLUMNS} FROM buckets WHERE owner_id = ? ORDER BY name`);
    this.deleteIfEmptyStmt = db.prepare(
      `DELETE FROM buckets WHERE id = @id AND NOT EXISTS (SELECT 1 FROM objects WHERE bucket_id = @id)
        AND NOT EXISTS (SELECT 1 FROM object_versions WHERE bucket_id = @id)`,
    );
    this.countStmt = db.prepare('SELECT count(*) AS n FROM objects WHERE bucket_id = ?');
    this.hasObjectsStmt = db.prepare('SELECT EXISTS (SELECT 1 FROM objects WHERE bucket_id = ?) AS has');
    this.setPublicStmt = db.prepare('UPDATE buckets SET public = ? WHERE id = ?');
    this.setVersioningStmt = db.prepare('UPDATE buckets SET versioning = ? WHERE id = ?');
  }

  /** Throws ConstraintError('duplicate') when the name is taken, ('in_use') when the owner does not exist. */
  insert(input: NewBucket): Bucket {
    const bucket: Bucket = { id: newId(), ...input, createdAt: this.clock(), public: false, versioning: null };
    try {
      this.insertStmt.run(bucket.id, bucket.name, bucket.ownerId, bucket.region, bucket.createdAt);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `bucket '${input.name}' already exists`);
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the bucket owner does not exist');
      throw err;
    }
    return bucket;
  }

  getByName(name: string): Bucket | undefined {
    const r = this.byNameStmt.get(name);
    return r && toBucket(r);
  }

  getById(id: string): Bucket | undefined {
    const r = this.byIdStmt.get(id);
    return r && toBucket(r);
  }

  /** All buckets, or those of one owner, by name. */
  list(ownerId?: string): Bucket[] {
    return (ownerId === undefined ? this.listAllStmt.all() : this.listByOwnerStmt.all(ownerId)).map(toBucket);
  }

  /** Deletes the bucket (and by cascade its keys) only if it holds no objects and no versions, atomically. */
  delete(id: string): BucketDeleteResult {
    if (this.deleteIfEmptyStmt.run({ id }).changes > 0) return 'deleted';
    return this.byIdStmt.get(id) ? 'not_empty' : 'not_found';
  }

  /** Makes the bucket's objects public on the CDN, or private again; false when the bucket is gone. */
  setPublic(id: string, isPublic: boolean): boolean {
    return this.setPublicStmt.run(isPublic ? 1 : 0, id).changes > 0;
  }

  /** Enables or suspends versioning; false when the bucket is gone. */
  setVersioning(id: string, status: 'Enabled' | 'Suspended'): boolean {
    return this.setVersioningStmt.run(status, id).changes > 0;
  }

  countObjects(bucketId: string): number {
    return this.countStmt.get(bucketId)?.n ?? 0;
  }

  hasObjects(bucketId: string): boolean {
    return Boolean(this.hasObjectsStmt.get(bucketId)?.has);
  }
}
