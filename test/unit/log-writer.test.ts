// The request log's SQLite writer thread (analytics/log-writer.ts): started by the first batch, not by
// the process that might never log a request (an idle cluster worker holds no isolate for it), and
// every batch written through it. The thread is seen as the kernel sees it: a task of this process
// with the thread's name (/proc/self/task/<tid>/comm, Linux; other worker threads of the test runner
// come and go beside it).
import t, { type Test } from 'tap';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { openDatabase } from '../../src/db/open.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import { LOG_WRITER_THREAD, storeLogWriter, ThreadLogWriter, type WriterPriorityOptions } from '../../src/analytics/log-writer.js';
import { Checkpointer, CHECKPOINT_THREAD } from '../../src/db/checkpointer.js';
import { canLeaveIdle, threadPolicyOf } from '../../src/thread-policy.js';
import { RequestLog } from '../../src/analytics/request-log.js';
import pino from 'pino';
import { logRecord } from '../helpers/log-records.js';
import { eventually } from '../helpers/api.js';

/** A new meta.db in a temporary directory, both gone after the test. */
async function scratchDatabase(t: Test): Promise<{ file: string; db: ReturnType<typeof openDatabase> }> {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-log-writer-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'meta.db');
  const db = openDatabase(file);
  t.teardown(() => db.close());
  return { file, db };
}

/**
 * A writer that yields, on a scratch database; undefined (the test passes on what it cannot check) where
 * this process may not give a thread normal priority back: a writer there never yields (the test after).
 */
async function yieldingWriter(
  t: Test,
  priority: WriterPriorityOptions,
): Promise<{ db: ReturnType<typeof openDatabase>; writer: ThreadLogWriter; errors: unknown[] } | undefined> {
  if (!canLeaveIdle()) {
    t.pass('this process may not give a thread normal priority back (run as root or with CAP_SYS_NICE for this test)');
    return undefined;
  }
  const { file, db } = await scratchDatabase(t);
  const errors: unknown[] = [];
  const writer = new ThreadLogWriter(file, storeLogWriter(new SqliteStore(db)), { error: (o: unknown) => errors.push(o) }, priority);
  return { db, writer, errors };
}

/** Holds SQLite's write lock from `db`'s connection (a row in a transaction left open) until COMMIT. */
function holdWriteLock(db: ReturnType<typeof openDatabase>): void {
  db.exec('BEGIN IMMEDIATE');
  db.prepare("INSERT INTO cdn_hourly (owner_id, hour, requests, bytes, cached_bytes, hits, cache_lookups, status_counts, country_counts) VALUES ('x', 0, 0, 0, 0, 0, 0, '{}', '{}')").run();
}

/** This process's threads named `name` (their OS ids; a thread that has exited is gone from the list). */
async function threadsNamed(name: string): Promise<number[]> {
  const ids: number[] = [];
  for (const tid of await readdir('/proc/self/task')) {
    const comm = await readFile(`/proc/self/task/${tid}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === name) ids.push(Number(tid));
  }
  return ids;
}

async function writerThreads(): Promise<number> {
  return (await threadsNamed(LOG_WRITER_THREAD)).length;
}

/**
 * What `read()` gives once it gives `want` (a thread's task comes and goes as it starts and is joined; a
 * policy changes through chrt, a child process), or what it gives when eventually's bound is past.
 */
async function becomes<T>(read: () => T | Promise<T>, want: T): Promise<T> {
  await eventually(async () => (await read()) === want, `becoming ${String(want)}`, 3000).catch(() => undefined);
  return read();
}

t.test('no thread until the first batch; the batches are written; close() ends it', async (t) => {
  const { file, db } = await scratchDatabase(t);
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
  t.equal(await becomes(writerThreads, before), before, 'close() ends the thread');
  t.same(errors, [], 'nothing was logged as an error');
});

// As the kernel reports it (/proc/self/task/<tid>/stat, the policy field); chrt is util-linux's (Debian's
// base). Only a process that may give a thread normal priority back (root, CAP_SYS_NICE, a nice limit of
// 20) puts the writer under SCHED_IDLE; any other keeps it at normal priority, checked below as it is.
t.test('the writer runs under SCHED_IDLE, at normal priority while a batch waits, then yields again', async (t) => {
  const scratch = await yieldingWriter(t, { lagMs: 150, normalForMs: 400 });
  if (scratch === undefined) return;
  const { db, writer, errors } = scratch;
  await writer.insertBatch([logRecord({ path: '/a1/one.txt' })]);
  t.ok(writer.osThreadId > 0, 'the thread told its OS id');
  t.equal(await becomes(() => threadPolicyOf(writer.osThreadId), 'idle'), 'idle', 'once up, it yields to serving');

  // Another connection holds the write lock: the next batch waits (busy_timeout), as a starved thread's would.
  holdWriteLock(db);
  const waiting = writer.insertBatch([logRecord({ path: '/a1/two.txt' })]);
  t.equal(await becomes(() => threadPolicyOf(writer.osThreadId), 'normal'), 'normal', 'a batch waiting past lagMs gives it normal priority');
  db.exec('COMMIT');
  await waiting;
  t.equal(await becomes(() => threadPolicyOf(writer.osThreadId), 'idle'), 'idle', 'caught up for normalForMs, it yields again');

  const paths = db.prepare('SELECT path FROM cdn_requests ORDER BY id').all() as { path: string }[];
  t.same(paths.map((r) => r.path), ['/a1/one.txt', '/a1/two.txt'], 'every row, in order');
  await writer.close();
  t.same(errors, [], 'nothing was logged as an error');
});

t.test('three quarters of the request log\'s buffer waiting behind the batch in flight give the writer normal priority at once', async (t) => {
  // lagMs far away: only the buffer can be what changes the policy here.
  const scratch = await yieldingWriter(t, { lagMs: 600_000, normalForMs: 600_000 });
  if (scratch === undefined) return;
  const { db, writer, errors } = scratch;
  const log = new RequestLog(new SqliteStore(db), { bufferSize: 8, flushIntervalMs: 3_600_000, retentionDays: 7 }, {
    writer,
    maintain: false,
    // No timer and no early flush of its own: the test flushes.
    scheduler: { every: () => () => undefined, soon: () => undefined },
  });
  log.record(logRecord({ path: '/a1/0.txt' }));
  t.equal(await log.flush(), 1, 'the first flush starts the thread');
  t.equal(await becomes(() => threadPolicyOf(writer.osThreadId), 'idle'), 'idle', 'which yields to serving');
  // The kernel has it before the writer hears that chrt is done; what follows is synchronous.
  await delay(100);

  holdWriteLock(db);
  log.record(logRecord({ path: '/a1/1.txt' }));
  const flushing = log.flush();
  for (let i = 2; i < 7; i++) log.record(logRecord({ path: `/a1/${i}.txt` }));
  // Half the buffer (the early flush's mark) is not yet behind: a yielding writer's batches take longer.
  await delay(300);
  t.equal(threadPolicyOf(writer.osThreadId), 'idle', 'five records behind the batch: not yet three quarters of the buffer');
  log.record(logRecord({ path: '/a1/7.txt' }));
  t.equal(await becomes(() => threadPolicyOf(writer.osThreadId), 'normal'), 'normal', 'the sixth (three quarters of 8) gives it normal priority');
  db.exec('COMMIT');
  t.equal(await flushing, 1, 'the batch in flight written');
  t.equal(await log.flush(), 6, 'and the six behind it');
  t.equal(log.stats().dropped, 0, 'none dropped');
  await log.close();
  t.same(errors, [], 'nothing was logged as an error');
});

t.test('a writer that may not yield (not allowed, or told not to) stays at normal priority', async (t) => {
  const { file, db } = await scratchDatabase(t);
  const writer = new ThreadLogWriter(file, storeLogWriter(new SqliteStore(db)), { error: () => undefined }, canLeaveIdle() ? { yieldToServing: false } : {});
  await writer.insertBatch([logRecord({ path: '/a1/one.txt' })]);
  await delay(200);
  t.equal(threadPolicyOf(writer.osThreadId), 'normal', 'SCHED_OTHER, as every thread starts');
  await writer.close();
});

t.test('the checkpoint thread runs under SCHED_IDLE', async (t) => {
  const { file, db } = await scratchDatabase(t);
  const before = await threadsNamed(CHECKPOINT_THREAD);
  const checkpointer = new Checkpointer(db, file, pino({ level: 'silent' }), 20);
  const started = async (): Promise<number[]> => (await threadsNamed(CHECKPOINT_THREAD)).filter((id) => !before.includes(id));
  await eventually(async () => (await started()).length > 0, 'the checkpoint thread', 3000).catch(() => undefined);
  const ids = await started();
  t.equal(ids.length, 1, 'its thread is named for the OS');
  t.equal(await becomes(() => threadPolicyOf(ids[0] as number), 'idle'), 'idle', 'and yields to serving');
  await checkpointer.close();
});
