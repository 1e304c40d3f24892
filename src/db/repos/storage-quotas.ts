// Storage quotas (migration 027): users.storage_quota and buckets.storage_quota (bytes; NULL: none), and
// the reservations uploads in progress hold against them (storage_reservations, bucket_id '' for an
// asset upload), counted while their holder is live in credit_holders (src/credits/reservation-holder.ts
// owns that rule; src/credits/quotas.ts the quota's).
import type { SqlExecutor } from '../store/types.js';

export interface QuotaLimits {
  /** The user's quota in bytes; null: none (or no such user). */
  user: number | null;
  /** The bucket's quota in bytes; null: none, no such bucket, or no bucket asked. */
  bucket: number | null;
}

export interface NewStorageReservation {
  id: string;
  userId: string;
  /** '' for an asset upload (no bucket). */
  bucketId: string;
  bytes: number;
  holder: string;
  createdAt: number;
}

export interface BucketStorage {
  bucketId: string;
  name: string;
  /** Bytes the bucket stores (objects, noncurrent versions, parts of uploads in progress). */
  bytes: number;
  quota: number | null;
}

const LIMITS = `SELECT (SELECT storage_quota FROM users WHERE id = ?) AS "userQuota",
  (SELECT storage_quota FROM buckets WHERE id = ?) AS "bucketQuota"`;
const USER_QUOTA = 'SELECT storage_quota AS quota FROM users WHERE id = ?';
const SET_USER = 'UPDATE users SET storage_quota = ? WHERE id = ?';
const SET_BUCKET = 'UPDATE buckets SET storage_quota = ? WHERE id = ?';
// The indexes on user_id and bucket_id find the few rows; each joins its holder by primary key.
const LIVE_USER = `SELECT COALESCE(SUM(r.bytes), 0) AS total FROM storage_reservations r JOIN credit_holders h ON h.holder = r.holder
  WHERE r.user_id = ? AND h.seen_at >= ? AND r.id <> ?`;
const LIVE_BUCKET = `SELECT COALESCE(SUM(r.bytes), 0) AS total FROM storage_reservations r JOIN credit_holders h ON h.holder = r.holder
  WHERE r.bucket_id = ? AND h.seen_at >= ? AND r.id <> ?`;
const INSERT = 'INSERT INTO storage_reservations (id, user_id, bucket_id, bytes, holder, created_at) VALUES (?, ?, ?, ?, ?, ?)';
const DELETE = 'DELETE FROM storage_reservations WHERE id = ?';
const BUCKETS_OF = `SELECT b.id AS "bucketId", b.name AS name, COALESCE(u.bytes, 0) AS bytes, b.storage_quota AS quota
  FROM buckets b LEFT JOIN bucket_usage u ON u.bucket_id = b.id WHERE b.owner_id = ? ORDER BY b.name`;

const quota = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export class StorageQuotasRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** The user's quota and the bucket's (`bucketId` '' or absent: no bucket), in one statement. */
  async limits(userId: string, bucketId = ''): Promise<QuotaLimits> {
    const row = await this.db.get<{ userQuota: unknown; bucketQuota: unknown }>(LIMITS, [userId, bucketId]);
    return { user: quota(row?.userQuota), bucket: quota(row?.bucketQuota) };
  }

  async userQuota(userId: string): Promise<number | null> {
    return quota((await this.db.get<{ quota: unknown }>(USER_QUOTA, [userId]))?.quota);
  }

  /** Sets (null: removes) the user's quota; false when no such user. */
  async setUserQuota(userId: string, bytes: number | null): Promise<boolean> {
    return (await this.db.run(SET_USER, [bytes, userId])).changes === 1;
  }

  /** Sets (null: removes) the bucket's quota; false when no such bucket. */
  async setBucketQuota(bucketId: string, bytes: number | null): Promise<boolean> {
    return (await this.db.run(SET_BUCKET, [bytes, bucketId])).changes === 1;
  }

  /** Bytes the user's reservations (into any bucket, and assets) of holders seen at or after `liveSince` hold, leaving out `exceptId`. */
  async liveUserSum(userId: string, liveSince: number, exceptId = ''): Promise<number> {
    return Number((await this.db.get<{ total: unknown }>(LIVE_USER, [userId, liveSince, exceptId]))?.total ?? 0);
  }

  /** Bytes the bucket's reservations of holders seen at or after `liveSince` hold, leaving out `exceptId`. */
  async liveBucketSum(bucketId: string, liveSince: number, exceptId = ''): Promise<number> {
    return Number((await this.db.get<{ total: unknown }>(LIVE_BUCKET, [bucketId, liveSince, exceptId]))?.total ?? 0);
  }

  async insert(r: NewStorageReservation): Promise<void> {
    await this.db.run(INSERT, [r.id, r.userId, r.bucketId, r.bytes, r.holder, r.createdAt]);
  }

  /** Idempotent. */
  async delete(id: string): Promise<void> {
    await this.db.run(DELETE, [id]);
  }

  /** The user's buckets by name, with what each stores and its quota. */
  async bucketsOf(userId: string): Promise<BucketStorage[]> {
    const rows = await this.db.all<BucketStorage>(BUCKETS_OF, [userId]);
    return rows.map((r) => ({ bucketId: r.bucketId, name: r.name, bytes: Number(r.bytes), quota: quota(r.quota) }));
  }
}
