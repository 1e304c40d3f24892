import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { isUploadBufferFull, UploadBudget, type Reservation } from '../../src/storage/upload-budget.js';
import { S3Error } from '../../src/errors/s3-errors.js';

const MiB = 1024 * 1024;

/** Settles pending promise callbacks. */
const ticks = () => sleep(0);

t.test('reservations under the cap are immediate, counted, and released once', async (t) => {
  const budget = new UploadBudget({ capBytes: 10 * MiB, waitMs: 1000 });
  const a = await budget.reserve(4 * MiB);
  const b = budget.tryReserve(5 * MiB);
  t.ok(b, 'tryReserve takes what is free');
  t.equal(budget.stats().reservedBytes, 9 * MiB);
  t.equal(budget.tryReserve(2 * MiB), undefined, 'tryReserve never goes over the cap');
  a.release();
  a.release();
  t.equal(budget.stats().reservedBytes, 5 * MiB, 'a second release gives nothing back twice');
  b?.release();
  t.same(budget.stats(), { capBytes: 10 * MiB, reservedBytes: 0, peakBytes: 9 * MiB, waiting: 0, waits: 0, refusals: 0 });
});

t.test('a full budget makes reservations wait, served in order as bytes come back', async (t) => {
  const budget = new UploadBudget({ capBytes: 10 * MiB, waitMs: 5000 });
  const first = await budget.reserve(8 * MiB);
  const order: string[] = [];
  const big = budget.reserve(6 * MiB).then((r) => (order.push('big'), r));
  const small = budget.reserve(1 * MiB).then((r) => (order.push('small'), r));
  await ticks();
  t.same(order, [], 'the small one does not pass the big one waiting before it, though it would fit');
  t.equal(budget.tryReserve(1), undefined, 'nor does a tryReserve');
  t.equal((await budget.reserve(0)).bytes, 0, 'an empty body never waits');
  t.equal(budget.stats().waiting, 2);
  first.release();
  const [b, s] = await Promise.all([big, small]);
  t.same(order, ['big', 'small']);
  t.equal(budget.stats().reservedBytes, 7 * MiB);
  t.equal(budget.stats().waits, 2);
  b.release();
  s.release();
  t.equal(budget.stats().reservedBytes, 0);
  t.ok(budget.stats().peakBytes <= 10 * MiB, 'the peak never passed the cap');
});

t.test('past the deadline a waiter is refused with SlowDown and leaves nothing reserved', async (t) => {
  const budget = new UploadBudget({ capBytes: 4 * MiB, waitMs: 50 });
  const held = await budget.reserve(3 * MiB);
  const refused = budget.reserve(2 * MiB);
  const behind = budget.reserve(1 * MiB, {});
  const err = await refused.then(() => undefined, (e: unknown) => e);
  t.ok(isUploadBufferFull(err) && err instanceof S3Error, 'UploadBufferFull, an S3Error');
  t.match(err, { code: 'SlowDown', status: 503, headers: { 'Retry-After': '1' } });
  // The one behind fitted all along: once the head left, it is served.
  const r = await behind;
  t.equal(budget.stats().reservedBytes, 4 * MiB);
  t.equal(budget.stats().refusals, 1);
  r.release();
  held.release();
  t.equal(budget.stats().reservedBytes, 0);
  t.equal(budget.stats().waiting, 0);
});

t.test('an aborted waiter leaves the line at once with the signal reason', async (t) => {
  const budget = new UploadBudget({ capBytes: 4 * MiB, waitMs: 60_000 });
  const held = await budget.reserve(4 * MiB);
  const ac = new AbortController();
  const waiting = budget.reserve(1 * MiB, { signal: ac.signal });
  await ticks();
  t.equal(budget.stats().waiting, 1);
  ac.abort(new Error('client went away'));
  await t.rejects(waiting, /client went away/);
  t.equal(budget.stats().waiting, 0);
  held.release();
  t.equal(budget.stats().reservedBytes, 0, 'the aborted waiter got nothing when bytes came back');
  const full = await budget.reserve(4 * MiB);
  await t.rejects(budget.reserve(1, { signal: ac.signal }), /client went away/, 'an aborted signal never waits');
  t.equal(budget.stats().waiting, 0);
  full.release();
  t.equal(budget.stats().refusals, 0, 'an abort is not a refusal');
});

t.test('a request larger than the cap gets the whole budget when it is alone', async (t) => {
  const budget = new UploadBudget({ capBytes: 4 * MiB, waitMs: 1000 });
  const r = await budget.reserve(100 * MiB);
  t.equal(r.bytes, 4 * MiB);
  const next = budget.reserve(100 * MiB);
  r.release();
  (await next).release();
  t.equal(budget.stats().peakBytes, 4 * MiB);
});

t.test('cap 0 counts but never waits', async (t) => {
  const budget = new UploadBudget({ capBytes: 0, waitMs: 10 });
  const rs = await Promise.all(Array.from({ length: 10 }, () => budget.reserve(100 * MiB)));
  t.equal(budget.stats().reservedBytes, 1000 * MiB);
  for (const r of rs) r.release();
  t.equal(budget.stats().reservedBytes, 0);
  t.equal(budget.stats().peakBytes, 1000 * MiB);
  t.equal(budget.stats().waits, 0);
});

t.test('no deadlock: many uploads, each waiting only for its first buffer and trying for a second', async (t) => {
  // The upstream backend's pattern (multipart-writer.ts): one part buffer reserved with waiting,
  // a second only if free now, else the upload goes on with one. Every upload must finish.
  const cap = 20 * MiB;
  const budget = new UploadBudget({ capBytes: cap, waitMs: 10_000 });
  let overCap = false;
  const upload = async (parts: number): Promise<void> => {
    const first = await budget.reserve(8 * MiB);
    let second: Reservation | undefined;
    try {
      for (let i = 0; i < parts; i++) {
        second ??= budget.tryReserve(8 * MiB);
        if (budget.stats().reservedBytes > cap) overCap = true;
        await sleep(second ? 1 : 2);
      }
    } finally {
      second?.release();
      first.release();
    }
  };
  await Promise.all(Array.from({ length: 30 }, (_, i) => upload(1 + (i % 4))));
  t.notOk(overCap);
  t.same({ ...budget.stats(), waits: 0, peakBytes: 0 }, { capBytes: cap, reservedBytes: 0, peakBytes: 0, waiting: 0, waits: 0, refusals: 0 });
  t.ok(budget.stats().peakBytes <= cap);
});

t.test('close refuses every waiter', async (t) => {
  const budget = new UploadBudget({ capBytes: MiB, waitMs: 60_000 });
  const held = await budget.reserve(MiB);
  const a = budget.reserve(MiB);
  budget.close();
  t.ok(isUploadBufferFull(await a.then(() => undefined, (e: unknown) => e)));
  held.release();
  t.equal(budget.stats().reservedBytes, 0);
});
