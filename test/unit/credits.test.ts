import t, { type Test } from 'tap';
import { join } from 'node:path';
import { ApiError } from '../../src/api/errors.js';
import type { CreditsConfig } from '../../src/config/schema.js';
import { CreditsService, fromMilli, toMilli } from '../../src/credits/credits.js';
import { openDatabase } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import { tempDir } from '../helpers/temp-data.js';

const MIB = 1024 * 1024;

function setup(t: Test, over: Partial<CreditsConfig> = {}, now = new Date('2026-11-21T12:00:00Z')) {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const repos: Repos = createRepos(db);
  const user = repos.users.create('ana');
  const config: CreditsConfig = {
    enabled: true, freeMonthlyCredits: 0, lowCreditThreshold: 5, uploadCreditUnitBytes: MIB, uploadCreditsPerUnit: 2,
    transferCreditsPerGb: 1, storageCreditsPerGbDay: 0.5, ...over,
  };
  const clock = { now };
  const credits = new CreditsService(repos, config, () => clock.now);
  return { repos, credits, userId: user.id, clock };
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
