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
