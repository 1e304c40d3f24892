// credit_accounts.depleted_at (issue 37: what happens at zero) on both metadata stores: set to the time
// of the entry that took the balance to zero or below, kept while it stays there, cleared by the entry
// that takes it above zero (a grant, the monthly free credits), in that entry's own statement (a rolled
// back entry leaves it as it was); exact when two processes charge at once. Then the delivery
// suspension read over it: who is suspended once the grace is over, at most a second old, back within
// a second of a top-up.
import t, { type Test } from 'tap';
import type { CreditsConfig } from '../../src/config/schema.js';
import { CreditsService } from '../../src/credits/credits.js';
import { DeliverySuspensions, deliverySuspensions } from '../../src/credits/delivery-suspension.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import type { NewLedgerEntry } from '../../src/db/repos/credits.js';
import type { SqlStore } from '../../src/db/store/types.js';
import { storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 11, 3, 12);

const config: CreditsConfig = {
  enabled: true, freeMonthlyCredits: 5, lowCreditThreshold: 10, uploadCreditUnitBytes: 1_000_000, uploadCreditsPerUnit: 1,
  transferCreditsPerGb: 1, storageCreditsPerGbDay: 0, atZero: 'suspend-delivery', deliveryGraceHours: 2,
};

/** A charge (positive) or an addition (negative) of `credits`. */
function entry(userId: string, credits: number): NewLedgerEntry {
  return {
    userId, assetId: '', eventType: credits > 0 ? 'transfer' : 'grant', bytes: 0, rateMilli: 0, creditsMilli: Math.round(credits * 1000),
    metadata: {},
  };
}

async function setup(t: Test, store: SqlStore, now: { ms: number }): Promise<{ repos: Repos; alice: string; bob: string }> {
  void t;
  const repos = createRepos(store, { clock: () => now.ms });
  return { repos, alice: (await repos.users.create('alice')).id, bob: (await repos.users.create('bob')).id };
}

stores.each('depleted_at: set by the entry that reaches zero, kept below it, cleared above it', async (t, open) => {
  const now = { ms: T0 };
  const { repos, alice } = await setup(t, await open(t), now);
  const depleted = async (): Promise<number | null> => (await repos.credits.account(alice)).depletedAt;
  t.equal(await depleted(), null, 'no account yet: not depleted');
  await repos.credits.append(entry(alice, -10));
  t.equal(await depleted(), null, 'a positive balance');
  now.ms = T0 + 1000;
  await repos.credits.append(entry(alice, 4));
  t.equal(await depleted(), null, '6 left');
  now.ms = T0 + 2000;
  const atZero = await repos.credits.append(entry(alice, 6));
  t.equal(atZero.balanceAfterMilli, 0);
  t.equal(await depleted(), T0 + 2000, 'exactly zero is depleted, from the time of that entry');
  now.ms = T0 + 3000;
  await repos.credits.append(entry(alice, 1.5));
  t.equal(await depleted(), T0 + 2000, 'further below: still since the first time it got there');
  now.ms = T0 + 4000;
  await repos.credits.append(entry(alice, -1.5));
  t.equal(await depleted(), T0 + 2000, 'a grant back to zero: still depleted');
  now.ms = T0 + 5000;
  await repos.credits.append(entry(alice, -0.001));
  t.equal(await depleted(), null, 'one milli-credit above zero: cleared');
  now.ms = T0 + 6000;
  await repos.credits.append(entry(alice, 0.002));
  t.equal(await depleted(), T0 + 6000, 'below again: a new time');
  t.same(await repos.credits.depletedBy(T0 + 6000), [alice]);
  t.same(await repos.credits.depletedBy(T0 + 5999), [], 'depletedBy: since at or before the cutoff');
});

stores.each("depleted_at moves in the entry's transaction: rolled back with it", async (t, open) => {
  const now = { ms: T0 };
  const { repos, alice } = await setup(t, await open(t), now);
  await repos.credits.append(entry(alice, -1));
  await t.rejects(
    repos.transact(async (r) => {
      await r.credits.append(entry(alice, 3));
      t.equal((await r.credits.account(alice)).depletedAt, T0, 'inside the transaction: depleted');
      throw new Error('the commit failed');
    }),
    /the commit failed/,
  );
  t.same(await repos.credits.account(alice), { userId: alice, balanceMilli: 1000, usedMilli: 0, grantedMonth: '', depletedAt: null }, 'balance and depleted_at as before');
});

stores.each('the monthly free credits clear it; the job gives them to accounts at zero that lack them', async (t, open) => {
  const now = { ms: T0 };
  const { repos, alice, bob } = await setup(t, await open(t), now);
  const credits = new CreditsService(repos, config, () => new Date(now.ms));
  await credits.ensureMonthlyGrant(alice);
  await credits.ensureMonthlyGrant(bob);
  await repos.credits.append(entry(alice, 8));
  await repos.credits.append(entry(bob, 2));
  t.equal((await repos.credits.account(alice)).depletedAt, T0, 'alice: 5 - 8 = -3');
  t.equal(await credits.grantMonthlyToDepleted(), 0, 'this month given already: nothing to do');
  t.equal((await credits.state(alice, 0)).balance, -3, 'reading the state gives nothing more this month');

  now.ms = Date.UTC(2027, 0, 1, 0, 5);
  t.same(await repos.credits.depletedOutsideMonth('2027-01'), [alice], 'the new month: alice is at zero without its grant');
  t.equal(await credits.grantMonthlyToDepleted(), 1);
  t.same(await repos.credits.account(alice), { userId: alice, balanceMilli: 2000, usedMilli: 8000, grantedMonth: '2027-01', depletedAt: null }, 'given: above zero, cleared');
  t.equal((await repos.credits.account(bob)).grantedMonth, '2026-12', 'bob (above zero) waits for his own next activity, as before');
  t.equal(await credits.grantMonthlyToDepleted(), 0, 'once');

  // A grant too small to climb out leaves the first time.
  await repos.credits.append(entry(alice, 10));
  now.ms = Date.UTC(2027, 1, 1, 0, 5);
  await credits.grantMonthlyToDepleted();
  t.match(await repos.credits.account(alice), { balanceMilli: -3000, grantedMonth: '2027-02', depletedAt: Date.UTC(2027, 0, 1, 0, 5) }, '-8 + 5: still at zero since January');
});

stores.each('two processes charging (at once on PostgreSQL): depleted_at is the time of the entry that reached zero', async (t, open, kind) => {
  void open;
  const [a, b] = await stores.pair(t, kind);
  let tick = T0;
  const clock = (): number => ++tick;
  const ra = createRepos(a, { clock });
  const rb = createRepos(b, { clock });
  const alice = (await ra.users.create('alice')).id;
  await ra.credits.append(entry(alice, -10));
  const charge = (i: number) => (i % 2 === 0 ? ra : rb).credits.append(entry(alice, 1));
  // At once on PostgreSQL. On SQLite the two connections take turns: in one thread they cannot overlap
  // transactions (the second BEGIN IMMEDIATE blocks the thread the first needs to finish).
  const entries = [];
  if (kind === 'postgres') entries.push(...(await Promise.all(Array.from({ length: 30 }, (_, i) => charge(i)))));
  else for (let i = 0; i < 30; i++) entries.push(await charge(i));
  const account = await ra.credits.account(alice);
  t.equal(account.balanceMilli, -20_000, 'every charge applied');
  const first = entries.find((e) => e.balanceAfterMilli === 0);
  t.ok(first, 'one entry reached zero');
  t.equal(account.depletedAt, first?.createdAt, 'depleted since that entry');
  await rb.credits.append(entry(alice, -21));
  t.equal((await ra.credits.account(alice)).depletedAt, null, 'a grant through the other process clears it');
});

stores.each('delivery suspension: after the grace, read at most once a second, back within a second of a top-up', async (t, open) => {
  const now = { ms: T0 };
  const { repos, alice, bob } = await setup(t, await open(t), now);
  let elapsed = 0;
  const errors: unknown[] = [];
  const suspensions = deliverySuspensions(config, { repos, now: () => now.ms, monotonic: () => elapsed, onError: (e) => errors.push(e) });
  t.ok(suspensions instanceof DeliverySuspensions);
  t.equal(deliverySuspensions({ ...config, atZero: 'refuse-uploads' }, { repos, now: () => now.ms, monotonic: () => elapsed }), undefined, "'refuse-uploads': nothing at all");
  t.equal(deliverySuspensions({ ...config, enabled: false }, { repos, now: () => now.ms, monotonic: () => elapsed }), undefined, 'credits off: nothing at all');
  if (!suspensions) return;

  await repos.credits.append(entry(alice, 1));
  await repos.credits.append(entry(bob, -1));
  t.equal(suspensions.held(alice), undefined, 'nothing held before the first read');
  t.equal(await suspensions.has(alice), false, 'depleted, within the grace (2 h)');
  now.ms = T0 + 2 * HOUR - 1;
  t.equal(suspensions.held(alice), false, 'the read is held for a second');
  elapsed = 1000;
  t.equal(suspensions.held(alice), undefined, 'then stale');
  t.equal(await suspensions.has(alice), false, 'a millisecond before the grace ends');
  now.ms = T0 + 2 * HOUR;
  elapsed = 2000;
  t.equal(await suspensions.has(alice), true, 'grace over: suspended');
  t.equal(suspensions.held(bob), false, 'bob (above zero) is not');

  // A top-up (here through the repositories, as `s3edge credits grant` in another process).
  await repos.credits.append(entry(alice, -5));
  elapsed = 2999;
  t.equal(suspensions.held(alice), true, 'the held read stands for the rest of its second');
  elapsed = 3000;
  t.equal(await suspensions.has(alice), false, 'delivery back at the next read');

  // Concurrent askers share one read.
  await repos.credits.append(entry(bob, 2));
  elapsed = 4000;
  now.ms = T0 + 5 * HOUR;
  const answers = await Promise.all([suspensions.has(bob), suspensions.has(bob), suspensions.has(alice)]);
  t.same(answers, [true, true, false]);
  t.same(errors, [], 'no read failed');
});

stores.each('delivery suspension: a failed read keeps the last answer and is tried again a second later', async (t, open) => {
  const now = { ms: T0 };
  const store = await open(t);
  const { repos, alice, bob } = await setup(t, store, now);
  let elapsed = 0;
  const errors: unknown[] = [];
  const s = new DeliverySuspensions({ repos, graceMs: 0, now: () => now.ms, monotonic: () => elapsed, onError: (e) => errors.push(e) });
  await repos.credits.append(entry(alice, 1));
  t.equal(await s.has(alice), true);
  // The table away for a moment: every read of it fails, as a database gone would.
  await store.run('ALTER TABLE credit_accounts RENAME TO credit_accounts_away');
  elapsed = 1000;
  t.equal(await s.has(alice), true, 'the last read stands');
  t.equal(await s.has(bob), false);
  t.equal(errors.length, 1, 'one failed read, reported');
  elapsed = 1500;
  t.equal(s.held(alice), true, 'held for a second after the failure: not tried on every request');
  await store.run('ALTER TABLE credit_accounts_away RENAME TO credit_accounts');
  await repos.credits.append(entry(alice, -2));
  elapsed = 2000;
  t.equal(await s.has(alice), false, 'read again a second later: the top-up seen');
  t.equal(errors.length, 1);
});
