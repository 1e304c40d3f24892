// Stored bytes as the triggers of migration 027 count them (per bucket: objects, noncurrent versions,
// parts of uploads in progress; per user: assets), the hourly samples the storage meter takes of them,
// and what of each owner's day the ledger has charged (src/credits/storage-settlement.ts).
import type { SqlExecutor } from '../store/types.js';

export interface OwnerBytes {
  ownerId: string;
  bytes: number;
}

export interface OwnerDaySamples {
  ownerId: string;
  /** Unix ms of the UTC day's start. */
  day: number;
  /** Sampled hours of the day. */
  hours: number;
  /** The sum of the day's hourly samples: byte-hours. */
  byteHours: number;
}

export interface DayCharge {
  /** Sampled hours charged. */
  hours: number;
  /** Byte-days charged: the charged hours' byte-hours / 24. */
  bytes: number;
  creditsMilli: number;
}

export const DAY_MS = 86_400_000;

const BUCKET = 'SELECT bytes FROM bucket_usage WHERE bucket_id = ?';
const OWNER = `SELECT (SELECT COALESCE(SUM(bytes), 0) FROM bucket_usage WHERE owner_id = ?)
  + (SELECT COALESCE(SUM(bytes), 0) FROM asset_usage WHERE user_id = ?) AS bytes`;
const ASSETS = 'SELECT bytes FROM asset_usage WHERE user_id = ?';
// Owners that store something (or did: a zero row is sampled too, and charges nothing).
const ALL_OWNERS = `SELECT owner_id AS "ownerId", SUM(bytes) AS bytes FROM (
    SELECT owner_id, bytes FROM bucket_usage UNION ALL SELECT user_id AS owner_id, bytes FROM asset_usage
  ) stored GROUP BY owner_id ORDER BY owner_id`;
const SAMPLE = 'INSERT INTO storage_samples (owner_id, hour, bytes) VALUES (?, ?, ?) ON CONFLICT (owner_id, hour) DO NOTHING';
const DAYS = `SELECT owner_id AS "ownerId", (hour / ${DAY_MS}) * ${DAY_MS} AS day, count(*) AS hours, SUM(bytes) AS "byteHours"
  FROM storage_samples WHERE hour >= ? AND hour < ? GROUP BY 1, 2 ORDER BY 2, 1`;
const CHARGED = 'SELECT hours, bytes, credits_milli AS "creditsMilli" FROM storage_charges WHERE owner_id = ? AND day = ?';
const FIRST = 'INSERT INTO storage_charges (owner_id, day, hours, bytes, credits_milli) VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner_id, day) DO NOTHING';
const ADVANCE = 'UPDATE storage_charges SET hours = ?, bytes = ?, credits_milli = ? WHERE owner_id = ? AND day = ? AND hours = ?';
const PRUNE_SAMPLES = 'DELETE FROM storage_samples WHERE hour < ?';

export class StorageUsageRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Bytes the bucket stores: objects, noncurrent versions and parts of uploads in progress. */
  async bucketBytes(bucketId: string): Promise<number> {
    const row = await this.db.get<{ bytes: number }>(BUCKET, [bucketId]);
    return row ? Number(row.bytes) : 0;
  }

  /** Bytes the user's assets take. */
  async assetBytes(userId: string): Promise<number> {
    const row = await this.db.get<{ bytes: number }>(ASSETS, [userId]);
    return row ? Number(row.bytes) : 0;
  }

  /** Everything the user stores: their buckets' bytes and their assets'. */
  async ownerBytes(userId: string): Promise<number> {
    const row = await this.db.get<{ bytes: number }>(OWNER, [userId, userId]);
    return row ? Number(row.bytes) : 0;
  }

  /** Every owner's stored bytes. */
  async allOwners(): Promise<OwnerBytes[]> {
    return (await this.db.all<OwnerBytes>(ALL_OWNERS)).map((r) => ({ ownerId: r.ownerId, bytes: Number(r.bytes) }));
  }

  /** Records the owner's bytes for the hour starting at `hour`, unless a sample of it is there. */
  async sample(ownerId: string, hour: number, bytes: number): Promise<void> {
    await this.db.run(SAMPLE, [ownerId, hour, bytes]);
  }

  /** Per owner and UTC day, the samples of hours in [fromMs, toMs), oldest day first. */
  async days(fromMs: number, toMs: number): Promise<OwnerDaySamples[]> {
    const rows = await this.db.all<OwnerDaySamples>(DAYS, [fromMs, toMs]);
    return rows.map((r) => ({ ownerId: r.ownerId, day: Number(r.day), hours: Number(r.hours), byteHours: Number(r.byteHours) }));
  }

  /** What of the owner's day the ledger has charged. */
  async charged(ownerId: string, day: number): Promise<DayCharge> {
    const row = await this.db.get<DayCharge>(CHARGED, [ownerId, day]);
    return row ? { hours: Number(row.hours), bytes: Number(row.bytes), creditsMilli: Number(row.creditsMilli) } : { hours: 0, bytes: 0, creditsMilli: 0 };
  }

  /** Moves the day's charge from `from` hours to `to`; false when another settlement moved it first. */
  async advance(ownerId: string, day: number, fromHours: number, to: DayCharge): Promise<boolean> {
    if (fromHours === 0 && (await this.db.run(FIRST, [ownerId, day, to.hours, to.bytes, to.creditsMilli])).changes > 0) return true;
    return (await this.db.run(ADVANCE, [to.hours, to.bytes, to.creditsMilli, ownerId, day, fromHours])).changes > 0;
  }

  /** Drops samples of hours before `beforeMs` (their days are charged). */
  async pruneSamples(beforeMs: number): Promise<number> {
    return (await this.db.run(PRUNE_SAMPLES, [beforeMs])).changes;
  }
}
