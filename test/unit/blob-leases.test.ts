// Blob leases: removal of a leased blob waits for its last reader.
import t from 'tap';
import { BlobLeases } from '../../src/storage/blob-leases.js';

function setup(): { leases: BlobLeases; removed: string[] } {
  const removed: string[] = [];
  const leases = new BlobLeases(async (id) => {
    removed.push(id);
  });
  return { leases, removed };
}

t.test('an unleased blob is removed at once', async (t) => {
  const { leases, removed } = setup();
  await leases.removeWhenFree('a');
  t.same(removed, ['a']);
  t.equal(leases.deferred, 0);
});

t.test('a leased blob goes when the last lease is released', async (t) => {
  const { leases, removed } = setup();
  const r1 = leases.acquire(['a', 'b']);
  const r2 = leases.acquire(['a']);
  t.ok(leases.isLeased('a'));
  await leases.removeWhenFree('a');
  await leases.removeWhenFree('b');
  t.same(removed, [], 'nothing removed while read');
  t.equal(leases.deferred, 2);
  r1.release();
  t.same(removed, ['b'], 'b had one reader');
  r1.release();
  t.same(removed, ['b'], 'release is idempotent');
  t.ok(leases.isLeased('a'));
  r2.release();
  t.same(removed, ['b', 'a']);
  t.notOk(leases.isLeased('a'));
  t.equal(leases.deferred, 0);
});

t.test('a lease on a blob nobody removes leaves it alone', async (t) => {
  const { leases, removed } = setup();
  const lease = leases.acquire(['x', 'x']);
  lease.release();
  t.same(removed, []);
  t.notOk(leases.isLeased('x'), 'duplicate ids count once');
  await leases.removeWhenFree('x');
  t.same(removed, ['x']);
});

t.test('an observer hears of each blob’s first and last lease, before its removal', async (t) => {
  const events: string[] = [];
  const leases = new BlobLeases(
    async (id) => {
      events.push(`remove ${id}`);
    },
    { held: (ids) => events.push(`held ${ids.join(',')}`), freed: (ids) => events.push(`freed ${ids.join(',')}`) },
  );
  const r1 = leases.acquire(['a', 'b', 'a']);
  const r2 = leases.acquire(['a', 'c']);
  t.same(events, ['held a,b', 'held c'], 'only blobs not held yet');
  await leases.removeWhenFree('b');
  r1.release();
  r1.release();
  t.same(events, ['held a,b', 'held c', 'freed b', 'remove b'], 'a still has a reader');
  r2.release();
  t.same(events.slice(4), ['freed a,c']);
});
