// The CDN request log's buffer: bounded, drops counted, one transaction per flush (all or nothing,
// retried; one flush at a time), flushed by its timer and on close. Timers are injected and fired by
// hand; the database is
// a real SQLite database with the real migrations.
import t from 'tap';
import { openDatabase, type Db } from '../../src/db/open.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import type { CdnRequestRecord } from '../../src/db/repos/request-records.js';
import { RequestLog, type Scheduler } from '../../src/analytics/request-log.js';
import { LOG_NOW as NOW, logRecord as rec } from '../helpers/log-records.js';

/** A scheduler whose jobs run only when the test says so. */
class ManualScheduler implements Scheduler {
  readonly jobs: { ms: number; fn: () => void; stopped: boolean }[] = [];
  every(ms: number, fn: () => void): () => void {
    const job = { ms, fn, stopped: false };
    this.jobs.push(job);
    return () => {
      job.stopped = true;
    };
  }
  readonly queued: (() => void)[] = [];
  soon(fn: () => void): void {
    this.queued.push(fn);
  }
  runQueued(): void {
    for (const fn of this.queued.splice(0)) fn();
  }
  fire(ms: number): void {
    for (const j of this.jobs) if (j.ms === ms && !j.stopped) j.fn();
  }
}

function setup(bufferSize = 100): { db: Db; log: RequestLog; timers: ManualScheduler; rows: () => number } {
  const db = openDatabase(':memory:');
  const timers = new ManualScheduler();
  const log = new RequestLog(new SqliteStore(db), { bufferSize, flushIntervalMs: 250, retentionDays: 7 }, { clock: () => NOW, scheduler: timers });
  const count = db.prepare('SELECT count(*) FROM cdn_requests').pluck();
  return { db, log, timers, rows: () => count.get() as number };
}

t.test('record() buffers up to bufferSize and counts what it drops', async (t) => {
  const { db, log, rows } = setup(3);
  t.teardown(() => db.close());
  for (let i = 0; i < 5; i++) log.record(rec({ bytesSent: i }));
  t.match(log.stats(), { buffered: 3, capacity: 3, dropped: 2, flushed: 0 });
  t.equal(rows(), 0, 'nothing written before a flush');
  t.equal(await log.flush(), 3);
  t.equal(rows(), 3);
  t.same(db.prepare('SELECT bytes_sent FROM cdn_requests ORDER BY id').pluck().all(), [0, 1, 2], 'the first three, in order');
  log.record(rec());
  t.match(log.stats(), { buffered: 1, dropped: 2, flushed: 3, flushes: 1 }, 'room again after the flush');
});

t.test('record() never throws: a malformed record is dropped and counted, fields are bounded', async (t) => {
  const { db, log } = setup();
  t.teardown(() => db.close());
  t.doesNotThrow(() => log.record(rec({ status: 0 })));
  t.doesNotThrow(() => log.record(rec({ time: Number.NaN })));
  t.doesNotThrow(() => log.record(null as unknown as CdnRequestRecord));
  t.equal(log.stats().dropped, 3);
  log.record(rec({ userAgent: 'x'.repeat(5000), country: 'de', bytesSent: -5, cacheStatus: 'WEIRD' as CdnRequestRecord['cacheStatus'] }));
  await log.flush();
  const row = db.prepare('SELECT user_agent, country, bytes_sent, cache_status FROM cdn_requests').get() as Record<string, unknown>;
  t.equal((row['user_agent'] as string).length, 512, 'user agent cut to 512 characters');
  t.equal(row['country'], '', 'a country that is not an upper-case code is unknown');
  t.equal(row['bytes_sent'], 0);
  t.equal(row['cache_status'], null);
});

t.test('every field of the record is stored', async (t) => {
  const { db, log } = setup();
  t.teardown(() => db.close());
  log.record(rec({ assetId: null, bucket: 'photos', key: 'a/b.jpg', status: 206, cacheStatus: 'HIT', clientIp: '2001:db8::7', durationMs: 12.25 }));
  await log.flush();
  t.same(db.prepare('SELECT * FROM cdn_requests').get(), {
    id: 1, time: NOW, host: 'cdn.localhost', asset_id: null, bucket: 'photos', object_key: 'a/b.jpg', owner_id: 'u1', status: 206,
    bytes_sent: 100, cache_status: 'HIT', client_ip: '2001:db8::7', country: 'DE', user_agent: 'curl/8', duration_ms: 12.25,
      surface: 'cdn', method: 'GET', path: '/a1/file.txt', bytes_in: 0, decision: 'allowed',
  });
});

t.test('a flush is one transaction: a failure writes nothing, keeps the records, and the next flush writes them all', async (t) => {
  const { db, log, rows } = setup();
  t.teardown(() => db.close());
  // The last record of the batch fails inside the database.
  db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON cdn_requests WHEN NEW.host = 'refuse.example' BEGIN SELECT RAISE(ABORT, 'refused'); END`);
  for (let i = 0; i < 9; i++) log.record(rec());
  log.record(rec({ host: 'refuse.example' }));
  t.equal(await log.flush(), 0, 'the flush failed');
  t.equal(rows(), 0, 'none of the nine rows before the failing one was committed');
  t.match(log.stats(), { buffered: 10, flushErrors: 1, flushes: 0, dropped: 0 });
  db.exec('DROP TRIGGER refuse');
  t.equal(await log.flush(), 10);
  t.equal(rows(), 10);
  t.match(log.stats(), { buffered: 0, flushed: 10, flushes: 1 }, 'ten records, one commit');
});

t.test('flushes never overlap: one asked for during another writes what came after, once it is done', async (t) => {
  const { db, log, rows } = setup();
  t.teardown(() => db.close());
  log.record(rec());
  log.record(rec());
  const first = log.flush();
  t.match(log.stats(), { buffered: 2 }, 'the batch being written still counts as buffered');
  log.record(rec());
  const second = log.flush();
  t.same(await Promise.all([first, second]), [2, 1]);
  t.equal(rows(), 3);
  t.match(log.stats(), { buffered: 0, flushed: 3, flushes: 2 });
});

t.test('the flush timer writes the buffer; close() stops the timers, flushes, and later records are dropped', async (t) => {
  const { db, log, timers, rows } = setup();
  t.teardown(() => db.close());
  t.same(timers.jobs.map((j) => j.ms).sort((a, b) => a - b), [250, 3_600_000], 'a flush every flushIntervalMs, maintenance hourly');
  log.record(rec());
  log.record(rec());
  timers.fire(250);
  t.equal(await log.flush(), 0, 'waits for the flush under way, which wrote both');
  t.equal(rows(), 2, 'flushed by the timer');
  log.record(rec());
  await log.close();
  t.equal(rows(), 3, 'flushed on close');
  t.ok(timers.jobs.every((j) => j.stopped), 'timers stopped');
  log.record(rec());
  t.match(log.stats(), { buffered: 0, dropped: 1 }, 'a record after close is dropped');
});

t.test('a request that served an asset is also a download usage event, written in the same flush', async (t) => {
  const { db, log } = setup();
  t.teardown(() => db.close());
  db.prepare("INSERT INTO users (id, name, created_at) VALUES ('u1', 'ana', 0)").run();
  log.record(rec({ downloadKey: 'a1/f.txt', bytesSent: 42, status: 206, country: 'NG' }));
  log.record(rec({ bytesSent: 7 }));
  log.record(rec({ downloadKey: 'a1/f.txt', ownerId: 'gone-user' }));
  log.record(rec({ assetId: null, bucket: 'photos', key: 'a.txt', downloadKey: 'photos/a.txt', bytesSent: 5, country: '' }));
  const events = db.prepare('SELECT user_id, asset_id, event_type, source, bytes, status_code, country, metadata, created_at FROM usage_events ORDER BY seq');
  t.same(events.all(), [], 'nothing before the flush');
  t.equal(await log.flush(), 4, 'the batch is written although one owner no longer exists');
  t.same(events.all(), [
    { user_id: 'u1', asset_id: 'a1', event_type: 'download', source: 'cdn', bytes: 42, status_code: 206, country: 'NG', metadata: '{"key":"a1/f.txt"}', created_at: NOW },
    { user_id: 'u1', asset_id: '', event_type: 'download', source: 'cdn', bytes: 5, status_code: 200, country: '', metadata: '{"key":"photos/a.txt"}', created_at: NOW },
  ], 'one event per request that served a body (a public bucket object too), at the request time');
  t.equal(db.prepare('SELECT count(*) FROM cdn_requests').pluck().get(), 4);
});

t.test('a buffer half full is flushed after this turn, not at the next tick of the timer', async (t) => {
  const { db, log, timers, rows } = setup(10);
  t.teardown(() => db.close());
  for (let i = 0; i < 4; i++) log.record(rec());
  t.equal(timers.queued.length, 0, 'below half: the timer will do');
  log.record(rec());
  log.record(rec());
  t.equal(timers.queued.length, 1, 'one early flush queued at half, however many records follow');
  t.equal(rows(), 0, 'not within the request that filled it');
  timers.runQueued();
  await log.flush();
  t.equal(rows(), 6);
  t.match(log.stats(), { buffered: 0, dropped: 0 });
  for (let i = 0; i < 5; i++) log.record(rec());
  t.equal(timers.queued.length, 1, 'queued again once the buffer fills again');
});
