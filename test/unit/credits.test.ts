import t, { type Test } from 'tap';
import { join } from 'node:path';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { Refusal } from '../../src/errors/refusal.js';
import { refusalOf } from '../helpers/refusal.js';
import { creditsConfig, MIB } from '../helpers/credits-config.js';
import type { CreditsConfig } from '../../src/config/schema.js';
import { CreditsService, fromMilli, HOLDER_TTL_MS, toMilli, type UploadReservation } from '../../src/credits/credits.js';
import { openDatabase } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import { tempDir } from '../helpers/temp-data.js';
import type { ReserverInput, ReserverResult } from '../helpers/credits-reserver.js';

async function setup(t: Test, over: Partial<CreditsConfig> = {}, now = new Date('2026-11-21T12:00:00Z')) {
  const file = join(tempDir(t), 'meta.db');
  const db = openDatabase(file);
  t.teardown(() => db.close());
  const repos: Repos = createRepos(db);
  const user = await repos.users.create('ana');
  const config = creditsConfig(over);
  const clock = { now };
  const credits = new CreditsService(repos, config, () => clock.now);
  t.teardown(() => credits.close());
  return { db, file, repos, credits, userId: user.id, clock, config };
}

t.test('the upload charge is ceil(size / unit) * perUnit, in milli-credits', async (t) => {
  const { credits } = await setup(t, { uploadCreditsPerUnit: 1.5 });
  t.equal(credits.uploadChargeMilli(0), 0);
  t.equal(credits.uploadChargeMilli(1), 1500);
  t.equal(credits.uploadChargeMilli(MIB), 1500);
  t.equal(credits.uploadChargeMilli(MIB + 1), 3000);
  t.equal(toMilli(0.001), 1);
  t.equal(fromMilli(1234), 1.234);
});

t.test('reservations never exceed the balance: 20 concurrent uploads in one process against a balance for 10', async (t) => {
  const { repos, credits, userId } = await setup(t);
  await credits.grant(userId, 20, 'test'); // 10 charges of 2 credits (1-unit files)
  const outcomes = await Promise.all(Array.from({ length: 20 }, () => credits.reserveUpload(userId, 1000).catch((err: unknown) => err as Refusal)));
  const reservations = outcomes.filter((o): o is UploadReservation => !(o instanceof Refusal));
  const refused = outcomes.filter((o): o is Refusal => o instanceof Refusal);
  t.equal(reservations.length, 10, '10 reserved');
  t.equal(refused.length, 10, '10 refused');
  for (const r of refused) {
    t.equal(r.kind, 'insufficient_credits');
    t.same(r.extra, { requiredCredits: 2, balance: 20 });
  }
  await Promise.all(reservations.map(async (r, i) => {
    await repos.transact((tx) => r.charge(tx, 900, `asset${i}`, `asset${i}/f.bin`));
    await r.release();
  }));
  t.equal((await repos.credits.account(userId)).balanceMilli, 0, 'all spent, never negative');
  t.equal((await repos.credits.account(userId)).usedMilli, 20_000);
  const ledger = await repos.credits.recent(userId, 100);
  t.equal(ledger.filter((e) => e.eventType === 'upload').length, 10);
  t.same(ledger.map((e) => e.balanceAfterMilli).slice(0, 10), [0, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000]);
});

t.test('a charge replaces its reservation at once: nothing is counted twice while the upload finishes', async (t) => {
  const { repos, credits, userId } = await setup(t);
  await credits.grant(userId, 4, 'test'); // two 1-unit uploads
  const first = await credits.reserveUpload(userId, 1000);
  await repos.transact((tx) => first.charge(tx, 1000, 'a', 'a/x'));
  // The first upload has not called release() yet (it is waiting for its durable flush).
  const second = await credits.reserveUpload(userId, 1000);
  t.equal(second.maxBytes, MIB, 'the remaining unit is available');
  await first.release();
  await second.release();
});

t.test('a declared length above the balance still reserves what is there (the file may be smaller)', async (t) => {
  const { credits, userId } = await setup(t);
  await credits.grant(userId, 2, 'test');
  const r = await credits.reserveUpload(userId, 5 * MIB);
  t.equal(r.maxBytes, MIB);
});

t.test('credits off: no reservation limit and no ledger entries', async (t) => {
  const { repos, credits, userId } = await setup(t, { enabled: false });
  const r = await credits.reserveUpload(userId, 10 * MIB);
  t.equal(r.maxBytes, Infinity);
  t.equal(await r.charge(repos, 10 * MIB, 'a', 'a/x'), undefined);
  await r.release();
  t.same(await repos.credits.recent(userId, 10), []);
  t.equal((await credits.state(userId, 0)).enabled, false);
});

t.test('the free monthly grant is one ledger entry per calendar month, however many ask at once', async (t) => {
  const { repos, credits, userId, clock } = await setup(t, { freeMonthlyCredits: 100 });
  await Promise.all([credits.ensureMonthlyGrant(userId), credits.ensureMonthlyGrant(userId)]);
  await credits.ensureMonthlyGrant(userId);
  let ledger = await repos.credits.recent(userId, 10);
  t.equal(ledger.length, 1);
  t.match(ledger[0], { eventType: 'free_monthly_grant', creditsMilli: -100_000, balanceAfterMilli: 100_000 });
  clock.now = new Date('2026-12-01T00:00:00Z');
  t.equal((await credits.state(userId, 0)).balance, 200, 'the state read grants December');
  ledger = await repos.credits.recent(userId, 10);
  t.equal(ledger.length, 2);
  t.equal((await repos.credits.account(userId)).usedMilli, 0, 'grants are not usage');
});

t.test('state: numbers as credits and the projected daily storage charge', async (t) => {
  const { credits, userId } = await setup(t);
  await credits.grant(userId, 12.345, 'test');
  const s = await credits.state(userId, 3_000_000_000);
  t.same(s, {
    enabled: true, balance: 12.345, usedCredits: 0, lowCreditThreshold: 5, projectedDailyStorageCredits: 1.5, freeMonthlyCredits: 0,
    uploadCreditUnitBytes: MIB, uploadCreditsPerUnit: 2, transferCreditsPerGb: 1, storageCreditsPerGbDay: 0.5,
    low: false, atZero: 'refuse-uploads', deliveryGraceHours: 72, depletedAt: null, deliverySuspendsAt: null, deliverySuspended: false,
  });
});

t.test('state: low below the threshold; at zero since when, and when delivery stops with suspend-delivery', async (t) => {
  const { credits, userId, clock, repos } = await setup(t, { atZero: 'suspend-delivery', deliveryGraceHours: 1.5 });
  const charge = (c: number) =>
    repos.credits.append({ userId, assetId: '', eventType: 'transfer', bytes: 0, rateMilli: 0, creditsMilli: toMilli(c), metadata: {} });
  await credits.grant(userId, 6, 'test');
  t.match(await credits.state(userId, 0), { balance: 6, low: false, depletedAt: null, deliverySuspendsAt: null, deliverySuspended: false });
  await charge(2);
  t.match(await credits.state(userId, 0), { balance: 4, low: true, depletedAt: null, deliverySuspendsAt: null }, 'below 5: low');
  const empty = await charge(4);
  const deadline = empty.createdAt + 1.5 * 3_600_000;
  clock.now = new Date(deadline - 1);
  t.match(await credits.state(userId, 0), {
    balance: 0, low: true, atZero: 'suspend-delivery', deliveryGraceHours: 1.5,
    depletedAt: new Date(empty.createdAt).toISOString(), deliverySuspendsAt: new Date(deadline).toISOString(), deliverySuspended: false,
  }, 'at zero: delivery stops 1.5 hours after');
  clock.now = new Date(deadline);
  t.match(await credits.state(userId, 0), { deliverySuspended: true }, 'and has stopped once that time came');

  const uploadsOnly = new CreditsService(repos, creditsConfig({ freeMonthlyCredits: 0 }), () => clock.now);
  t.match(await uploadsOnly.state(userId, 0), { atZero: 'refuse-uploads', depletedAt: new Date(empty.createdAt).toISOString(), deliverySuspendsAt: null, deliverySuspended: false }, 'refuse-uploads: delivery never stops');
  const off = new CreditsService(repos, creditsConfig({ enabled: false, atZero: 'suspend-delivery' }), () => clock.now);
  t.match(await off.state(userId, 0), { enabled: false, low: false, depletedAt: null, deliverySuspendsAt: null, deliverySuspended: false }, 'credits off: nothing is low or stopped');
});

t.test('two threads with their own connections race for one balance: exactly the affordable reservations', async (t) => {
  const { file, config, userId, credits, repos } = await setup(t);
  await credits.grant(userId, 30, 'test'); // 15 one-unit uploads
  const start = new SharedArrayBuffer(4);
  const workers = [0, 1].map(() => {
    const input: ReserverInput = { file, userId, attempts: 15, config, start };
    return new Worker(new URL('../helpers/credits-reserver.js', import.meta.url), { workerData: input });
  });
  const results = workers.map((w) => {
    const messages: unknown[] = [];
    w.on('message', (m) => messages.push(m));
    return { messages, exit: once(w, 'exit') };
  });
  await Promise.all(workers.map((w) => once(w, 'message'))); // both ready
  Atomics.store(new Int32Array(start), 0, 1);
  Atomics.notify(new Int32Array(start), 0);
  await Promise.all(results.map((r) => r.exit));
  const outcomes = results.map((r) => r.messages[1] as ReserverResult);
  t.equal(outcomes[0]!.reserved + outcomes[1]!.reserved, 15, '15 reserved in all');
  t.equal(outcomes[0]!.refused + outcomes[1]!.refused, 15, '15 refused');
  t.equal(await repos.creditReservations.liveSum(userId, Date.now() - HOLDER_TTL_MS), 30_000, 'the live reservations are the balance');
  t.equal((await refusalOf(credits.reserveUpload(userId, 1000))).kind, 'insufficient_credits', 'nothing left for a third process');
});

