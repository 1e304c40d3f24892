// Cloud credits (SPEC.md 2.6, 2.8): the upload charge, the free monthly grant, and reservations that
// make concurrent uploads unable to overdraw. All amounts are integer milli-credits internally.
//
// An upload reserves credits before reading its body: the charge of its declared length (an upper
// bound of the file size), or, when that is more than is available, everything available. The
// reservation is taken synchronously, so however many uploads race, reservations never exceed the
// balance; the charge of the real size is appended to the ledger in the upload's commit transaction
// and the reservation released. Reservations live in memory: one process owns a data directory.
import type { CreditsConfig } from '../config/schema.js';
import type { CreditsRepo, LedgerEntry } from '../db/repos/credits.js';
import type { Repos } from '../db/repos/index.js';
import { ApiError } from '../api/errors.js';

export const MILLI = 1000;

export function toMilli(credits: number): number {
  return Math.round(credits * MILLI);
}

export function fromMilli(milli: number): number {
  return milli / MILLI;
}

/** The Credits object of SPEC.md 2.6. */
export interface CreditsState {
  enabled: boolean;
  balance: number;
  usedCredits: number;
  lowCreditThreshold: number;
  projectedDailyStorageCredits: number;
  freeMonthlyCredits: number;
  uploadCreditUnitBytes: number;
  uploadCreditsPerUnit: number;
  transferCreditsPerGb: number;
  storageCreditsPerGbDay: number;
}

export interface UploadReservation {
  /** The largest file this reservation pays for (Infinity when credits are off). */
  readonly maxBytes: number;
  /** The 402 for an upload that turned out larger than maxBytes. */
  refusal(size: number): ApiError;
  /**
   * Appends the ledger entry of a `size`-byte upload (call inside the commit transaction) and releases
   * the reservation; undefined when credits are off. Throws the 402 if the size is above maxBytes.
   */
  charge(size: number, assetId: string, key: string): LedgerEntry | undefined;
  /** Returns the reserved credits; idempotent, call it whether or not the upload committed. */
  release(): void;
}

/** Storage is priced per decimal gigabyte per day. */
const GB = 1_000_000_000;

export class CreditsService {
  private readonly reserved = new Map<string, number>();
  private readonly perUnitMilli: number;

  private readonly repo: CreditsRepo;
  private readonly transaction: Repos['transaction'];

  constructor(
    repos: Pick<Repos, 'credits' | 'transaction'>,
    private readonly config: CreditsConfig,
    private readonly now: () => Date,
  ) {
    this.repo = repos.credits;
    this.transaction = repos.transaction;
    this.perUnitMilli = toMilli(config.uploadCreditsPerUnit);
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  /** ceil(size / uploadCreditUnitBytes) * uploadCreditsPerUnit, in milli-credits. */
  uploadChargeMilli(size: number): number {
    return Math.ceil(size / this.config.uploadCreditUnitBytes) * this.perUnitMilli;
  }

  /** Gives this month's free credits if not given yet (a ledger entry); call before reading a balance. */
  ensureMonthlyGrant(userId: string): void {
    if (!this.config.enabled) return;
    const month = this.now().toISOString().slice(0, 7);
    if (this.repo.account(userId).grantedMonth === month) return;
    this.transaction(() => {
      if (this.repo.account(userId).grantedMonth === month) return;
      this.repo.markGranted(userId, month);
      const amount = toMilli(this.config.freeMonthlyCredits);
      if (amount > 0) {
        this.repo.append({
          userId, assetId: '', eventType: 'free_monthly_grant', bytes: 0, rateMilli: 0, creditsMilli: -amount,
          metadata: { note: `free credits for ${month}` },
        });
      }
    });
  }

  /** Adds credits (the admin CLI's grant): a ledger entry with a negative charge. */
  grant(userId: string, credits: number, note: string): LedgerEntry {
    return this.repo.append({
      userId, assetId: '', eventType: 'grant', bytes: 0, rateMilli: 0, creditsMilli: -toMilli(credits), metadata: { note },
    });
  }

  /** Balance minus what running uploads have reserved, in milli-credits. */
  private availableMilli(userId: string): number {
    return this.repo.account(userId).balanceMilli - (this.reserved.get(userId) ?? 0);
  }

  private insufficient(userId: string, requiredMilli: number): ApiError {
    return new ApiError(402, 'insufficient_credits', 'Not enough credits for this upload', {
      requiredCredits: fromMilli(requiredMilli),
      balance: fromMilli(this.repo.account(userId).balanceMilli),
    });
  }

  /**
   * Reserves credits for an upload whose request body is `declaredBytes` long (undefined when not
   * declared). Throws the 402 at once when not even one charging unit is available.
   */
  reserveUpload(userId: string, declaredBytes: number | undefined): UploadReservation {
    if (!this.config.enabled || this.perUnitMilli === 0) {
      return { maxBytes: Infinity, refusal: () => this.insufficient(userId, 0), charge: () => undefined, release: () => {} };
    }
    this.ensureMonthlyGrant(userId);
    const available = Math.max(0, this.availableMilli(userId));
    const wanted = declaredBytes === undefined ? Infinity : this.uploadChargeMilli(declaredBytes);
    const amount = Math.min(wanted, available);
    const units = Math.floor(amount / this.perUnitMilli);
    if (units === 0 && wanted > 0) throw this.insufficient(userId, Number.isFinite(wanted) ? wanted : this.perUnitMilli);
    const held = units * this.perUnitMilli;
    this.reserved.set(userId, (this.reserved.get(userId) ?? 0) + held);
    const maxBytes = units * this.config.uploadCreditUnitBytes;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      const left = (this.reserved.get(userId) ?? 0) - held;
      if (left > 0) this.reserved.set(userId, left);
      else this.reserved.delete(userId);
    };
    return {
      maxBytes,
      refusal: (size) => this.insufficient(userId, this.uploadChargeMilli(size)),
      charge: (size, assetId, key) => {
        if (size > maxBytes) throw this.insufficient(userId, this.uploadChargeMilli(size));
        const entry = this.repo.append({
          userId, assetId, eventType: 'upload', bytes: size, rateMilli: this.perUnitMilli,
          creditsMilli: this.uploadChargeMilli(size), metadata: { key },
        });
        // The charge takes the reservation's place in the same tick: held on until the caller's
        // release, it would count twice (lower balance and still reserved) and refuse others wrongly.
        release();
        return entry;
      },
      release,
    };
  }

  /** The Credits object for a user storing `storageBytes`. */
  state(userId: string, storageBytes: number): CreditsState {
    this.ensureMonthlyGrant(userId);
    const account = this.repo.account(userId);
    const c = this.config;
    return {
      enabled: c.enabled,
      balance: fromMilli(account.balanceMilli),
      usedCredits: fromMilli(account.usedMilli),
      lowCreditThreshold: c.lowCreditThreshold,
      projectedDailyStorageCredits: fromMilli(Math.round((storageBytes / GB) * toMilli(c.storageCreditsPerGbDay))),
      freeMonthlyCredits: c.freeMonthlyCredits,
      uploadCreditUnitBytes: c.uploadCreditUnitBytes,
      uploadCreditsPerUnit: c.uploadCreditsPerUnit,
      transferCreditsPerGb: c.transferCreditsPerGb,
      storageCreditsPerGbDay: c.storageCreditsPerGbDay,
    };
  }
}
