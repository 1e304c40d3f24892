// Hourly roll-ups and retention of the CDN request log, with an injected clock: complete hours are
// rolled up once (idempotent), a request that ends after its hour was rolled up is still counted once,
// readers get the same numbers from roll-ups as from raw rows, and old rows and roll-ups expire.
import t from 'tap';
import { openDatabase, type Db } from '../../src/db/open.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import { RequestLog, type Scheduler } from '../../src/analytics/request-log.js';
import type { HourTraffic } from '../../src/db/repos/traffic.js';
import { HOUR, LOG_NOW, logRecord as rec } from '../helpers/log-records.js';

const NO_TIMERS: Scheduler = { every: () => () => undefined, soon: () => undefined };
const H12 = Date.parse('2026-11-21T12:00:00Z');

function setup(clock: { now: number }): { db: Db; log: RequestLog } {
  const db = openDatabase(':memory:');
  const log = new RequestLog(new SqliteStore(db), { bufferSize: 1000, flushIntervalMs: 1000, retentionDays: 7 }, { clock: () => clock.now, scheduler: NO_TIMERS });
  return { db, log };
}

function hourly(db: Db): Record<string, unknown>[] {
  return db.prepare('SELECT * FROM cdn_hourly ORDER BY hour, owner_id').all() as Record<string, unknown>[];
}

/** Traffic of three hours for two owners and one request of no owner. */
function recordTraffic(log: RequestLog): void {
  log.record(rec({ time: H12 - 2 * HOUR + 10, status: 200, bytesSent: 1000, cacheStatus: 'MISS', country: 'DE' }));
  log.record(rec({ time: H12 - 2 * HOUR + 20, status: 200, bytesSent: 1000, cacheStatus: 'HIT', country: 'DE' }));
  log.record(rec({ time: H12 - HOUR + 5, status: 206, bytesSent: 10, cacheStatus: 'HIT', country: 'NG' }));
  log.record(rec({ time: H12 - HOUR + 6, status: 404, bytesSent: 0, cacheStatus: null, country: '' }));
  log.record(rec({ time: H12 - HOUR + 7, ownerId: 'u2', status: 200, bytesSent: 7, cacheStatus: 'BYPASS', country: 'FR' }));
  log.record(rec({ time: H12 - HOUR + 8, ownerId: null, assetId: null, status: 404, bytesSent: 9, cacheStatus: null, country: '' }));
  log.record(rec({ time: H12 + 60_000, status: 200, bytesSent: 50, cacheStatus: 'HIT', country: 'DE' }));
}

const EXPECTED_U1: Omit<HourTraffic, 'ownerId'>[] = [
  { hour: H12 - 2 * HOUR, requests: 2, bytes: 2000, cachedBytes: 1000, hits: 1, cacheLookups: 2, statusCounts: { '200': 2 }, countryCounts: { DE: 2 } },
  { hour: H12 - HOUR, requests: 2, bytes: 10, cachedBytes: 10, hits: 1, cacheLookups: 1, statusCounts: { '206': 1, '404': 1 }, countryCounts: { NG: 1 } },
  { hour: H12, requests: 1, bytes: 50, cachedBytes: 50, hits: 1, cacheLookups: 1, statusCounts: { '200': 1 }, countryCounts: { DE: 1 } },
];

t.test('complete hours roll up per owner; the current hour stays raw; readers see the same numbers either way', async (t) => {
  // The log starts before the traffic, so nothing of it is rolled up until maintain() runs at 12:30.
  const clock = { now: H12 - 3 * HOUR };
  const { db, log } = setup(clock);
  t.teardown(() => db.close());
  recordTraffic(log);
  await log.flush();
  t.equal(hourly(db).length, 0, 'nothing rolled up yet');
  clock.now = LOG_NOW;
  const before = (await log.traffic.ownerHours('u1', H12 - 23 * HOUR, LOG_NOW));
  t.same(before.map(({ ownerId: _o, ...h }) => h), EXPECTED_U1, 'from raw rows only');

  const result = await log.maintain();
  t.equal(result.rolledHours, 4, 'u1 x 2 hours, u2 and no owner x 1 hour');
  const rows = hourly(db);
  t.same(rows.map((r) => [r['owner_id'], r['hour']]), [['u1', H12 - 2 * HOUR], ['', H12 - HOUR], ['u1', H12 - HOUR], ['u2', H12 - HOUR]]);
  t.match(rows[2], { requests: 2, bytes: 10, cached_bytes: 10, hits: 1, cache_lookups: 1, status_counts: '{"206":1,"404":1}', country_counts: '{"NG":1}' });
  t.match(rows[1], { requests: 1, bytes: 9, status_counts: '{"404":1}', country_counts: '{}' }, 'requests of no owner are rolled up under ""');
  t.equal(db.prepare('SELECT rolled_until FROM cdn_rollup_state').pluck().get(), H12, 'rolled up to the current hour');

  const after = (await log.traffic.ownerHours('u1', H12 - 23 * HOUR, LOG_NOW));
  t.same(after.map(({ ownerId: _o, ...h }) => h), EXPECTED_U1, 'roll-ups + raw rows give what raw rows gave');
  t.same((await log.traffic.ownerHours('u2', H12 - 23 * HOUR, LOG_NOW)).map((h) => [h.hour, h.requests, h.cacheLookups, h.hits]), [[H12 - HOUR, 1, 1, 0]]);

  t.same(await log.maintain(), { rolledHours: 0, expiredRequests: 0, expiredHours: 0 }, 'running again changes nothing');
  t.same(hourly(db), rows, 'the roll-ups are unchanged');
});

t.test('a request recorded after its hour was rolled up is added to that roll-up, once', async (t) => {
  const clock = { now: H12 - 3 * HOUR };
  const { db, log } = setup(clock);
  t.teardown(() => db.close());
  recordTraffic(log);
  clock.now = LOG_NOW;
  await log.maintain();
  // A long download that started at 11:59 and ended now.
  log.record(rec({ time: H12 - 60_000, status: 200, bytesSent: 5000, cacheStatus: 'HIT', country: 'NG' }));
  await log.flush();
  const hour11 = (await log.traffic.ownerHours('u1', H12 - HOUR, H12 - 1));
  t.same(hour11.map(({ ownerId: _o, ...h }) => h), [
    { hour: H12 - HOUR, requests: 3, bytes: 5010, cachedBytes: 5010, hits: 2, cacheLookups: 2, statusCounts: { '206': 1, '404': 1, '200': 1 }, countryCounts: { NG: 2 } },
  ]);
  clock.now = LOG_NOW + HOUR;
  await log.maintain();
  t.equal((await log.traffic.ownerHours('u1', H12 - HOUR, H12 - 1))[0]?.requests, 3, 'not counted again by the next roll-up');
  t.equal((await log.traffic.ownerHours('u1', H12, clock.now))[0]?.requests, 1, 'the 12:00 hour, now rolled up');
});

t.test('a roll-up after a long pause covers every hour since the last one', async (t) => {
  const clock = { now: H12 - 3 * HOUR };
  const { db, log } = setup(clock);
  t.teardown(() => db.close());
  recordTraffic(log);
  log.record(rec({ time: LOG_NOW + 30 * HOUR, status: 200, bytesSent: 1 }));
  await log.flush();
  clock.now = LOG_NOW + 31 * HOUR;
  await log.maintain();
  t.equal(db.prepare("SELECT sum(requests) FROM cdn_hourly WHERE owner_id = 'u1'").pluck().get(), 6);
});

t.test('rows and roll-ups older than retentionDays expire; younger ones stay', async (t) => {
  const clock = { now: LOG_NOW };
  const { db, log } = setup(clock);
  t.teardown(() => db.close());
  recordTraffic(log);
  await log.maintain();
  const rawCount = db.prepare('SELECT count(*) FROM cdn_requests').pluck();
  const hourCount = db.prepare('SELECT count(*) FROM cdn_hourly').pluck();
  t.equal(rawCount.get(), 7);

  // Seven days after 11:00:00.005: the 10:xx rows and the 10:00 roll-up are past the retention, the rest not.
  clock.now = H12 - HOUR + 7 * 24 * HOUR + 5;
  const r = await log.maintain();
  t.equal(r.expiredRequests, 2, 'the two requests of 10:xx');
  t.equal(r.expiredHours, 1, 'the 10:00 roll-up (it ended more than 7 days ago)');
  t.equal(rawCount.get(), 5);
  t.same(db.prepare('SELECT DISTINCT hour FROM cdn_hourly ORDER BY hour').pluck().all().slice(0, 1), [H12 - HOUR]);

  clock.now = LOG_NOW + 8 * 24 * HOUR;
  await log.maintain();
  t.equal(rawCount.get(), 0, 'everything expired after eight days');
  t.equal(hourCount.get(), 0);
});

t.test('startup rolls up and expires what accumulated while the server was down', async (t) => {
  const db = openDatabase(':memory:');
  t.teardown(() => db.close());
  const first = new RequestLog(new SqliteStore(db), { bufferSize: 10, flushIntervalMs: 1000, retentionDays: 7 }, { clock: () => H12 - 3 * HOUR, scheduler: NO_TIMERS });
  recordTraffic(first);
  await first.close();
  t.equal(db.prepare('SELECT count(*) FROM cdn_hourly').pluck().get(), 0, 'closing rolls nothing up');
  const second = new RequestLog(new SqliteStore(db), { bufferSize: 10, flushIntervalMs: 1000, retentionDays: 7 }, { clock: () => LOG_NOW + HOUR, scheduler: NO_TIMERS });
  await second.close(); // waits for the maintenance its construction started
  t.equal(db.prepare('SELECT rolled_until FROM cdn_rollup_state').pluck().get(), H12 + HOUR, 'rolled up at construction');
  t.equal(db.prepare('SELECT sum(requests) FROM cdn_hourly').pluck().get(), 7);
});
