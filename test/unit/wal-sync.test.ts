// Group commit: many writers waiting for durability share WAL flushes, and each one's commit is
// covered by a flush that started after it.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../src/db/open.js';
import { WalSync } from '../../src/db/wal-sync.js';
import { tempDir } from '../helpers/temp-data.js';

/** A WAL database with one table, as the server opens it (synchronous = NORMAL), and its WalSync. */
function walDb(t: Test): { db: Db; wal: WalSync } {
  const file = join(tempDir(t), 'meta.db');
  const db = openDatabase(file);
  t.teardown(() => db.close());
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE t (n INTEGER)');
  return { db, wal: new WalSync(`${file}-wal`) };
}

t.test('concurrent syncs share flushes; every caller resolves after a flush that followed its commit', async (t) => {
  const { db, wal } = walDb(t);
  const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
  const writers = Array.from({ length: 64 }, (_, i) => {
    insert.run(i);
    return wal.sync();
  });
  await Promise.all(writers);
  // The first caller starts a flush; the 63 that committed while it ran share the next one.
  t.equal(wal.flushes, 2, '64 writers, 2 flushes');
  // A commit made while a flush is in flight waits for the following one.
  const first = wal.sync();
  insert.run(100);
  let secondDone = false;
  const second = wal.sync().then(() => {
    secondDone = true;
  });
  await first;
  t.equal(secondDone, false, 'a flush that began before the commit does not release it');
  await second;
  t.equal(wal.flushes, 4);
  t.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 65);
  await wal.close();
  await t.rejects(wal.sync(), /closed/, 'no sync after close');
});

t.test("syncSoon joins the next flush instead of starting one ahead of a request's sync", async (t) => {
  const { db, wal } = walDb(t);
  db.prepare('INSERT INTO t (n) VALUES (1)').run();
  // Background removal first, then the request's own sync, in the same turn: one flush serves both.
  await Promise.all([wal.syncSoon(), wal.sync()]);
  t.equal(wal.flushes, 1);
  // Alone, syncSoon starts its flush on the next turn.
  await wal.syncSoon();
  t.equal(wal.flushes, 2);
  await wal.close();
});
