// The request log's SQLite writer thread (analytics/log-writer.ts): started by the first batch, not by
// the process that might never log a request (an idle cluster worker holds no isolate for it), and
// every batch written through it. The thread is seen as the kernel sees it: a task of this process
// with the thread's name (/proc/self/task/<tid>/comm, Linux; other worker threads of the test runner
// come and go beside it).
import t from 'tap';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { openDatabase } from '../../src/db/open.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import { LOG_WRITER_THREAD, storeLogWriter, ThreadLogWriter } from '../../src/analytics/log-writer.js';
import { logRecord } from '../helpers/log-records.js';

/** This process's writer threads as the kernel lists them (a thread that has exited is gone from the list). */
async function writerThreads(): Promise<number> {
  let n = 0;
  for (const tid of await readdir('/proc/self/task')) {
    const comm = await readFile(`/proc/self/task/${tid}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === LOG_WRITER_THREAD) n++;
  }
  return n;
}

/** Until the thread count is `want` (a thread's task appears as it starts and goes once it is joined). */
async function threadsBecome(want: number): Promise<number> {
  let n = await writerThreads();
  for (let i = 0; i < 200 && n !== want; i++) {
    await delay(10);
    n = await writerThreads();
  }
  return n;
}

t.test('no thread until the first batch; the batches are written; close() ends it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-log-writer-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'meta.db');
  const db = openDatabase(file);
  t.teardown(() => db.close());
  const errors: unknown[] = [];
  const before = await writerThreads();
  t.equal(before, 0, 'none before');

  const idle = new ThreadLogWriter(file, storeLogWriter(new SqliteStore(db)), { error: (o: unknown) => errors.push(o) });
  t.equal(await writerThreads(), before, 'made, it starts no thread');
  await idle.close();
  t.equal(await writerThreads(), before, 'closed unused, it never started one');

  const writer = new ThreadLogWriter(file, storeLogWriter(new SqliteStore(db)), { error: (o: unknown) => errors.push(o) });
  await writer.insertBatch([logRecord({ path: '/a1/one.txt' }), logRecord({ path: '/a1/two.txt', surface: 'proxy', ownerId: null, assetId: null })]);
  t.equal(await writerThreads(), before + 1, 'the first batch started the thread');
  await writer.insertBatch([logRecord({ path: '/a1/three.txt' })]);
  t.equal(await writerThreads(), before + 1, 'and the next one used it');
  const paths = db.prepare('SELECT path FROM cdn_requests ORDER BY id').all() as { path: string }[];
  t.same(paths.map((r) => r.path), ['/a1/one.txt', '/a1/two.txt', '/a1/three.txt'], 'every row, in order');
  await writer.close();
  t.equal(await threadsBecome(before), before, 'close() ends the thread');
  t.same(errors, [], 'nothing was logged as an error');
});
