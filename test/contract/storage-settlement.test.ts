// Storage charged (issue 37) on both metadata stores: stored bytes sampled once an hour (the first
// sample of an hour stays), each UTC day charged on its byte-hours as one `storage` entry per user with
// its period, byte-days and rate; the day under way charged by `credits settle` and the rest of it
// later as a difference; a day is one rounding; two processes settling at once charge once.
import t, { type Test } from 'tap';
import type { CreditsConfig } from '../../src/config/schema.js';
import { sampleStorage, settleStorage } from '../../src/credits/storage-settlement.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import { DAY_MS } from '../../src/db/repos/storage-usage.js';
import type { SqlExecutor } from '../../src/db/store/types.js';
import { HOUR_MS } from '../../src/db/repos/traffic.js';
import { storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);
const GB = 1_000_000_000;

const config: CreditsConfig = {
  enabled: true, freeMonthlyCredits: 0, lowCreditThreshold: 0, uploadCreditUnitBytes: 1_000_000, uploadCreditsPerUnit: 0,
  transferCreditsPerGb: 0, storageCreditsPerGbDay: 24, atZero: 'refuse-uploads', deliveryGraceHours: 72,
};

async function store(db: SqlExecutor, ownerId: string, bucketId: string, key: string, size: number): Promise<void> {
  await db.run("INSERT INTO buckets (id, name, owner_id, region, created_at) VALUES (?, ?, ?, 'us-east-1', 0) ON CONFLICT (id) DO NOTHING", [bucketId, `b-${bucketId}`, ownerId]);
  await db.run("INSERT INTO objects (bucket_id, key, blob_id, size, etag, sha256, last_modified) VALUES (?, ?, 'blob', ?, 'e', 's', 0)", [bucketId, key, size]);
}

async function storageEntries(repos: Repos, userId: string): Promise<Array<{ bytes: number; creditsMilli: number; rateMilli: number; period?: string; hours?: number }>> {
  return (await repos.credits.recent(userId, 100))
    .filter((e) => e.eventType === 'storage')
    .map((e) => ({ bytes: e.bytes, creditsMilli: e.creditsMilli, rateMilli: e.rateMilli, period: e.metadata.period, hours: e.metadata.hours }))
    .reverse();
}

async function setup(t: Test, db: SqlExecutor): Promise<{ repos: Repos; alice: string; bob: string }> {
  void t;
  const repos = createRepos(db as never);
  const alice = (await repos.users.create('alice')).id;
  const bob = (await repos.users.create('bob')).id;
  return { repos, alice, bob };
}

const dayPeriod = (day: number): string => `${new Date(day).toISOString()}/${new Date(day + DAY_MS).toISOString()}`;

stores.each('a day of samples charged once, on its byte-hours, with its period and hours', async (t, open) => {
  const db = await open(t);
  const { repos, alice, bob } = await setup(t, db);
  const d0 = 20_000 * DAY_MS;
  let now = d0 + 5 * 60_000;
  const d = { repos, config, now: () => now };
  await store(db, alice, 'b1', 'a', 2 * GB);
  await store(db, bob, 'b2', 'b', GB / 2);
  // Two samples in one hour: the first stays.
  t.equal(await sampleStorage(d), 2, 'both owners sampled');
  await store(db, alice, 'b1', 'later', 10 * GB);
  now += 30 * 60_000;
  await sampleStorage(d);
  // Twelve hours at 2 GB, then alice's 12 GB the other twelve: 24 + 144 = 168 GB-hours, 7 GB-days.
  for (let h = 1; h < 12; h++) {
    now = d0 + h * HOUR_MS + 60_000;
    await db.run("UPDATE objects SET size = ? WHERE bucket_id = 'b1' AND key = 'later'", [0]);
    await sampleStorage(d);
    await db.run("UPDATE objects SET size = ? WHERE bucket_id = 'b1' AND key = 'later'", [10 * GB]);
  }
  for (let h = 12; h < 24; h++) {
    now = d0 + h * HOUR_MS + 60_000;
    await sampleStorage(d);
  }
  now = d0 + 23 * HOUR_MS + 30 * 60_000;
  t.same(await settleStorage(d), { entries: 0, bytes: 0, creditsMilli: 0 }, 'the job charges a day once it is over');
  now = d0 + DAY_MS + 60_000;
  const settled = await settleStorage(d);
  t.equal(settled.entries, 2, 'one entry per user for the day');
  t.same(await storageEntries(repos, alice), [{ bytes: 7 * GB, creditsMilli: 7 * 24_000, rateMilli: 24_000, period: dayPeriod(d0), hours: 24 }],
    '168 GB-hours are 7 GB-days at 24 credits a GB-day');
  t.same(await storageEntries(repos, bob), [{ bytes: GB / 2, creditsMilli: 12_000, rateMilli: 24_000, period: dayPeriod(d0), hours: 24 }]);
  t.same(await settleStorage(d), { entries: 0, bytes: 0, creditsMilli: 0 }, 'run again: nothing more');
  t.equal((await repos.credits.account(alice)).usedMilli, 168_000, 'usedCredits moved');
});

stores.each('the day under way: charged by settle, its later hours as a difference, one rounding in all', async (t, open) => {
  const db = await open(t);
  const { repos, alice } = await setup(t, db);
  const d0 = 20_010 * DAY_MS;
  let now = d0 + 60_000;
  // 1 milli-credit per GB-day: 0.4 GB for one hour, three times, is 0.05 milli-credits: nothing; at
  // 24 * 0.4 GB-hours (a whole day) it is 0.4, still 0; use 1 GB for 12 hours = 0.5 -> 1 (rounded half up).
  const d = { repos, config: { ...config, storageCreditsPerGbDay: 0.001 }, now: () => now };
  await store(db, alice, 'b1', 'a', GB);
  const partial = [];
  for (let h = 0; h < 12; h++) {
    now = d0 + h * HOUR_MS + 60_000;
    partial.push(await settleStorage(d, { current: true }));
  }
  const total = partial.reduce((s, r) => s + r.creditsMilli, 0);
  t.equal(total, 1, 'round(0.5) milli-credits charged once, not once per settlement');
  t.equal((await storageEntries(repos, alice)).length, 1, 'one entry so far');
  now = d0 + DAY_MS + 60_000;
  t.same(await settleStorage(d), { entries: 0, bytes: 0, creditsMilli: 0 }, 'the job finds the day charged (hours not sampled are not charged)');
  const charged = await repos.storageUsage.charged(alice, d0);
  t.same(charged, { hours: 12, bytes: GB / 2, creditsMilli: 1 }, 'the mark: 12 hours, 0.5 GB-days, 1 milli-credit');
});

for (const kind of ['sqlite', 'postgres'] as const) {
  t.test(`two processes settling at once charge a day once [${kind}]`, async (t) => {
    const [first, second] = await stores.pair(t, kind);
    const { repos, alice } = await setup(t, first);
    const d0 = 20_020 * DAY_MS;
    await store(first, alice, 'b1', 'a', 3 * GB);
    for (let h = 0; h < 24; h++) await repos.storageUsage.sample(alice, d0 + h * HOUR_MS, 3 * GB);
    const now = d0 + DAY_MS + 60_000;
    const other = createRepos(second as never);
    const runs = [
      () => settleStorage({ repos, config, now: () => now }),
      () => settleStorage({ repos: other, config, now: () => now }),
      () => settleStorage({ repos, config, now: () => now }, { current: true }),
    ];
    const results = kind === 'postgres' ? await Promise.all(runs.map((run) => run())) : [await runs[0]!(), await runs[1]!(), await runs[2]!()];
    // The day: 72 GB-days at 24 credits; the sample each run takes of the next day's first hour is charged by the current run only.
    const day = results.reduce((s, r) => s + r.creditsMilli, 0);
    const entries = await storageEntries(repos, alice);
    t.same(entries.filter((e) => e.period === dayPeriod(d0)).map((e) => e.creditsMilli), [72_000], 'one entry for the day, charged once');
    t.equal(day, entries.reduce((s, e) => s + e.creditsMilli, 0), 'what the runs report is what the ledger holds');
  });
}

t.test('nothing is charged with credits off or a zero rate', async (t) => {
  const db = await (await import('../helpers/stores.js')).sqliteStore(t);
  const { repos, alice } = await setup(t, db);
  await store(db, alice, 'b1', 'a', GB);
  const now = 3 * DAY_MS;
  t.same(await settleStorage({ repos, config: { ...config, enabled: false }, now: () => now }, { current: true }), { entries: 0, bytes: 0, creditsMilli: 0 });
  t.same(await settleStorage({ repos, config: { ...config, storageCreditsPerGbDay: 0 }, now: () => now }, { current: true }), { entries: 0, bytes: 0, creditsMilli: 0 });
  t.equal((await repos.credits.account(alice)).usedMilli, 0);
});
