// Upload credit reservations and their holders (migration 018). A reservation counts while its holder
// is live: seen at or after the cutoff the caller passes (src/credits/credits.ts owns the rule).
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';

export interface NewCreditReservation {
  id: string;
  userId: string;
  milli: number;
  holder: string;
  createdAt: number;
}

export class CreditReservationsRepo {
  private readonly liveSumStmt: Statement<[string, number, string], { total: number }>;
  private readonly insertStmt: Statement<[string, string, number, string, number]>;
  private readonly deleteStmt: Statement<[string]>;
  private readonly beatStmt: Statement<[string, number]>;
  private readonly forgetHolderStmt: Statement<[string]>;
  private readonly pruneReservationsStmt: Statement<[number]>;
  private readonly pruneHoldersStmt: Statement<[number]>;

  constructor(db: Db) {
    // The index on user_id finds the user's few rows; each joins its holder by primary key.
    this.liveSumStmt = db.prepare(
      `SELECT COALESCE(SUM(r.milli), 0) AS total FROM credit_reservations r JOIN credit_holders h ON h.holder = r.holder
       WHERE r.user_id = ? AND h.seen_at >= ? AND r.id <> ?`,
    );
    this.insertStmt = db.prepare('INSERT INTO credit_reservations (id, user_id, milli, holder, created_at) VALUES (?, ?, ?, ?, ?)');
    this.deleteStmt = db.prepare('DELETE FROM credit_reservations WHERE id = ?');
    this.beatStmt = db.prepare(
      'INSERT INTO credit_holders (holder, seen_at) VALUES (?, ?) ON CONFLICT (holder) DO UPDATE SET seen_at = MAX(seen_at, excluded.seen_at)',
    );
    this.forgetHolderStmt = db.prepare('DELETE FROM credit_holders WHERE holder = ?');
    this.pruneReservationsStmt = db.prepare(
      'DELETE FROM credit_reservations WHERE holder NOT IN (SELECT holder FROM credit_holders WHERE seen_at >= ?)',
    );
    this.pruneHoldersStmt = db.prepare('DELETE FROM credit_holders WHERE seen_at < ?');
  }

  /** Milli-credits the user's reservations of holders seen at or after `liveSince` hold, leaving out `exceptId`. */
  liveSum(userId: string, liveSince: number, exceptId = ''): number {
    return (this.liveSumStmt.get(userId, liveSince, exceptId) as { total: number }).total;
  }

  insert(r: NewCreditReservation): void {
    this.insertStmt.run(r.id, r.userId, r.milli, r.holder, r.createdAt);
  }

  /** Idempotent. */
  delete(id: string): void {
    this.deleteStmt.run(id);
  }

  /** Records that `holder` is alive at `at` (creating it on its first beat). */
  beat(holder: string, at: number): void {
    this.beatStmt.run(holder, at);
  }

  /** A holder that stops cleanly: its row goes (any reservation it still had no longer counts). */
  forgetHolder(holder: string): void {
    this.forgetHolderStmt.run(holder);
  }

  /** Deletes the reservations of holders not seen since `liveSince`, then those holders. */
  prune(liveSince: number): void {
    this.pruneReservationsStmt.run(liveSince);
    this.pruneHoldersStmt.run(liveSince);
  }
}
