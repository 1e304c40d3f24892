// This process instance as the holder of reservations in the metadata database: credit reservations
// (credits.ts) and storage quota reservations (quotas.ts) both count only while their holder is live.
//
// Each row names its holder (`<host>:<pid>:<random>`, new at every start), and a holder that has
// reservations beats every 5 s (credit_holders.seen_at). Rows of a holder not seen for 60 s are dead:
// they no longer count, and the next beat or first reservation of any process deletes them (both
// kinds: CreditReservationsRepo.prune). That rule needs no pid checks, so it holds across machines
// (whose clocks must agree to well within the minute). One holder per process, shared by both services:
// one heartbeat, one name.
import { hostname } from 'node:os';
import type { Repos } from '../db/repos/index.js';
import { newId } from '../db/ids.js';

/** How often a process holding reservations says it is alive. */
export const HOLDER_BEAT_MS = 5_000;
/** A holder not seen for this long is dead: its reservations no longer count. */
export const HOLDER_TTL_MS = 60_000;

/** The repositories the heartbeat runs on: the store's, or a transaction's. */
export type HolderRepos = Pick<Repos, 'creditReservations' | 'transact'>;

/** A release whose delete failed (the database was busy), retried by the next beat or first reservation. */
export type Unreleased = (r: Repos) => Promise<void>;

export interface HolderOptions {
  /** This process instance's name on its reservations; default `<host>:<pid>:<random>`. */
  name?: string;
  /** A heartbeat or a release that could not be written (it is retried). */
  onError?: (err: unknown) => void;
}

/** What a reservation's transaction does for its holder; made before the transaction, which may run more than once. */
export interface HolderVisit {
  /** In the reservation's transaction, before its insert: the holder is seen (and on a busy period's first, dead rows go). */
  beat(r: Repos): Promise<void>;
  /** After the transaction committed with a reservation: the retried releases are done. */
  committed(): void;
}

export class ReservationHolder {
  readonly name: string;
  readonly onError: (err: unknown) => void;
  /** Reservations of this process not released yet: the heartbeat runs while there are any. */
  private held = 0;
  private timer: NodeJS.Timeout | undefined;
  /** A heartbeat in progress (the next tick skips rather than overlap it). */
  private beating = false;
  /** Releases whose delete failed, by reservation kind and id. */
  private readonly unreleased = new Map<string, Unreleased>();

  constructor(
    private readonly repos: HolderRepos,
    private readonly now: () => Date,
    options: HolderOptions = {},
  ) {
    this.name = options.name ?? `${hostname()}:${process.pid}:${newId()}`;
    this.onError = options.onError ?? (() => {});
  }

  /** Reservations of holders seen since this instant count. */
  liveSince(): number {
    return this.now().getTime() - HOLDER_TTL_MS;
  }

  /**
   * Says this holder is alive, drops dead holders' rows, runs `retried` (a copy of the failed releases
   * taken before the transaction: the caller forgets them once it has committed).
   */
  private async heartbeat(r: Repos, retried: ReadonlyArray<[string, Unreleased]>): Promise<void> {
    await r.creditReservations.beat(this.name, this.now().getTime());
    await r.creditReservations.prune(this.liveSince());
    for (const [, run] of retried) await run(r);
  }

  /**
   * For a reservation about to be taken: the first of a busy period also clears dead holders' rows
   * and retries failed releases. Read before the transaction, which may run more than once
   * (PostgreSQL) and so changes nothing here.
   */
  visit(): HolderVisit {
    const first = this.held === 0;
    const retried = first ? [...this.unreleased] : [];
    return {
      beat: (r) => (first ? this.heartbeat(r, retried) : r.creditReservations.beat(this.name, this.now().getTime())),
      committed: () => {
        for (const [key, run] of retried) if (this.unreleased.get(key) === run) this.unreleased.delete(key);
      },
    };
  }

  /** One heartbeat in its own transaction; failures go to onError (the next one retries). */
  private async beatOnce(): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    try {
      const retried = [...this.unreleased];
      await this.repos.transact((r) => this.heartbeat(r, retried));
      for (const [key, run] of retried) if (this.unreleased.get(key) === run) this.unreleased.delete(key);
    } catch (err) {
      this.onError(err);
    } finally {
      this.beating = false;
    }
  }

  /** A reservation was taken: the heartbeat runs until it is let go. */
  hold(): void {
    this.held++;
    if (this.timer) return;
    // beatOnce never rejects (it reports to onError).
    this.timer = setInterval(() => void this.beatOnce(), HOLDER_BEAT_MS);
    this.timer.unref();
  }

  /** A reservation was released (once per hold()). */
  letGo(): void {
    if (--this.held > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Runs a reservation's delete; when it fails, it is kept under `key` and retried by a later beat. Never throws. */
  async release<R extends Partial<Repos>>(key: string, remove: (r: R) => Promise<void>, repos: R): Promise<void> {
    try {
      await remove(repos);
      this.unreleased.delete(key);
    } catch (err) {
      this.unreleased.set(key, remove as unknown as Unreleased);
      this.onError(err);
    }
  }

  /**
   * Stops the heartbeat and forgets this holder: a reservation still held no longer counts. Call when
   * the process stops serving. Never throws.
   */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    try {
      await this.repos.creditReservations.forgetHolder(this.name);
    } catch (err) {
      this.onError(err);
    }
  }
}
