// Batched metadata writes: one transaction per tick, and one write's failure rolls back only itself.
import t from 'tap';
import { openDatabase } from '../../src/db/open.js';
import { CommitQueue } from '../../src/db/commit-queue.js';

t.test('writes queued in one tick share a transaction; a failing write undoes only its own changes', async (t) => {
  const db = openDatabase(':memory:');
  t.teardown(() => db.close());
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
  const queue = new CommitQueue(db);
  const results = await Promise.allSettled([
    queue.run(() => insert.run(1).changes),
    queue.run(() => {
      insert.run(2);
      throw new Error('refused');
    }),
    queue.run(() => insert.run(3).changes),
    queue.run(() => insert.run(1).changes), // duplicate key: a constraint error, this write only
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected']);
  t.equal((results[0] as PromiseFulfilledResult<number>).value, 1, 'a write resolves with its own result');
  t.match((results[1] as PromiseRejectedResult).reason, /refused/);
  t.same(db.prepare('SELECT n FROM t ORDER BY n').pluck().all(), [1, 3], 'the refused write left nothing');
  t.equal(queue.batches, 1, 'four writes, one transaction');
  await queue.run(() => insert.run(4));
  t.equal(queue.batches, 2, 'a later tick gets its own transaction');
  t.equal(db.inTransaction, false);
});
