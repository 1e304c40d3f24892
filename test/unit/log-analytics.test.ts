// Summary analytics computed from the CDN request log: totals equal the series, the
// cache figures count HITs only, countries by name, the 24-point window, and "nothing in the log" as
// undefined (the caller then falls back to usage events). Records go through a real RequestLog.
import t from 'tap';
import { openDatabase } from '../../src/db/open.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import { RequestLog, type Scheduler } from '../../src/analytics/request-log.js';
import { logAnalytics, windowStart } from '../../src/analytics/log-analytics.js';
import { emptyHour } from '../../src/db/repos/traffic.js';
import { HOUR, LOG_NOW as NOW, logRecord as rec } from '../helpers/log-records.js';

const NO_TIMERS: Scheduler = { every: () => () => undefined, soon: () => undefined };

async function logWith(records: Parameters<RequestLog['record']>[0][]): Promise<RequestLog> {
  const db = openDatabase(':memory:');
  t.teardown(() => db.close());
  // Started a day earlier, so the traffic below is rolled up by maintain() (not merged as late rows).
  const clock = { now: NOW - 30 * HOUR };
  const log = new RequestLog(new SqliteStore(db), { bufferSize: 1000, flushIntervalMs: 1000, retentionDays: 7 }, { clock: () => clock.now, scheduler: NO_TIMERS });
  for (const r of records) log.record(r);
  clock.now = NOW;
  await log.maintain();
  return log;
}

t.test('analytics from the log: totals, cache figures, statuses, countries and the hourly series', async (t) => {
  const log = await logWith([
    rec({ bytesSent: 1000, cacheStatus: 'HIT', country: 'DE' }),
    rec({ bytesSent: 1000, cacheStatus: 'MISS', country: 'DE' }),
    rec({ bytesSent: 500, cacheStatus: 'HIT', country: 'NG', status: 206, time: NOW - 2 * HOUR }),
    rec({ bytesSent: 0, cacheStatus: null, country: '', status: 404, time: NOW - 23 * HOUR }),
    rec({ bytesSent: 70, cacheStatus: 'EXPIRED', country: 'US', time: NOW - 5 * HOUR }),
    rec({ bytesSent: 9, cacheStatus: 'BYPASS', country: 'US', time: NOW - 5 * HOUR }),
    rec({ bytesSent: 999, time: NOW - 24 * HOUR }), // before the first point of the series
    rec({ bytesSent: 999, ownerId: 'someone-else' }),
    rec({ bytesSent: 999, ownerId: null }),
  ]);
  const a = logAnalytics(await log.traffic.ownerHours('u1', windowStart(NOW), NOW), NOW, 'cdn.example');
  t.ok(a);
  if (!a) return;
  t.match(a, { enabled: true, available: true, hostname: 'cdn.example' });
  t.equal(a.requests, 6);
  t.equal(a.bytes, 2579);
  t.equal(a.cachedBytes, 1500, 'bytes sent by HITs');
  t.equal(a.cacheHitRatio, 2 / 5, 'HITs over the requests that reached the cache (the 404 did not)');
  t.same(a.statusCodes, { '200': 4, '206': 1, '404': 1 });
  t.same(a.countries, { Germany: 2, Nigeria: 1, 'United States': 2 }, 'names; the unknown country is left out');
  t.equal(a.series.length, 24);
  t.equal(a.series[0]?.timestamp, '2026-11-20T13:00:00.000Z', 'the window starts with the hour 23 hours before the current one');
  t.same(a.series[23], { timestamp: '2026-11-21T12:00:00.000Z', requests: 2, bytes: 2000, cachedBytes: 1000 });
  t.same(a.series[21], { timestamp: '2026-11-21T10:00:00.000Z', requests: 1, bytes: 500, cachedBytes: 500 });
  t.same(a.series[18], { timestamp: '2026-11-21T07:00:00.000Z', requests: 2, bytes: 79, cachedBytes: 0 });
  t.same(a.series[0], { timestamp: '2026-11-20T13:00:00.000Z', requests: 1, bytes: 0, cachedBytes: 0 });
  const sum = (k: 'requests' | 'bytes' | 'cachedBytes'): number => a.series.reduce((n, p) => n + p[k], 0);
  t.same([sum('requests'), sum('bytes'), sum('cachedBytes')], [a.requests, a.bytes, a.cachedBytes], 'the series adds up to the totals');
});

t.test('no requests of the user in the window: undefined (the usage-event fallback applies)', async (t) => {
  t.equal(logAnalytics([], NOW, 'cdn.example'), undefined);
  t.equal(logAnalytics([emptyHour('u1', NOW - 30 * HOUR)], NOW, 'cdn.example'), undefined, 'an hour outside the window');
  const log = await logWith([rec({ ownerId: 'other' }), rec({ time: NOW - 25 * HOUR })]);
  t.equal(logAnalytics(await log.traffic.ownerHours('u1', windowStart(NOW), NOW), NOW, 'cdn.example'), undefined);
});

t.test('no request reached the cache: the hit ratio is 0', async (t) => {
  const log = await logWith([rec({ cacheStatus: null, status: 403 })]);
  const a = logAnalytics(await log.traffic.ownerHours('u1', windowStart(NOW), NOW), NOW, 'cdn.example');
  t.match(a, { requests: 1, cacheHitRatio: 0, cachedBytes: 0 });
});

