// The credit ledger (SPEC.md 2.8): an append-only list of entries in milli-credits, and each user's
// running balance in credit_accounts, updated in the same statement group as the entry it follows.
import type { Statement } from '../sqlite/index.js';
import { newId } from '../../auth/ids.js';
import type { Db } from '../open.js';

export interface CreditAccount {
  userId: string;
  balanceMilli: number;
  usedMilli: number;
  /** 'YYYY-MM' of the last free monthly grant, '' before the first. */
  grantedMonth: string;
}

export type LedgerEventType = 'upload' | 'grant' | 'free_monthly_grant';

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
  metadata: { key?: string; note?: string };
  createdAt: number;
}

export type NewLedgerEntry = Omit<LedgerEntry, 'id' | 'createdAt' | 'balanceAfterMilli'>;

interface AccountRow {
  user_id: string;
  balance_milli: number;
  used_milli: number;
  granted_month: string;
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

export class CreditsRepo {
  private readonly accountStmt: Statement<[string], AccountRow>;
  private readonly createAccountStmt: Statement<[string]>;
  private readonly applyStmt: Statement<[number, number, string]>;
  private readonly grantMonthStmt: Statement<[string, string]>;
  private readonly insertStmt: Statement<unknown[]>;
  private readonly recentStmt: Statement<[string, number], LedgerRow>;
  private readonly appendTx: (entry: NewLedgerEntry) => LedgerEntry;

  constructor(db: Db, private readonly clock: () => number = Date.now) {
    this.accountStmt = db.prepare('SELECT user_id, balance_milli, used_milli, granted_month FROM credit_accounts WHERE user_id = ?');
    this.createAccountStmt = db.prepare(
      'INSERT INTO credit_accounts (user_id, balance_milli, used_milli) VALUES (?, 0, 0) ON CONFLICT (user_id) DO NOTHING',
    );
    this.applyStmt = db.prepare(
      'UPDATE credit_accounts SET balance_milli = balance_milli - ?, used_milli = used_milli + ? WHERE user_id = ?',
    );
    this.grantMonthStmt = db.prepare('UPDATE credit_accounts SET granted_month = ? WHERE user_id = ?');
    this.insertStmt = db.prepare(`INSERT INTO credit_ledger (${LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.recentStmt = db.prepare(`SELECT ${LEDGER_COLUMNS} FROM credit_ledger WHERE user_id = ? ORDER BY seq DESC LIMIT ?`);
    this.appendTx = db.transaction((input: NewLedgerEntry): LedgerEntry => {
      this.createAccountStmt.run(input.userId);
      const charged = Math.max(0, input.creditsMilli);
      this.applyStmt.run(input.creditsMilli, charged, input.userId);
      const account = this.accountStmt.get(input.userId) as AccountRow;
      const entry: LedgerEntry = { ...input, id: newId(), balanceAfterMilli: account.balance_milli, createdAt: this.clock() };
      this.insertStmt.run(
        entry.id, entry.userId, entry.assetId, entry.eventType, entry.bytes, entry.rateMilli, entry.creditsMilli,
        entry.balanceAfterMilli, JSON.stringify(entry.metadata), entry.createdAt,
      );
      return entry;
    });
  }

  /** The user's account; a user who never had credit activity has a zero one (not stored). */
  account(userId: string): CreditAccount {
    const r = this.accountStmt.get(userId);
    return r
      ? { userId, balanceMilli: r.balance_milli, usedMilli: r.used_milli, grantedMonth: r.granted_month }
      : { userId, balanceMilli: 0, usedMilli: 0, grantedMonth: '' };
  }

  /** Appends an entry and applies it to the balance, atomically (a savepoint inside a caller's transaction). */
  append(entry: NewLedgerEntry): LedgerEntry {
    return this.appendTx(entry);
  }

  /** Records that `month`'s free grant was given; call in the same transaction as its entry. */
  markGranted(userId: string, month: string): void {
    this.createAccountStmt.run(userId);
    this.grantMonthStmt.run(month, userId);
  }

  /** The user's latest `limit` entries, newest first. */
  recent(userId: string, limit: number): LedgerEntry[] {
    return this.recentStmt.all(userId, limit).map(toEntry);
  }
}
