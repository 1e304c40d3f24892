// Batched metadata writes on SQLite: one transaction per tick, and one write's failure rolls back only
// itself (test/contract/metadata-store-s3.test.ts runs the same on both stores with real repositories).
import t from 'tap';
import { openDatabase } from '../../src/db/open.js';
import { CommitQueue } from '../../src/db/commit-queue.js';
import { createRepos } from '../../src/db/repos/index.js';

t.test('writes queued in one tick share a transaction; a failing write undoes only its own changes', async (t) => {
  const db = openDatabase(':memory:');
  t.teardown(() => db.close());
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  const insert = 'INSERT INTO t (n) VALUES (?)';
  const queue = new CommitQueue(createRepos(db));
  const results = await Promise.allSettled([
    queue.run(async (r) => (await r.store.run(insert, [1])).changes),
    queue.run(async (r) => {
      await r.store.run(insert, [2]);
      throw new Error('refused');
    }),
    queue.run(async (r) => (await r.store.run(insert, [3])).changes),
    queue.run(async (r) => (await r.store.run(insert, [1])).changes), // duplicate key: a constraint error, this write only
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected']);
  t.equal((results[0] as PromiseFulfilledResult<number>).value, 1, 'a write resolves with its own result');
  t.match((results[1] as PromiseRejectedResult).reason, /refused/);
  t.same(db.prepare('SELECT n FROM t ORDER BY n').pluck().all(), [1, 3], 'the refused write left nothing');
  t.equal(queue.batches, 1, 'four writes, one transaction');
  await queue.run((r) => r.store.run(insert, [4]));
  t.equal(queue.batches, 2, 'a later tick gets its own transaction');
  t.equal(db.inTransaction, false);
});

t.test('a batch that cannot commit rejects every write of it', async (t) => {
  const db = openDatabase(':memory:');
  t.teardown(() => db.close());
  const failing = { transact: async () => Promise.reject(new Error('disk full')) };
  const queue = new CommitQueue(failing);
  const results = await Promise.allSettled([queue.run(async () => 1), queue.run(async () => 2)]);
  t.same(results.map((r) => r.status), ['rejected', 'rejected']);
  t.match((results[0] as PromiseRejectedResult).reason, /disk full/);
  t.equal(queue.batches, 0);
});
