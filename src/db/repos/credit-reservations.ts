// Upload credit reservations and their holders (migration 018); storage quota reservations (migration
// 027) count by the same holders. A reservation counts while its holder is live: seen at or after the
// cutoff the caller passes (src/credits/reservation-holder.ts owns the rule).
import type { SqlExecutor } from '../store/types.js';

export interface NewCreditReservation {
  id: string;
  userId: string;
  milli: number;
  holder: string;
  createdAt: number;
}

// The index on user_id finds the user's few rows; each joins its holder by primary key.
const LIVE_SUM = `SELECT COALESCE(SUM(r.milli), 0) AS total FROM credit_reservations r JOIN credit_holders h ON h.holder = r.holder
  WHERE r.user_id = ? AND h.seen_at >= ? AND r.id <> ?`;
const INSERT = 'INSERT INTO credit_reservations (id, user_id, milli, holder, created_at) VALUES (?, ?, ?, ?, ?)';
const DELETE = 'DELETE FROM credit_reservations WHERE id = ?';
// A beat never moves seen_at back (SQLite's scalar max() is not PostgreSQL's: a CASE on both).
const BEAT = `INSERT INTO credit_holders (holder, seen_at) VALUES (?, ?) ON CONFLICT (holder) DO UPDATE
  SET seen_at = CASE WHEN excluded.seen_at > credit_holders.seen_at THEN excluded.seen_at ELSE credit_holders.seen_at END`;
const FORGET_HOLDER = 'DELETE FROM credit_holders WHERE holder = ?';
const PRUNE_RESERVATIONS = 'DELETE FROM credit_reservations WHERE holder NOT IN (SELECT holder FROM credit_holders WHERE seen_at >= ?)';
// Storage quota reservations (migration 027) count by the same holders.
const PRUNE_STORAGE_RESERVATIONS = 'DELETE FROM storage_reservations WHERE holder NOT IN (SELECT holder FROM credit_holders WHERE seen_at >= ?)';
const PRUNE_HOLDERS = 'DELETE FROM credit_holders WHERE seen_at < ?';

export class CreditReservationsRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Milli-credits the user's reservations of holders seen at or after `liveSince` hold, leaving out `exceptId`. */
  async liveSum(userId: string, liveSince: number, exceptId = ''): Promise<number> {
    return ((await this.db.get<{ total: number }>(LIVE_SUM, [userId, liveSince, exceptId])) as { total: number }).total;
  }

  async insert(r: NewCreditReservation): Promise<void> {
    await this.db.run(INSERT, [r.id, r.userId, r.milli, r.holder, r.createdAt]);
  }

  /** Idempotent. */
  async delete(id: string): Promise<void> {
    await this.db.run(DELETE, [id]);
  }

  /** Records that `holder` is alive at `at` (creating it on its first beat). */
  async beat(holder: string, at: number): Promise<void> {
    await this.db.run(BEAT, [holder, at]);
  }

  /** A holder that stops cleanly: its row goes (any reservation it still had no longer counts). */
  async forgetHolder(holder: string): Promise<void> {
    await this.db.run(FORGET_HOLDER, [holder]);
  }

  /** Deletes the reservations (credits and storage quotas) of holders not seen since `liveSince`, then those holders. */
  async prune(liveSince: number): Promise<void> {
    await this.db.run(PRUNE_RESERVATIONS, [liveSince]);
    await this.db.run(PRUNE_STORAGE_RESERVATIONS, [liveSince]);
    await this.db.run(PRUNE_HOLDERS, [liveSince]);
  }
}
