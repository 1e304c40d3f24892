// The credit ledger (SPEC.md 2.8): an append-only list of entries in milli-credits, and each user's
// running balance in credit_accounts, updated in the same statement group as the entry it follows.
// depleted_at (migration 027 / PG 012) is when the balance last went from above zero to zero or below,
// by an entry's time; NULL while it is above zero. The entry's own UPDATE sets and clears it, so it is
// exactly as right as the balance, on either store.
import { newId } from '../ids.js';
import type { SqlExecutor } from '../store/types.js';
import { afterCursorSql, cursorParams, type PageCursor } from './page-cursor.js';

export interface CreditAccount {
  userId: string;
  balanceMilli: number;
  usedMilli: number;
  /** 'YYYY-MM' of the last free monthly grant, '' before the first. */
  grantedMonth: string;
  /** Unix ms since when the balance is at or below zero (the entry that took it there); null while above zero. */
  depletedAt: number | null;
}

export type LedgerEventType = 'upload' | 'grant' | 'free_monthly_grant' | 'transfer' | 'storage';

export interface LedgerEntry {
  id: string;
  userId: string;
  assetId: string;
  eventType: LedgerEventType;
  bytes: number;
  rateMilli: number;
  /** Charged by the entry; negative when it added credits. */
  creditsMilli: number;
  balanceAfterMilli: number;
  /** `period`: the span a metered charge is for, `<start>/<end>` in ISO 8601; `hours`: the sampled hours a storage charge covers. */
  metadata: { key?: string; note?: string; period?: string; hours?: number };
  createdAt: number;
}

export type NewLedgerEntry = Omit<LedgerEntry, 'id' | 'createdAt' | 'balanceAfterMilli'>;

interface AccountRow {
  user_id: string;
  balance_milli: number;
  used_milli: number;
  granted_month: string;
  depleted_at: number | null;
}

interface LedgerRow {
  id: string;
  user_id: string;
  asset_id: string;
  event_type: LedgerEventType;
  bytes: number;
  rate_milli: number;
  credits_milli: number;
  balance_after_milli: number;
  metadata: string;
  created_at: number;
}

function toEntry(r: LedgerRow): LedgerEntry {
  return {
    id: r.id,
    userId: r.user_id,
    assetId: r.asset_id,
    eventType: r.event_type,
    bytes: r.bytes,
    rateMilli: r.rate_milli,
    creditsMilli: r.credits_milli,
    balanceAfterMilli: r.balance_after_milli,
    metadata: JSON.parse(r.metadata) as LedgerEntry['metadata'],
    createdAt: r.created_at,
  };
}

const LEDGER_COLUMNS = 'id, user_id, asset_id, event_type, bytes, rate_milli, credits_milli, balance_after_milli, metadata, created_at';

const ACCOUNT = 'SELECT user_id, balance_milli, used_milli, granted_month, depleted_at FROM credit_accounts WHERE user_id = ?';
const CREATE_ACCOUNT = 'INSERT INTO credit_accounts (user_id, balance_milli, used_milli) VALUES (?, 0, 0) ON CONFLICT (user_id) DO NOTHING';
// The new balance comes back from the same statement. The right-hand sides read the row as it was
// (SQLite and PostgreSQL alike), so `balance_milli - :amount` is the new balance: at or below zero,
// depleted_at keeps the time it first got there, or takes the entry's; above zero it is cleared.
const APPLY = `UPDATE credit_accounts SET balance_milli = balance_milli - :amount, used_milli = used_milli + :charged,
    depleted_at = CASE WHEN balance_milli - :amount > 0 THEN NULL ELSE coalesce(depleted_at, :now) END
  WHERE user_id = :userId RETURNING balance_milli`;
// Accounts depleted since at or before a time (NULL compares as nothing). A scan of credit_accounts, one
// row a user with credit activity: the delivery suspension's one query a second (credits/delivery-suspension.ts).
const DEPLETED_BY = 'SELECT user_id FROM credit_accounts WHERE depleted_at <= ?';
const DEPLETED_OUTSIDE_MONTH = 'SELECT user_id FROM credit_accounts WHERE depleted_at IS NOT NULL AND granted_month <> ?';
const GRANT_MONTH = 'UPDATE credit_accounts SET granted_month = ? WHERE user_id = ?';
const INSERT = `INSERT INTO credit_ledger (${LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const RECENT = `SELECT ${LEDGER_COLUMNS} FROM credit_ledger WHERE user_id = ? ORDER BY seq DESC LIMIT ?`;

/** A page of one user's entries: a window (Unix ms, both ends included), after a cursor. */
export interface LedgerPageQuery {
  fromMs: number;
  toMs: number;
  after: PageCursor | null;
  limit: number;
}

/** Credits charged and added on one UTC day (`day`: Unix ms of its start), in milli-credits. */
export interface LedgerDayRow {
  day: number;
  chargedMilli: number;
  addedMilli: number;
}

const DAY_MS = 86_400_000;
const DAILY = `SELECT (created_at / CAST(:dayMs AS BIGINT)) * CAST(:dayMs AS BIGINT) AS day,
    coalesce(sum(CASE WHEN credits_milli > 0 THEN credits_milli ELSE 0 END), 0) AS "chargedMilli",
    coalesce(sum(CASE WHEN credits_milli < 0 THEN -credits_milli ELSE 0 END), 0) AS "addedMilli"
  FROM credit_ledger WHERE user_id = :userId AND created_at >= :fromMs AND created_at <= :toMs GROUP BY 1 ORDER BY 1`;

export class CreditsRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The user's account; a user who never had credit activity has a zero one (not stored). */
  async account(userId: string): Promise<CreditAccount> {
    const r = await this.db.get<AccountRow>(ACCOUNT, [userId]);
    return r
      ? { userId, balanceMilli: r.balance_milli, usedMilli: r.used_milli, grantedMonth: r.granted_month, depletedAt: r.depleted_at }
      : { userId, balanceMilli: 0, usedMilli: 0, grantedMonth: '', depletedAt: null };
  }

  /** Users whose balance has been at or below zero since `cutoffMs` or earlier. */
  async depletedBy(cutoffMs: number): Promise<string[]> {
    return (await this.db.all<{ user_id: string }>(DEPLETED_BY, [cutoffMs])).map((r) => r.user_id);
  }

  /** Users at or below zero whose last free monthly grant was not for `month` ('YYYY-MM'). */
  async depletedOutsideMonth(month: string): Promise<string[]> {
    return (await this.db.all<{ user_id: string }>(DEPLETED_OUTSIDE_MONTH, [month])).map((r) => r.user_id);
  }

  /** Appends an entry and applies it to the balance, atomically (a savepoint inside a caller's transaction). */
  async append(input: NewLedgerEntry): Promise<LedgerEntry> {
    return this.db.transaction(async (tx) => {
      await tx.run(CREATE_ACCOUNT, [input.userId]);
      const charged = Math.max(0, input.creditsMilli);
      const now = this.clock();
      const account = await tx.get<{ balance_milli: number }>(APPLY, { amount: input.creditsMilli, charged, now, userId: input.userId });
      if (!account) throw new Error(`credits: no account for ${input.userId}`);
      const entry: LedgerEntry = { ...input, id: newId(), balanceAfterMilli: account.balance_milli, createdAt: now };
      await tx.run(INSERT, [
        entry.id, entry.userId, entry.assetId, entry.eventType, entry.bytes, entry.rateMilli, entry.creditsMilli,
        entry.balanceAfterMilli, JSON.stringify(entry.metadata), entry.createdAt,
      ]);
      return entry;
    });
  }

  /** Records that `month`'s free grant was given; call in the same transaction as its entry. */
  async markGranted(userId: string, month: string): Promise<void> {
    await this.db.run(CREATE_ACCOUNT, [userId]);
    await this.db.run(GRANT_MONTH, [month, userId]);
  }

  /** A page of the user's entries in a window, newest first; each with its position. */
  async page(userId: string, q: LedgerPageQuery): Promise<{ entry: LedgerEntry; position: PageCursor }[]> {
    const after = q.after === null ? '' : afterCursorSql('created_at', 'seq');
    const sql = `SELECT seq, ${LEDGER_COLUMNS} FROM credit_ledger WHERE user_id = :userId AND created_at >= :fromMs AND created_at <= :toMs${after}
      ORDER BY created_at DESC, seq DESC LIMIT :limit`;
    const params = { userId, fromMs: q.fromMs, toMs: q.toMs, limit: q.limit, ...(q.after === null ? {} : cursorParams(q.after)) };
    return (await this.db.all<LedgerRow & { seq: number }>(sql, params)).map((r) => ({ entry: toEntry(r), position: { time: r.created_at, id: r.seq } }));
  }

  /** Credits charged and added by UTC day in a window, oldest first; days without entries are absent. */
  async daily(userId: string, fromMs: number, toMs: number): Promise<LedgerDayRow[]> {
    return this.db.all<LedgerDayRow>(DAILY, { dayMs: DAY_MS, userId, fromMs, toMs });
  }

  /** The user's latest `limit` entries, newest first. */
  async recent(userId: string, limit: number): Promise<LedgerEntry[]> {
    return (await this.db.all<LedgerRow>(RECENT, [userId, limit])).map(toEntry);
  }
}
