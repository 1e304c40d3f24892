// Transfer charged (issue 37, docs/API.md "Usage and credits"): bytes served to the public on a user's
// behalf, read from the request log (CDN hits and misses of their assets and public buckets, proxied
// responses of their project hostnames), charged at credits.transferCreditsPerGb as ledger entries per
// user and hour. S3 and API downloads are the owner's own reads through their keys: not charged, as on R2.
//
// Exact across processes and runs: per owner and hour, transfer_charges holds the bytes charged so
// far; a settlement charges the difference to what the log holds now, and moves the mark in the same
// transaction as the entry, only if nobody moved it meanwhile (two nodes, or a re-run, charge once).
// The credits of an hour are the rounding of its whole bytes, less what earlier entries of the hour
// charged, so several settlements of one hour add up to one.
//
// The singleton job settles hours once they are over (and the request log's flushes of them are in:
// SETTLE_GRACE_MS), one entry per user per hour; `s3edge credits settle` also charges the hour under
// way, whose later traffic the next settlement charges.
import type { CreditsConfig } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import { HOUR_MS, hourOf } from '../db/repos/traffic.js';
import { perGbCharge, toMilli } from './credits.js';
/** An hour is final this long after it ended: the request log's buffers have flushed it. */
export const SETTLE_GRACE_MS = 5 * 60_000;
/** Where the hours before which everything is settled are marked (settings). */
const SETTLED_UNTIL = 'credits.transferSettledUntil';

export interface SettlementResult {
  entries: number;
  bytes: number;
  /** Milli-credits charged. */
  creditsMilli: number;
}

export interface TransferSettlementDeps {
  repos: Pick<Repos, 'transferCharges' | 'settings' | 'transact' | 'users'>;
  config: CreditsConfig;
  now: () => number;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Adds one owner's charge of a settlement to its result (an entry only when it charged credits). */
export function tally(result: SettlementResult, charged: { bytes: number; creditsMilli: number }): void {
  result.bytes += charged.bytes;
  if (charged.creditsMilli > 0) {
    result.entries++;
    result.creditsMilli += charged.creditsMilli;
  }
}

/**
 * Charges the transfer the request log holds beyond what was charged. `current`: also the hours not
 * over yet (`s3edge credits settle`); otherwise only hours over for SETTLE_GRACE_MS (the job).
 */
export async function settleTransfer(d: TransferSettlementDeps, opts: { current?: boolean } = {}): Promise<SettlementResult> {
  const result: SettlementResult = { entries: 0, bytes: 0, creditsMilli: 0 };
  const rateMilli = toMilli(d.config.transferCreditsPerGb);
  if (!d.config.enabled || rateMilli <= 0) return result;
  const now = d.now();
  const from = Number((await d.repos.settings.get(SETTLED_UNTIL)) ?? 0);
  // Hours before `final` are over and flushed: once settled, never looked at again.
  const final = hourOf(now - SETTLE_GRACE_MS);
  const to = opts.current ? now + 1 : final;
  if (to <= from) return result;
  for (const h of await d.repos.transferCharges.served(from, to)) {
    const charged = await d.repos.transact(async (r) => {
      const before = await r.transferCharges.charged(h.ownerId, h.hour);
      if (h.bytes <= before) return undefined;
      // A request log row may outlive its user: nobody to charge.
      if (!(await r.users.getById(h.ownerId))) return undefined;
      if (!(await r.transferCharges.advance(h.ownerId, h.hour, before, h.bytes))) return undefined;
      const creditsMilli = perGbCharge(h.bytes, rateMilli) - perGbCharge(before, rateMilli);
      const bytes = h.bytes - before;
      if (creditsMilli > 0) {
        await r.credits.append({
          userId: h.ownerId, assetId: '', eventType: 'transfer', bytes, rateMilli, creditsMilli,
          metadata: { period: `${iso(h.hour)}/${iso(h.hour + HOUR_MS)}` },
        });
      }
      return { bytes, creditsMilli };
    });
    if (charged) tally(result, charged);
  }
  if (final > from) await d.repos.settings.set(SETTLED_UNTIL, String(final));
  return result;
}
