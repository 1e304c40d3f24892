// Buckets. Deleting is guarded in one statement so an object committed meanwhile is never cascaded away.
import type { SqlExecutor } from '../store/types.js';
import type { MetadataCache } from '../metadata-cache.js';
import { newId } from '../ids.js';
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

const INSERT = `INSERT INTO buckets (${INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?)`;
const BY_NAME = `SELECT ${COLUMNS} FROM buckets WHERE name = ?`;
const BY_ID = `SELECT ${COLUMNS} FROM buckets WHERE id = ?`;
const LIST_ALL = `SELECT ${COLUMNS} FROM buckets ORDER BY name`;
const LIST_BY_OWNER = `SELECT ${COLUMNS} FROM buckets WHERE owner_id = ? ORDER BY name`;
const DELETE_IF_EMPTY = `DELETE FROM buckets WHERE id = @id AND NOT EXISTS (SELECT 1 FROM objects WHERE bucket_id = @id)
  AND NOT EXISTS (SELECT 1 FROM object_versions WHERE bucket_id = @id)`;
const COUNT_OBJECTS = 'SELECT count(*) AS n FROM objects WHERE bucket_id = ?';
const HAS_OBJECTS = 'SELECT CASE WHEN EXISTS (SELECT 1 FROM objects WHERE bucket_id = ?) THEN 1 ELSE 0 END AS has';
const SET_PUBLIC = 'UPDATE buckets SET public = ? WHERE id = ?';
const SET_VERSIONING = 'UPDATE buckets SET versioning = ? WHERE id = ?';

export class BucketsRepo {
  /**
   * `cache`: the node's coherent cache (PostgreSQL, outside transactions), which getByName reads
   * through; `cachedReads` says so, for callers that would otherwise keep answers of their own.
   */
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
    private readonly cache?: MetadataCache,
  ) {}

  /** getByName is coherent across processes and nodes: a change made anywhere is read at once. */
  get cachedReads(): boolean {
    return this.cache !== undefined;
  }

  /** Throws ConstraintError('duplicate') when the name is taken, ('in_use') when the owner does not exist. */
  async insert(input: NewBucket): Promise<Bucket> {
    const bucket: Bucket = { id: newId(), ...input, createdAt: this.clock(), public: false, versioning: null };
    try {
      // Its own (nested) transaction: on PostgreSQL a failed statement would otherwise end an enclosing one.
      await this.db.transaction((tx) => tx.run(INSERT, [bucket.id, bucket.name, bucket.ownerId, bucket.region, bucket.createdAt]));
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `bucket '${input.name}' already exists`);
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the bucket owner does not exist');
      throw err;
    }
    return bucket;
  }

  getByName(name: string): Promise<Bucket | undefined> {
    if (this.cache) return this.cache.bucket(name, () => this.readByName(name));
    return this.readByName(name);
  }

  private async readByName(name: string): Promise<Bucket | undefined> {
    const r = await this.db.get<BucketRow>(BY_NAME, [name]);
    return r && toBucket(r);
  }

  async getById(id: string): Promise<Bucket | undefined> {
    const r = await this.db.get<BucketRow>(BY_ID, [id]);
    return r && toBucket(r);
  }

  /** All buckets, or those of one owner, by name. */
  async list(ownerId?: string): Promise<Bucket[]> {
    const rows = ownerId === undefined ? await this.db.all<BucketRow>(LIST_ALL) : await this.db.all<BucketRow>(LIST_BY_OWNER, [ownerId]);
    return rows.map(toBucket);
  }

  /** Deletes the bucket (and by cascade its keys) only if it holds no objects and no versions, atomically. */
  async delete(id: string): Promise<BucketDeleteResult> {
    if ((await this.db.run(DELETE_IF_EMPTY, { id })).changes > 0) return 'deleted';
    return (await this.db.get<BucketRow>(BY_ID, [id])) ? 'not_empty' : 'not_found';
  }

  /** Makes the bucket's objects public on the CDN, or private again; false when the bucket is gone. */
  async setPublic(id: string, isPublic: boolean): Promise<boolean> {
    return (await this.db.run(SET_PUBLIC, [isPublic ? 1 : 0, id])).changes > 0;
  }

  /** Enables or suspends versioning; false when the bucket is gone. */
  async setVersioning(id: string, status: 'Enabled' | 'Suspended'): Promise<boolean> {
    return (await this.db.run(SET_VERSIONING, [status, id])).changes > 0;
  }

  async countObjects(bucketId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(COUNT_OBJECTS, [bucketId]))?.n ?? 0;
  }

  async hasObjects(bucketId: string): Promise<boolean> {
    return (await this.db.get<{ has: number }>(HAS_OBJECTS, [bucketId]))?.has === 1;
  }
}
