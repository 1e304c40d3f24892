// Storage charged (issue 37, docs/API.md "Usage and credits"): what each user stores (objects, noncurrent
// versions, parts of uploads in progress, assets: the counters of migration 027) is sampled once an
// hour, and each UTC day is charged at credits.storageCreditsPerGbDay on its byte-hours: a `storage`
// ledger entry per user and day whose `bytes` are byte-days (the day's byte-hours / 24), so its credits
// are bytes / 10^9 * rate, the arithmetic of a transfer entry. An hour without a sample (no process
// was running) is not charged.
//
// Exact across processes and runs, as transfer is: per owner and day, storage_charges holds the hours,
// byte-days and credits charged so far; a settlement charges the day's samples beyond them and moves
// the mark in the entry's transaction, only if nobody moved it meanwhile. A day's credits are one
// rounding of its byte-hours, however many settlements it took.
//
// The singleton job samples and charges the days that are over; `s3edge credits settle` samples now and
// also charges the day under way (its later hours are charged by the next settlement).
import type { CreditsConfig } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import { DAY_MS } from '../db/repos/storage-usage.js';
import { hourOf } from '../db/repos/traffic.js';
import { perGbCharge, toMilli } from './credits.js';
import { tally, type SettlementResult } from './transfer-settlement.js';

/** Where the days before which everything is charged are marked (settings). */
const SETTLED_UNTIL = 'credits.storageSettledUntil';
/** Samples are kept this long after their day is charged (to check an entry against them). */
const SAMPLES_KEPT_MS = 7 * DAY_MS;

export interface StorageSettlementDeps {
  repos: Pick<Repos, 'storageUsage' | 'settings' | 'transact' | 'users'>;
  config: CreditsConfig;
  now: () => number;
}

const dayOf = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;
const iso = (ms: number): string => new Date(ms).toISOString();

/** Records every owner's stored bytes for the hour under way, unless already sampled (the first sample of an hour stays). */
export async function sampleStorage(d: StorageSettlementDeps): Promise<number> {
  const hour = hourOf(d.now());
  const owners = (await d.repos.storageUsage.allOwners()).filter((o) => o.bytes > 0);
  if (owners.length === 0) return 0;
  await d.repos.transact(async (r) => {
    for (const o of owners) await r.storageUsage.sample(o.ownerId, hour, o.bytes);
  });
  return owners.length;
}

/**
 * Samples the hour under way, then charges the sampled hours not charged yet. `current`: also the day
 * under way (`s3edge credits settle`); otherwise only days that are over (the job).
 */
export async function settleStorage(d: StorageSettlementDeps, opts: { current?: boolean } = {}): Promise<SettlementResult> {
  const result: SettlementResult = { entries: 0, bytes: 0, creditsMilli: 0 };
  const rateMilli = toMilli(d.config.storageCreditsPerGbDay);
  // Storage not charged: nothing sampled either (a rate set later charges from then on).
  if (!d.config.enabled || rateMilli <= 0) return result;
  await sampleStorage(d);
  const now = d.now();
  const from = Number((await d.repos.settings.get(SETTLED_UNTIL)) ?? 0);
  const final = dayOf(now);
  const to = opts.current ? now + 1 : final;
  if (to <= from) return result;
  for (const day of await d.repos.storageUsage.days(from, to)) {
    const charged = await d.repos.transact(async (r) => {
      const before = await r.storageUsage.charged(day.ownerId, day.day);
      if (day.hours <= before.hours) return undefined;
      if (!(await r.users.getById(day.ownerId))) return undefined;
      const byteDays = day.byteHours / 24;
      const total = { hours: day.hours, bytes: Math.round(byteDays), creditsMilli: perGbCharge(byteDays, rateMilli) };
      if (!(await r.storageUsage.advance(day.ownerId, day.day, before.hours, total))) return undefined;
      const bytes = total.bytes - before.bytes;
      const creditsMilli = total.creditsMilli - before.creditsMilli;
      if (creditsMilli > 0) {
        await r.credits.append({
          userId: day.ownerId, assetId: '', eventType: 'storage', bytes, rateMilli, creditsMilli,
          metadata: { period: `${iso(day.day)}/${iso(day.day + DAY_MS)}`, hours: day.hours - before.hours },
        });
      }
      return { bytes, creditsMilli };
    });
    if (charged) tally(result, charged);
  }
  if (final > from) {
    await d.repos.settings.set(SETTLED_UNTIL, String(final));
    await d.repos.storageUsage.pruneSamples(final - SAMPLES_KEPT_MS);
  }
  return result;
}
