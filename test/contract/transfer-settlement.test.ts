// Transfer charged (issue 37) on both metadata stores: the request log's bytes per owner and hour become
// ledger entries at the configured rate; a settlement run again charges nothing more, later traffic of
// an hour is charged as a difference, an hour is charged as one rounding of its bytes, and two
// processes settling at once charge each byte once.
import t, { type Test } from 'tap';
import type { CreditsConfig } from '../../src/config/schema.js';
import { settleTransfer, SETTLE_GRACE_MS } from '../../src/credits/transfer-settlement.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import type { SqlExecutor } from '../../src/db/store/types.js';
import { HOUR_MS } from '../../src/db/repos/traffic.js';
import { storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);
const GB = 1_000_000_000;

const config: CreditsConfig = {
  enabled: true, freeMonthlyCredits: 0, lowCreditThreshold: 0, uploadCreditUnitBytes: 1_000_000, uploadCreditsPerUnit: 0,
  transferCreditsPerGb: 10, storageCreditsPerGbDay: 0, atZero: 'refuse-uploads', deliveryGraceHours: 72,
};

let nextId = 1;
async function served(db: SqlExecutor, ownerId: string | null, time: number, bytes: number, surface: 'cdn' | 'proxy' = 'cdn', decision = 'allowed'): Promise<void> {
  await db.run(
    `INSERT INTO cdn_requests (id, time, host, owner_id, status, bytes_sent, client_ip, country, user_agent, duration_ms, surface, decision)
     VALUES (?, ?, 'cdn.test', ?, ?, ?, '127.0.0.1', '', 'test', 1, ?, ?)`,
    [nextId++, time, ownerId, decision === 'allowed' ? 200 : 402, bytes, surface, decision],
  );
}

async function transfers(repos: Repos, userId: string): Promise<Array<{ bytes: number; creditsMilli: number; period?: string }>> {
  return (await repos.credits.recent(userId, 100)).filter((e) => e.eventType === 'transfer').map((e) => ({ bytes: e.bytes, creditsMilli: e.creditsMilli, period: e.metadata.period })).reverse();
}

async function setup(t: Test, db: SqlExecutor): Promise<{ repos: Repos; alice: string; bob: string }> {
  const repos = createRepos(db as never);
  const alice = (await repos.users.create('alice')).id;
  const bob = (await repos.users.create('bob')).id;
  return { repos, alice, bob };
}

stores.each('hours of public traffic charged once, at the rate, with their period', async (t, open) => {
  const db = await open(t);
  const { repos, alice, bob } = await setup(t, db);
  const h0 = 1_800_000 * HOUR_MS;
  await served(db, alice, h0 + 1000, 300_000_000);
  await served(db, alice, h0 + 2000, 200_000_000, 'proxy');
  await served(db, bob, h0 + 3000, 1_000_000_000);
  await served(db, null, h0 + 4000, 5_000_000_000);
  await served(db, alice, h0 + HOUR_MS + 10, 100_000_000);
  let now = h0 + HOUR_MS + 60_000;
  const d = { repos, config, now: () => now };

  const job = await settleTransfer(d);
  t.same(job, { entries: 0, bytes: 0, creditsMilli: 0 }, 'the job waits for an hour to be over and flushed');
  now = h0 + HOUR_MS + SETTLE_GRACE_MS;
  t.same(await settleTransfer(d), { entries: 2, bytes: 1_500_000_000, creditsMilli: 15_000 }, 'the finished hour: one entry per user');
  const period = `${new Date(h0).toISOString()}/${new Date(h0 + HOUR_MS).toISOString()}`;
  t.same(await transfers(repos, alice), [{ bytes: 500_000_000, creditsMilli: 5_000, period }], 'CDN and proxied bytes of the hour, 0.5 GB at 10 credits/GB');
  t.same(await transfers(repos, bob), [{ bytes: GB, creditsMilli: 10_000, period }]);
  t.same(await settleTransfer(d), { entries: 0, bytes: 0, creditsMilli: 0 }, 'run again: nothing more');
  t.equal((await repos.credits.account(alice)).usedMilli, 5_000, 'usedCredits moved');

  // `s3edge credits settle`: the hour under way too; its later bytes are charged as a difference.
  t.same(await settleTransfer(d, { current: true }), { entries: 1, bytes: 100_000_000, creditsMilli: 1_000 });
  await served(db, alice, h0 + HOUR_MS + 20, 150_000_000);
  t.same(await settleTransfer(d, { current: true }), { entries: 1, bytes: 150_000_000, creditsMilli: 1_500 });
  t.same(await settleTransfer(d, { current: true }), { entries: 0, bytes: 0, creditsMilli: 0 });
});

stores.each('an hour is one rounding of its bytes, however many settlements it took', async (t, open) => {
  const db = await open(t);
  const { repos, alice } = await setup(t, db);
  const h0 = 1_800_100 * HOUR_MS;
  const now = h0 + 10 * 60_000;
  const d = { repos, config: { ...config, transferCreditsPerGb: 0.001 }, now: () => now };
  // 1 milli-credit per GB: 0.4 GB, then 0.4 GB more, then 0.4 GB: 1.2 GB is 1 milli-credit in all.
  for (let i = 0; i < 3; i++) {
    await served(db, alice, h0 + i, 400_000_000);
    await settleTransfer(d, { current: true });
  }
  const entries = await transfers(repos, alice);
  t.equal(entries.reduce((s, e) => s + e.creditsMilli, 0), 1, 'round(1.2) milli-credits, not 0 + 0 + 0 nor 1 + 1 + 1');
});

for (const kind of ['sqlite', 'postgres'] as const) {
  t.test(`two processes settling at once charge each byte once [${kind}]`, async (t) => {
    const [first, second] = await stores.pair(t, kind);
    const { repos, alice } = await setup(t, first);
    const h0 = 1_800_200 * HOUR_MS;
    for (let i = 0; i < 20; i++) await served(first, alice, h0 + i, 50_000_000);
    const now = h0 + HOUR_MS + SETTLE_GRACE_MS;
    const other = createRepos(second as never);
    const runs = [
      () => settleTransfer({ repos, config, now: () => now }),
      () => settleTransfer({ repos: other, config, now: () => now }),
      () => settleTransfer({ repos, config, now: () => now }, { current: true }),
    ];
    // At once on PostgreSQL. On SQLite one after the other: two connections in one thread cannot
    // overlap transactions (the second BEGIN IMMEDIATE blocks the thread the first needs to finish).
    const results = kind === 'postgres' ? await Promise.all(runs.map((run) => run())) : [await runs[0]!(), await runs[1]!(), await runs[2]!()];
    t.equal(results.reduce((s, r) => s + r.creditsMilli, 0), 10_000, 'charged once in all');
    t.same((await transfers(repos, alice)).map((e) => e.bytes), [GB], 'one entry for the hour');
    t.equal((await repos.credits.account(alice)).usedMilli, 10_000);
  });
}

stores.each("the proxy's refusals for want of credits are not charged", async (t, open) => {
  const db = await open(t);
  const { repos, alice } = await setup(t, db);
  const h0 = 1_800_300 * HOUR_MS;
  await served(db, alice, h0 + 1, 300_000_000, 'proxy');
  await served(db, alice, h0 + 2, 900_000_000, 'proxy', 'credits-depleted');
  const now = h0 + 10;
  t.same(await settleTransfer({ repos, config, now: () => now }, { current: true }), { entries: 1, bytes: 300_000_000, creditsMilli: 3_000 }, 'the 402s left out');
});

t.test('nothing is charged with credits off or a zero rate', async (t) => {
  const db = await (await import('../helpers/stores.js')).sqliteStore(t);
  const { repos, alice } = await setup(t, db);
  await served(db, alice, 1000, GB);
  const now = 10 * HOUR_MS;
  t.same(await settleTransfer({ repos, config: { ...config, enabled: false }, now: () => now }), { entries: 0, bytes: 0, creditsMilli: 0 });
  t.same(await settleTransfer({ repos, config: { ...config, transferCreditsPerGb: 0 }, now: () => now }), { entries: 0, bytes: 0, creditsMilli: 0 });
});
