// Cloud credits (SPEC.md 2.6, 2.8): the upload charge, the free monthly grant, and reservations that
// make concurrent uploads unable to overdraw. All amounts are integer milli-credits internally.
//
// An upload reserves credits before reading its body: the charge of its declared length (an upper
// bound of the file size), or, when that is more than is available, everything available. The
// charge of the real size is appended to the ledger in the upload's commit transaction, and the
// reservation goes in that same transaction.
//
// Reservations live in the database (migration 018), because several processes may serve one data
// directory (`serve --workers N`, several nodes on one PostgreSQL database): one transaction (IMMEDIATE
// on SQLite, SERIALIZABLE on PostgreSQL) reads the balance minus every live reservation of the user and
// inserts the new one, so reservations taken by any number of processes never add up to more than the balance.
//
// A process that crashes leaves its rows behind: each row names its holder, this process instance
// (reservation-holder.ts: the heartbeat and the 60-second rule both kinds of reservation share). The
// rule is also safe when it misjudges a live holder (an event loop stalled for a minute): the charge
// checks again, in the commit transaction, that the balance less every other live reservation covers
// it, so the worst outcome is a late 402 for an upload whose credits others took meanwhile, never a
// negative balance.
import type { CreditsConfig } from '../config/schema.js';
import type { LedgerEntry } from '../db/repos/credits.js';
import type { Repos } from '../db/repos/index.js';
import { Refusal } from '../errors/refusal.js';
import { newId } from '../db/ids.js';
import { deliveryGraceMs, suspendsDelivery } from './delivery-suspension.js';
import { ReservationHolder } from './reservation-holder.js';

export { HOLDER_BEAT_MS, HOLDER_TTL_MS } from './reservation-holder.js';

export const MILLI = 1000;

export function toMilli(credits: number): number {
  return Math.round(credits * MILLI);
}

export function fromMilli(milli: number): number {
  return milli / MILLI;
}

/** Storage and transfer are priced per decimal gigabyte (a GB-day, a GB served). */
const GB = 1_000_000_000;

/** The milli-credits of `bytes` at `rateMilli` per GB, rounded as one amount. */
export function perGbCharge(bytes: number, rateMilli: number): number {
  return Math.round((bytes * rateMilli) / GB);
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
  /** Beyond SPEC.md (docs/API.md "Usage and credits"): credits on and the balance below lowCreditThreshold. */
  low: boolean;
  /** What a balance at or below zero stops: 'refuse-uploads' or 'suspend-delivery'. */
  atZero: CreditsConfig['atZero'];
  deliveryGraceHours: number;
  /** ISO 8601: since when the balance is at or below zero; null while above (or credits off). */
  depletedAt: string | null;
  /** ISO 8601: when public delivery stops (stopped) for want of credits; null unless 'suspend-delivery' and depleted. */
  deliverySuspendsAt: string | null;
  /** Whether deliverySuspendsAt has passed: the CDN and the proxy refuse the user's content (402). */
  deliverySuspended: boolean;
}

export interface UploadReservation {
  /** The largest file this reservation pays for (Infinity when credits are off). */
  readonly maxBytes: number;
  /** The 402 for an upload that turned out larger than maxBytes. */
  refusal(size: number): Promise<Refusal>;
  /**
   * Appends the ledger entry of a `size`-byte upload and releases the reservation, through `repos`:
   * those of the commit transaction (`transact`'s argument), where it is a savepoint. Undefined when
   * credits are off. Throws the 402 if the size is above maxBytes.
   */
  charge(repos: CreditRepos, size: number, assetId: string, key: string): Promise<LedgerEntry | undefined>;
  /** Returns the reserved credits; idempotent, never throws: call it whether or not the upload committed. */
  release(): Promise<void>;
}

/** The repositories credits run on: the store's, or a transaction's. */
export type CreditRepos = Pick<Repos, 'credits' | 'creditReservations' | 'transact'>;


export interface CreditsOptions {
  /** This process instance's name on its reservations, when the service makes its own holder; default `<host>:<pid>:<random>`. */
  holder?: string;
  /** The process's holder, shared with the storage quotas (the context's); default one of its own, closed by close(). */
  holders?: ReservationHolder;
  /** A heartbeat or a release that could not be written (it is retried). */
  onError?: (err: unknown) => void;
}

export class CreditsService {
  private readonly perUnitMilli: number;
  private readonly holders: ReservationHolder;
  /** Whether close() closes the holder (one made here, not shared). */
  private readonly ownsHolder: boolean;

  constructor(
    private readonly repos: CreditRepos,
    private readonly config: CreditsConfig,
    private readonly now: () => Date,
    options: CreditsOptions = {},
  ) {
    this.perUnitMilli = toMilli(config.uploadCreditsPerUnit);
    this.ownsHolder = options.holders === undefined;
    this.holders = options.holders ?? new ReservationHolder(repos, now, {
      ...(options.holder !== undefined ? { name: options.holder } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
    });
  }

  /** This process instance's name on its reservations. */
  get holder(): string {
    return this.holders.name;
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  /** ceil(size / uploadCreditUnitBytes) * uploadCreditsPerUnit, in milli-credits. */
  uploadChargeMilli(size: number): number {
    return Math.ceil(size / this.config.uploadCreditUnitBytes) * this.perUnitMilli;
  }

  /** Gives this month's free credits if not given yet (a ledger entry); call before reading a balance. */
  async ensureMonthlyGrant(userId: string): Promise<void> {
    if (!this.config.enabled) return;
    const month = this.now().toISOString().slice(0, 7);
    if ((await this.repos.credits.account(userId)).grantedMonth === month) return;
    await this.repos.transact(async (r) => {
      if ((await r.credits.account(userId)).grantedMonth === month) return;
      await r.credits.markGranted(userId, month);
      const amount = toMilli(this.config.freeMonthlyCredits);
      if (amount > 0) {
        await r.credits.append({
          userId, assetId: '', eventType: 'free_monthly_grant', bytes: 0, rateMilli: 0, creditsMilli: -amount,
          metadata: { note: `free credits for ${month}` },
        });
      }
    });
  }

  /**
   * Gives this month's free credits to every account at or below zero that has not had them yet (the
   * singleton job, with atZero 'suspend-delivery'): an owner whose delivery is suspended gets it back
   * when the month turns, without signing in first. Returns how many accounts it looked at.
   */
  async grantMonthlyToDepleted(): Promise<number> {
    if (!this.config.enabled || this.config.freeMonthlyCredits <= 0) return 0;
    const users = await this.repos.credits.depletedOutsideMonth(this.now().toISOString().slice(0, 7));
    for (const userId of users) await this.ensureMonthlyGrant(userId);
    return users.length;
  }

  /** Adds credits (the admin CLI's grant): a ledger entry with a negative charge. */
  grant(userId: string, credits: number, note: string): Promise<LedgerEntry> {
    return this.repos.credits.append({
      userId, assetId: '', eventType: 'grant', bytes: 0, rateMilli: 0, creditsMilli: -toMilli(credits), metadata: { note },
    });
  }

  /** Balance minus what running uploads (of every process) have reserved, in milli-credits. */
  private async availableMilli(r: CreditRepos, userId: string, exceptId?: string): Promise<number> {
    const balance = (await r.credits.account(userId)).balanceMilli;
    return balance - (await r.creditReservations.liveSum(userId, this.holders.liveSince(), exceptId));
  }

  /**
   * Stops the heartbeat and forgets this holder (when it is this service's own): a reservation still
   * held no longer counts. Call when the process stops serving. Never throws.
   */
  async close(): Promise<void> {
    if (this.ownsHolder) await this.holders.close();
  }

  private async insufficient(r: CreditRepos, userId: string, requiredMilli: number): Promise<Refusal> {
    return new Refusal('insufficient_credits', 'insufficient_credits', 'Not enough credits for this upload', {
      requiredCredits: fromMilli(requiredMilli),
      balance: fromMilli((await r.credits.account(userId)).balanceMilli),
    });
  }

  /**
   * Reserves credits for an upload whose request body is `declaredBytes` long (undefined when not
   * declared). Throws the 402 at once when not even one charging unit is available.
   */
  async reserveUpload(userId: string, declaredBytes: number | undefined): Promise<UploadReservation> {
    if (!this.config.enabled || this.perUnitMilli === 0) {
      return {
        maxBytes: Infinity,
        refusal: () => this.insufficient(this.repos, userId, 0),
        charge: async () => undefined,
        release: async () => {},
      };
    }
    await this.ensureMonthlyGrant(userId);
    const id = newId();
    const wanted = declaredBytes === undefined ? Infinity : this.uploadChargeMilli(declaredBytes);
    // The first of a busy period also clears dead holders' rows and retries failed releases.
    const visit = this.holders.visit();
    // One transaction (IMMEDIATE on SQLite, SERIALIZABLE on PostgreSQL): no other process reserves
    // between the sum and the insert.
    const units = await this.repos.transact(async (r) => {
      const amount = Math.min(wanted, Math.max(0, await this.availableMilli(r, userId)));
      const units = Math.floor(amount / this.perUnitMilli);
      if (units === 0) return 0;
      await visit.beat(r);
      await r.creditReservations.insert({ id, userId, milli: units * this.perUnitMilli, holder: this.holders.name, createdAt: this.now().getTime() });
      return units;
    });
    if (units > 0) visit.committed();
    // Thrown after the commit: the monthly grant above stays.
    if (units === 0 && wanted > 0) throw await this.insufficient(this.repos, userId, Number.isFinite(wanted) ? wanted : this.perUnitMilli);
    // A zero-byte upload reserves nothing and has no row.
    if (units > 0) this.holders.hold();
    const maxBytes = units * this.config.uploadCreditUnitBytes;
    let settled = units === 0;
    const release = async (): Promise<void> => {
      if (units === 0) return;
      // Deleted on every call: a charge whose transaction rolled back restored the row.
      await this.holders.release(`credit:${id}`, (r: CreditRepos) => r.creditReservations.delete(id), this.repos);
      if (settled) return;
      settled = true;
      this.holders.letGo();
    };
    return {
      maxBytes,
      refusal: (size) => this.insufficient(this.repos, userId, this.uploadChargeMilli(size)),
      charge: async (repos, size, assetId, key) => {
        const charged = this.uploadChargeMilli(size);
        if (size > maxBytes) throw await this.insufficient(repos, userId, charged);
        // A savepoint in the caller's commit transaction (its own transaction when given the store's repositories).
        return repos.transact(async (r) => {
          // Normally true by construction; false only if this reservation was judged dead and others
          // reserved its credits meanwhile (see the module comment): then this upload is refused.
          if ((await this.availableMilli(r, userId, id)) < charged) throw await this.insufficient(r, userId, charged);
          const entry = await r.credits.append({
            userId, assetId, eventType: 'upload', bytes: size, rateMilli: this.perUnitMilli,
            creditsMilli: charged, metadata: { key },
          });
          // The charge takes the reservation's place in the same transaction: held on until the
          // caller's release, it would count twice (lower balance and still reserved) and refuse others wrongly.
          if (units > 0) await r.creditReservations.delete(id);
          return entry;
        });
      },
      release,
    };
  }

  /** The Credits object for a user storing `storageBytes` (everything: buckets and assets). */
  async state(userId: string, storageBytes: number): Promise<CreditsState> {
    await this.ensureMonthlyGrant(userId);
    const account = await this.repos.credits.account(userId);
    const c = this.config;
    const depletedAt = c.enabled ? account.depletedAt : null;
    const suspendsAt = depletedAt !== null && suspendsDelivery(c) ? depletedAt + deliveryGraceMs(c) : null;
    return {
      enabled: c.enabled,
      balance: fromMilli(account.balanceMilli),
      usedCredits: fromMilli(account.usedMilli),
      lowCreditThreshold: c.lowCreditThreshold,
      // A day at what is stored now: the next daily charge if nothing changes (credits/storage-settlement.ts).
      projectedDailyStorageCredits: fromMilli(perGbCharge(storageBytes, toMilli(c.storageCreditsPerGbDay))),
      freeMonthlyCredits: c.freeMonthlyCredits,
      uploadCreditUnitBytes: c.uploadCreditUnitBytes,
      uploadCreditsPerUnit: c.uploadCreditsPerUnit,
      transferCreditsPerGb: c.transferCreditsPerGb,
      storageCreditsPerGbDay: c.storageCreditsPerGbDay,
      low: c.enabled && account.balanceMilli < toMilli(c.lowCreditThreshold),
      atZero: c.atZero,
      deliveryGraceHours: c.deliveryGraceHours,
      depletedAt: depletedAt === null ? null : new Date(depletedAt).toISOString(),
      deliverySuspendsAt: suspendsAt === null ? null : new Date(suspendsAt).toISOString(),
      deliverySuspended: suspendsAt !== null && this.now().getTime() >= suspendsAt,
    };
  }
}
