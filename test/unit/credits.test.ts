import t, { type Test } from 'tap';
import { join } from 'node:path';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { ApiError } from '../../src/api/errors.js';
import type { CreditsConfig } from '../../src/config/schema.js';
import { CreditsService, fromMilli, HOLDER_TTL_MS, toMilli } from '../../src/credits/credits.js';
import { openDatabase, type Db } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import { tempDir } from '../helpers/temp-data.js';
import type { ReserverInput, ReserverResult } from '../helpers/credits-reserver.js';

const MIB = 1024 * 1024;

function creditsConfig(over: Partial<CreditsConfig> = {}): CreditsConfig {
  return {
    enabled: true, freeMonthlyCredits: 0, lowCreditThreshold: 5, uploadCreditUnitBytes: MIB, uploadCreditsPerUnit: 2,
    transferCreditsPerGb: 1, storageCreditsPerGbDay: 0.5, ...over,
  };
}

function setup(t: Test, over: Partial<CreditsConfig> = {}, now = new Date('2026-11-21T12:00:00Z')) {
  const file = join(tempDir(t), 'meta.db');
  const db = openDatabase(file);
  t.teardown(() => db.close());
  const repos: Repos = createRepos(db);
  const user = repos.users.create('ana');
  const config = creditsConfig(over);
  const clock = { now };
  const credits = new CreditsService(repos, config, () => clock.now);
  t.teardown(() => credits.close());
  return { db, file, repos, credits, userId: user.id, clock, config };
}

/** Another process on the same meta.db: its own connection, clock and holder. */
function otherProcess(t: Test, file: string, config: CreditsConfig, now: Date) {
  const db = openDatabase(file);
  t.teardown(() => db.close());
  const repos = createRepos(db);
  const clock = { now };
  const credits = new CreditsService(repos, config, () => clock.now);
  t.teardown(() => credits.close());
  return { db, repos, credits, clock };
}

function reservationRows(db: Db): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM credit_reservations').get() as { n: number }).n;
}

function statusOf(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

t.test('the upload charge is ceil(size / unit) * perUnit, in milli-credits', async (t) => {
  const { credits } = setup(t, { uploadCreditsPerUnit: 1.5 });
  t.equal(credits.uploadChargeMilli(0), 0);
  t.equal(credits.uploadChargeMilli(1), 1500);
  t.equal(credits.uploadChargeMilli(MIB), 1500);
  t.equal(credits.uploadChargeMilli(MIB + 1), 3000);
  t.equal(toMilli(0.001), 1);
  t.equal(fromMilli(1234), 1.234);
});

t.test('reservations never exceed the balance: 20 racing uploads against a balance for 10', async (t) => {
  const { repos, credits, userId } = setup(t);
  credits.grant(userId, 20, 'test'); // 10 charges of 2 credits (1-unit files)
  const outcomes = Array.from({ length: 20 }, () => {
    try {
      return credits.reserveUpload(userId, 1000);
    } catch (err) {
      return err as ApiError;
    }
  });
  const reservations = outcomes.filter((o) => !(o instanceof ApiError));
  const refused = outcomes.filter((o): o is ApiError => o instanceof ApiError);
  t.equal(reservations.length, 10, '10 reserved');
  t.equal(refused.length, 10, '10 refused');
  for (const r of refused) {
    t.equal(r.statusCode, 402);
    t.same(r.extra, { requiredCredits: 2, balance: 20 });
  }
  for (const [i, r] of reservations.entries()) {
    if (r instanceof ApiError) continue;
    repos.transaction(() => r.charge(900, `asset${i}`, `asset${i}/f.bin`));
    r.release();
  }
  t.equal(repos.credits.account(userId).balanceMilli, 0, 'all spent, never negative');
  t.equal(repos.credits.account(userId).usedMilli, 20_000);
  const ledger = repos.credits.recent(userId, 100);
  t.equal(ledger.filter((e) => e.eventType === 'upload').length, 10);
  t.same(ledger.map((e) => e.balanceAfterMilli).slice(0, 10), [0, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000]);
});

t.test('without a declared length the reservation takes what is available and bounds the file', async (t) => {
  const { repos, credits, userId } = setup(t);
  credits.grant(userId, 7, 'test'); // 3 units of 2 credits, 1 credit left over
  const r = credits.reserveUpload(userId, undefined);
  t.equal(r.maxBytes, 3 * MIB);
  t.equal(statusOf(() => credits.reserveUpload(userId, 10)).statusCode, 402, 'a second upload finds nothing left');
  const refusal = r.refusal(3 * MIB + 1);
  t.equal(refusal.statusCode, 402);
  t.same(refusal.extra, { requiredCredits: 8, balance: 7 });
  t.throws(() => r.charge(3 * MIB + 1, 'a', 'a/x'), ApiError, 'charging above the reservation is refused');
  repos.transaction(() => r.charge(2 * MIB, 'a', 'a/x'));
  r.release();
  r.release();
  t.equal(repos.credits.account(userId).balanceMilli, 3000);
  t.equal(credits.reserveUpload(userId, 10).maxBytes, MIB, 'released credits are available again');
});

t.test('a charge replaces its reservation at once: nothing is counted twice while the upload finishes', async (t) => {
  const { repos, credits, userId } = setup(t);
  credits.grant(userId, 4, 'test'); // two 1-unit uploads
  const first = credits.reserveUpload(userId, 1000);
  repos.transaction(() => first.charge(1000, 'a', 'a/x'));
  // The first upload has not called release() yet (it is waiting for its durable flush).
  const second = credits.reserveUpload(userId, 1000);
  t.equal(second.maxBytes, MIB, 'the remaining unit is available');
  first.release();
  second.release();
});

t.test('a declared length above the balance still reserves what is there (the file may be smaller)', async (t) => {
  const { credits, userId } = setup(t);
  credits.grant(userId, 2, 'test');
  const r = credits.reserveUpload(userId, 5 * MIB);
  t.equal(r.maxBytes, MIB);
});

t.test('credits off: no reservation limit and no ledger entries', async (t) => {
  const { repos, credits, userId } = setup(t, { enabled: false });
  const r = credits.reserveUpload(userId, 10 * MIB);
  t.equal(r.maxBytes, Infinity);
  t.equal(r.charge(10 * MIB, 'a', 'a/x'), undefined);
  t.same(repos.credits.recent(userId, 10), []);
  t.equal(credits.state(userId, 0).enabled, false);
});

t.test('the free monthly grant is one ledger entry per calendar month', async (t) => {
  const { repos, credits, userId, clock } = setup(t, { freeMonthlyCredits: 100 });
  credits.ensureMonthlyGrant(userId);
  credits.ensureMonthlyGrant(userId);
  let ledger = repos.credits.recent(userId, 10);
  t.equal(ledger.length, 1);
  t.match(ledger[0], { eventType: 'free_monthly_grant', creditsMilli: -100_000, balanceAfterMilli: 100_000 });
  clock.now = new Date('2026-12-01T00:00:00Z');
  t.equal(credits.state(userId, 0).balance, 200, 'the state read grants December');
  ledger = repos.credits.recent(userId, 10);
  t.equal(ledger.length, 2);
  t.equal(repos.credits.account(userId).usedMilli, 0, 'grants are not usage');
});

t.test('state: numbers as credits and the projected daily storage charge', async (t) => {
  const { credits, userId } = setup(t);
  credits.grant(userId, 12.345, 'test');
  const s = credits.state(userId, 3_000_000_000);
  t.same(s, {
    enabled: true, balance: 12.345, usedCredits: 0, lowCreditThreshold: 5, projectedDailyStorageCredits: 1.5, freeMonthlyCredits: 0,
    uploadCreditUnitBytes: MIB, uploadCreditsPerUnit: 2, transferCreditsPerGb: 1, storageCreditsPerGbDay: 0.5,
  });
});

t.test('two processes on one database reserve against one balance', async (t) => {
  const a = setup(t);
  const b = otherProcess(t, a.file, a.config, a.clock.now);
  a.credits.grant(a.userId, 10, 'test'); // 5 one-unit uploads
  const taken: { credits: CreditsService; r: ReturnType<CreditsService['reserveUpload']> }[] = [];
  let refused = 0;
  for (let i = 0; i < 12; i++) {
    const credits = i % 2 === 0 ? a.credits : b.credits;
    try {
      taken.push({ credits, r: credits.reserveUpload(a.userId, 1000) });
    } catch (err) {
      t.equal((err as ApiError).statusCode, 402);
      refused++;
    }
  }
  t.equal(taken.length, 5, 'five reservations between the two');
  t.equal(refused, 7);
  t.equal(a.repos.creditReservations.liveSum(a.userId, 0), 10_000, 'the reservations add up to the balance, no more');
  t.not(a.credits.holder, b.credits.holder);

  // A release in one process frees the credits for the other.
  const first = taken.shift();
  first?.r.release();
  first?.r.release();
  const again = b.credits.reserveUpload(a.userId, 1000);
  t.equal(again.maxBytes, MIB, 'the released unit is available to the other process');
  t.equal(statusOf(() => a.credits.reserveUpload(a.userId, 1000)).statusCode, 402);
  taken.push({ credits: b.credits, r: again });

  // Each charges in its own commit transaction: the ledger adds up exactly.
  for (const [i, { credits, r }] of taken.entries()) {
    const repos = credits === a.credits ? a.repos : b.repos;
    repos.transaction(() => r.charge(1000, `asset${i}`, `asset${i}/f`));
    r.release();
  }
  t.equal(a.repos.credits.account(a.userId).balanceMilli, 0);
  t.equal(a.repos.credits.account(a.userId).usedMilli, 10_000);
  t.equal(reservationRows(a.db), 0, 'no rows left');
});

t.test('two threads with their own connections race for one balance: exactly the affordable reservations', async (t) => {
  const { file, config, userId, credits, repos } = setup(t);
  credits.grant(userId, 30, 'test'); // 15 one-unit uploads
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
  t.equal(repos.creditReservations.liveSum(userId, Date.now() - HOLDER_TTL_MS), 30_000, 'the live reservations are the balance');
  t.equal(statusOf(() => credits.reserveUpload(userId, 1000)).statusCode, 402, 'nothing left for a third process');
});

t.test('a dead holder\'s reservations stop counting after a minute and are deleted', async (t) => {
  const a = setup(t);
  a.credits.grant(a.userId, 4, 'test'); // two units
  const crashed = a.credits.reserveUpload(a.userId, undefined); // takes both, then its process "dies"
  t.equal(crashed.maxBytes, 2 * MIB);
  const b = otherProcess(t, a.file, a.config, new Date(a.clock.now.getTime() + HOLDER_TTL_MS - 1000));
  t.equal(statusOf(() => b.credits.reserveUpload(a.userId, 1000)).statusCode, 402, 'a holder seen 59 s ago is alive');
  b.clock.now = new Date(a.clock.now.getTime() + HOLDER_TTL_MS + 1000);
  const r = b.credits.reserveUpload(a.userId, 1000);
  t.equal(r.maxBytes, MIB, 'not seen for 61 s: its reservation no longer counts');
  t.equal(reservationRows(a.db), 1, 'and its row is gone: only the new reservation is left');

  // The "dead" process was only stalled: its charge finds its credits partly taken and is refused,
  // so the balance never goes negative. It still fits in what is left.
  const tooBig = statusOf(() => a.repos.transaction(() => crashed.charge(2 * MIB, 'x', 'x/f')));
  t.equal(tooBig.statusCode, 402);
  a.repos.transaction(() => crashed.charge(MIB, 'x', 'x/f'));
  crashed.release();
  b.repos.transaction(() => r.charge(MIB, 'y', 'y/f'));
  r.release();
  t.equal(a.repos.credits.account(a.userId).balanceMilli, 0, 'exactly spent');
});

t.test('a process that stops cleanly forgets its holder: what it still held is free', async (t) => {
  const a = setup(t);
  a.credits.grant(a.userId, 2, 'test');
  a.credits.reserveUpload(a.userId, 1000);
  const b = otherProcess(t, a.file, a.config, a.clock.now);
  t.equal(statusOf(() => b.credits.reserveUpload(a.userId, 1000)).statusCode, 402);
  a.credits.close();
  t.equal(b.credits.reserveUpload(a.userId, 1000).maxBytes, MIB);
});

t.test('a charge rolled back with its commit keeps the reservation until release', async (t) => {
  const { repos, credits, userId, db } = setup(t);
  credits.grant(userId, 2, 'test');
  const r = credits.reserveUpload(userId, 1000);
  t.throws(() => repos.transaction(() => {
    r.charge(1000, 'a', 'a/f');
    throw new Error('the commit failed');
  }), /the commit failed/);
  t.equal(repos.credits.account(userId).balanceMilli, 2000, 'nothing charged');
  t.equal(reservationRows(db), 1, 'the reservation is back with the rollback');
  t.equal(statusOf(() => credits.reserveUpload(userId, 1000)).statusCode, 402);
  r.release();
  t.equal(reservationRows(db), 0);
  t.equal(credits.reserveUpload(userId, 1000).maxBytes, MIB, 'released');
});
