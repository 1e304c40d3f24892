// Storage quota reservations (credits/quotas.ts) on both metadata stores: a user's quota counts their
// buckets and assets together, a bucket's its own bytes; an upload reserves exactly its size or up to a
// bound, and is refused naming the quota; two processes racing for one quota reserve exactly what fits
// and no more (at once on PostgreSQL); a dead holder's reservations stop counting after a minute; no
// quota costs no write.
import t, { type Test } from 'tap';
import { Refusal } from '../../src/errors/refusal.js';
import { refusalOf } from '../helpers/refusal.js';
import { QuotaService, type QuotaReservation, type QuotaTarget } from '../../src/credits/quotas.js';
import { HOLDER_TTL_MS, ReservationHolder } from '../../src/credits/reservation-holder.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import type { SqlExecutor, SqlStore } from '../../src/db/store/types.js';
import { storeMatrix, type StoreKind } from '../helpers/stores.js';

const stores = storeMatrix(t);
const KIB = 1024;

async function bucketRow(db: SqlExecutor, id: string, name: string, owner: string): Promise<void> {
  await db.run('INSERT INTO buckets (id, name, owner_id, region, created_at) VALUES (?, ?, ?, ?, 0)', [id, name, owner, 'us-east-1']);
}
async function putObject(db: SqlExecutor, bucketId: string, key: string, size: number): Promise<void> {
  await db.run(
    `INSERT INTO objects (bucket_id, key, blob_id, size, etag, sha256, last_modified) VALUES (?, ?, 'blob', ?, 'e', 's', 0)
     ON CONFLICT (bucket_id, key) DO UPDATE SET size = excluded.size`,
    [bucketId, key, size],
  );
}
async function asset(db: SqlExecutor, id: string, userId: string, size: number): Promise<void> {
  await db.run(
    `INSERT INTO assets (id, user_id, blob_id, file_name, content_type, size, sha256, etag, visibility, kind, created_at, updated_at)
     VALUES (?, ?, 'blob', 'f', 'text/plain', ?, 's', 'e', 'public', 'file', 0, 0)`,
    [id, userId, size],
  );
}

/** One gateway process on `store`: its repositories, a clock it may move, its holder and quota service. */
function side(t: Test, store: SqlStore | SqlExecutor) {
  const repos: Repos = createRepos(store as never);
  const clock = { now: new Date('2026-12-03T12:00:00Z') };
  const holders = new ReservationHolder(repos, () => clock.now);
  // No cache: every test sees a quota set a moment before at once (the cache has a test of its own).
  const quotas = new QuotaService(repos, holders, () => clock.now, { ttlMs: 1 });
  t.teardown(() => holders.close());
  return { repos, clock, holders, quotas };
}

async function setup(t: Test, store: SqlStore) {
  const a = side(t, store);
  const ana = (await a.repos.users.create('ana')).id;
  await bucketRow(store, 'b1', 'photos', ana);
  await bucketRow(store, 'b2', 'logs', ana);
  const photos: QuotaTarget = { userId: ana, bucket: { id: 'b1', name: 'photos' } };
  const logs: QuotaTarget = { userId: ana, bucket: { id: 'b2', name: 'logs' } };
  return { ...a, ana, photos, logs };
}

async function liveRows(db: SqlExecutor): Promise<number> {
  return Number((await db.get<{ n: number }>('SELECT count(*) AS n FROM storage_reservations'))?.n ?? 0);
}

stores.each('quotas: a bucket counts its bytes, a user their buckets and assets; exact and bounded reservations; refusals name the quota', async (t, open) => {
  const db = await open(t);
  const { repos, quotas, ana, photos, logs } = await setup(t, db);

  const free = await quotas.reserve(photos, { bytes: 10 ** 12 });
  t.equal(free.maxBytes, Infinity, 'no quota: anything');
  t.equal(await liveRows(db), 0, 'and nothing written');
  await free.release();

  await repos.storageQuotas.setBucketQuota('b1', 100 * KIB);
  await putObject(db, 'b1', 'a', 60 * KIB);
  const first = await quotas.reserve(photos, { bytes: 30 * KIB });
  t.equal(first.maxBytes, 30 * KIB, 'exactly its size');
  const over = await refusalOf(quotas.reserve(photos, { bytes: 11 * KIB }));
  t.equal(over.kind, 'quota_exceeded');
  t.same(over.extra, { quota: 'bucket', bucket: 'photos', quotaBytes: 100 * KIB, storedBytes: 60 * KIB, reservedBytes: 30 * KIB, requiredBytes: 11 * KIB }, 'the figures');
  t.match(over.message, /^Storage quota exceeded: the bucket 'photos' may store 100 KiB \(102400 bytes\) and stores 60 KiB \(61440 bytes\), and uploads in progress have reserved 30 KiB \(30720 bytes\) more; this upload needs 11 KiB \(11264 bytes\)\. .*s3edge buckets set-quota photos --storage SIZE\.$/);
  t.equal((await quotas.reserve(photos, { bytes: 10 * KIB })).maxBytes, 10 * KIB, 'what is left fits exactly');
  t.equal((await quotas.reserve(logs, { bytes: 10 ** 9 })).maxBytes, Infinity, "another bucket of the same user: the first's quota is not its");
  await first.release();
  await first.release();
  const bounded = await quotas.reserve(photos, { upTo: 50 * KIB });
  t.equal(bounded.maxBytes, 30 * KIB, 'up to a bound: what is left (30 KiB once the first is released; 10 KiB still reserved)');
  t.match((await bounded.refusal(30 * KIB + 1)).message, /needs at least 30 KiB \(30721 bytes\)/, 'a body that outgrew it');
  await bounded.release();

  // The user's quota: buckets and assets together (the 10 KiB reservation above still counts for both).
  await repos.storageQuotas.setUserQuota(ana, 100 * KIB);
  await putObject(db, 'b2', 'x', 20 * KIB);
  await asset(db, 'as1', ana, 5 * KIB);
  const user = await refusalOf(quotas.reserve({ userId: ana }, { bytes: 10 * KIB }));
  t.same(user.extra, { quota: 'user', quotaBytes: 100 * KIB, storedBytes: 85 * KIB, reservedBytes: 10 * KIB, requiredBytes: 10 * KIB }, 'an asset upload against the account: 60 + 20 + 5 stored, 10 reserved');
  t.match(user.message, /the account 'ana' \(its buckets and assets together\) may store 100 KiB.*s3edge users set-quota ana --storage SIZE\.$/);
  const asAsset = await quotas.reserve({ userId: ana }, { upTo: 64 * KIB, atLeast: 1 * KIB });
  t.equal(asAsset.maxBytes, 5 * KIB, 'an asset bounded by its request: the 5 KiB left');
  t.equal((await refusalOf(quotas.reserve(logs, { bytes: 1 }))).extra['quota'], 'user', 'the user is full: any bucket refuses');
  const tighter = await refusalOf(quotas.reserve(photos, { bytes: 1 }));
  t.equal(tighter.extra['quota'], 'user', 'of two quotas, the one with less room left is named');
  const zero = await quotas.reserve(photos, { bytes: 0 });
  t.equal(zero.maxBytes, 0, 'an empty upload fits a full quota');
  await asAsset.release();

  // A quota lowered below what is stored: nothing new, not even an empty upload; a completion neither.
  await repos.storageQuotas.setUserQuota(ana, 50 * KIB);
  const lowered = await refusalOf(quotas.reserve(logs, { bytes: 0 }));
  t.match(lowered.message, /it is over its quota \(lowered below what it stores\)/);
  const completion = await refusalOf(quotas.checkStored(logs));
  t.match(completion.extra, { quota: 'user', storedBytes: 85 * KIB, requiredBytes: 0 });
  await repos.storageQuotas.setUserQuota(ana, null);
  await quotas.checkStored(logs);
  await repos.storageQuotas.setBucketQuota('b1', null);
  t.equal((await quotas.reserve(photos, { bytes: 10 ** 9 })).maxBytes, Infinity, 'quotas removed: anything again');

  t.same(await quotas.report(ana), {
    user: { storedBytes: 85 * KIB, assetBytes: 5 * KIB, quotaBytes: null },
    buckets: [{ name: 'logs', storedBytes: 20 * KIB, quotaBytes: null }, { name: 'photos', storedBytes: 60 * KIB, quotaBytes: null }],
  }, 'the report: the account and each bucket by name');
});

/**
 * `n` reservations of `size` bytes through two processes: at once on PostgreSQL; on SQLite one after
 * the other (two connections in one thread cannot overlap transactions: test/unit/credits.test.ts
 * races threads instead), and the e2e test races two workers.
 */
async function race(kind: StoreKind, n: number, fn: (i: number) => Promise<QuotaReservation | Refusal>): Promise<Array<QuotaReservation | Refusal>> {
  if (kind === 'postgres') return Promise.all(Array.from({ length: n }, (_, i) => fn(i)));
  const out: Array<QuotaReservation | Refusal> = [];
  for (let i = 0; i < n; i++) out.push(await fn(i));
  return out;
}

stores.each('two processes racing for one quota reserve exactly what fits; a dead holder stops counting after a minute', async (t, open, kind) => {
  const [first, second] = await stores.pair(t, kind);
  const a = await setup(t, first);
  const b = side(t, second);
  await a.repos.storageQuotas.setBucketQuota('b1', 100 * KIB);
  const attempt = (i: number) => (i % 2 === 0 ? a : b).quotas.reserve(a.photos, { bytes: 10 * KIB }).catch((err: unknown) => {
    if (err instanceof Refusal) return err;
    throw err;
  });
  const outcomes = await race(kind, 24, attempt);
  const taken = outcomes.filter((o): o is QuotaReservation => !(o instanceof Refusal));
  t.equal(taken.length, 10, '10 reserved between the two: 100 KiB');
  t.equal(outcomes.filter((o) => o instanceof Refusal).length, 14, 'the rest refused, none failed otherwise');
  t.equal(await a.repos.storageQuotas.liveBucketSum('b1', 0), 100 * KIB, 'the reservations add up to the quota, no more');

  // Half of them commit (their bytes stored, then released), half give up.
  for (const [i, r] of taken.entries()) {
    if (i % 2 === 0) await putObject(first, 'b1', `k${i}`, 10 * KIB);
    await r.release();
  }
  t.equal(await a.repos.storageUsage.bucketBytes('b1'), 50 * KIB);
  t.equal(await a.repos.storageQuotas.liveBucketSum('b1', 0), 0, 'all released');

  // A process that stalls (or dies) holding 50 KiB: alive for a minute, then its rows stop counting.
  const stalled = await a.quotas.reserve(a.photos, { bytes: 50 * KIB });
  t.equal(stalled.maxBytes, 50 * KIB);
  b.clock.now = new Date(a.clock.now.getTime() + HOLDER_TTL_MS - 1000);
  t.equal((await refusalOf(b.quotas.reserve(a.photos, { bytes: 1 }))).extra['reservedBytes'], 50 * KIB, 'a holder seen 59 s ago is alive');
  b.clock.now = new Date(a.clock.now.getTime() + HOLDER_TTL_MS + 1000);
  const late = await b.quotas.reserve(a.photos, { bytes: 50 * KIB });
  t.equal(late.maxBytes, 50 * KIB, 'not seen for 61 s: its reservation no longer counts');
  t.equal(await a.repos.storageQuotas.liveBucketSum('b1', 0), 50 * KIB, "and the first reservation of a busy period deleted the dead holder's row");
  await late.release();
  await stalled.release();
});

stores.each('the quotas a process holds live a second: a change reaches it within that, no query per upload without quotas', async (t, open) => {
  const db = await open(t);
  const repos = createRepos(db as never);
  // (lru-cache takes a start time of 0 for "never stale")
  let now = 10_000;
  const holders = new ReservationHolder(repos, () => new Date());
  t.teardown(() => holders.close());
  const quotas = new QuotaService(repos, holders, () => new Date(), { monotonic: () => now });
  const ana = (await repos.users.create('ana')).id;
  await bucketRow(db, 'b1', 'photos', ana);
  const target = { userId: ana, bucket: { id: 'b1', name: 'photos' } };
  t.equal(quotas.unlimitedNow(target), false, 'nothing held before the first look');
  t.equal((await quotas.reserve(target, { bytes: 10 })).maxBytes, Infinity);
  t.equal(quotas.unlimitedNow(target), true, 'then "no quota" is held');
  await repos.storageQuotas.setBucketQuota('b1', 5);
  now = 10_999;
  t.equal((await quotas.reserve(target, { bytes: 10 })).maxBytes, Infinity, 'within the second: the held answer');
  now = 11_001;
  t.equal((await refusalOf(quotas.reserve(target, { bytes: 10 }))).extra['quota'], 'bucket', 'past it: the quota applies');
  await repos.storageQuotas.setBucketQuota('b1', null);
  t.equal((await quotas.reserve(target, { bytes: 10 })).maxBytes, Infinity, 'a quota removed applies at once: the reservation reads the quotas again');
});
