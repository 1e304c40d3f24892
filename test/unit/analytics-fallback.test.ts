import t from 'tap';
import { hourlyBuckets, usageFallbackAnalytics } from '../../src/analytics/usage-fallback.js';
import { buildProxyLogs, riskIndex } from '../../src/proxy/proxy-logs.js';
import { countryName } from '../../src/analytics/country-names.js';
import type { UsageEvent } from '../../src/db/repos/usage.js';

const NOW = Date.parse('2026-11-21T12:30:00Z');
const HOUR = 3_600_000;

function event(over: Partial<UsageEvent>): UsageEvent {
  return {
    id: 'e', userId: 'u', assetId: 'a', eventType: 'download', source: 'cdn', bytes: 100, hostname: 'cdn.localhost',
    country: '', statusCode: 200, clientIp: '', metadata: { key: 'a/x' }, createdAt: NOW, ...over,
  };
}

t.test('24 hourly buckets ending with the current hour', async (t) => {
  const b = hourlyBuckets(NOW);
  t.equal(b.length, 24);
  t.equal(new Date(b[23] as number).toISOString(), '2026-11-21T12:00:00.000Z');
  t.equal(new Date(b[0] as number).toISOString(), '2026-11-20T13:00:00.000Z');
});

t.test('usage-event fallback: counts, bytes, statuses, countries and the series', async (t) => {
  const events = [
    event({ bytes: 10, country: 'DE' }),
    event({ bytes: 20, country: 'de', createdAt: NOW - 2 * HOUR }),
    event({ bytes: 30, statusCode: 206, country: 'NG', createdAt: NOW - 23 * HOUR }),
    event({ bytes: 40, statusCode: 304 }),
    event({ bytes: 999, createdAt: NOW - 24 * HOUR }), // outside the window
  ];
  const a = usageFallbackAnalytics(events, NOW, 'cdn.localhost');
  t.equal(a.enabled, true);
  t.equal(a.available, false, 'says the numbers are not from the edge log');
  t.equal(a.hostname, 'cdn.localhost');
  t.equal(a.requests, 4);
  t.equal(a.bytes, 100);
  t.equal(a.cachedBytes, 0);
  t.equal(a.cacheHitRatio, 0);
  t.same(a.statusCodes, { '200': 2, '206': 1, '304': 1 });
  t.same(a.countries, { Germany: 2, Nigeria: 1 });
  t.equal(a.series.length, 24);
  t.same(a.series[23], { timestamp: '2026-11-21T12:00:00.000Z', requests: 2, bytes: 50, cachedBytes: 0 });
  t.same(a.series[21], { timestamp: '2026-11-21T10:00:00.000Z', requests: 1, bytes: 20, cachedBytes: 0 });
  t.equal(a.series.reduce((n, p) => n + p.requests, 0), 4, 'the series adds up to the total');
});

t.test('country names', async (t) => {
  t.equal(countryName('US'), 'United States');
  t.equal(countryName('ng'), 'Nigeria');
  t.equal(countryName('Atlantis'), 'Atlantis');
});

t.test('proxy logs: allowed and blocked, geo shares, top sources, risk', async (t) => {
  const events = [
    event({ clientIp: '10.0.0.1', bytes: 5, country: 'FR' }),
    event({ clientIp: '10.0.0.1', bytes: 5, country: 'FR' }),
    event({ clientIp: '10.0.0.2', bytes: 50, statusCode: 403 }),
    event({ clientIp: '10.0.0.3', bytes: 1, country: 'FR' }),
  ];
  const p = buildProxyLogs(events, NOW - 24 * HOUR, NOW, 'cdn.localhost');
  t.same(p.requests, { total: 4, allowed: 3, blocked: 1 });
  t.same(p.geo, [{ country: 'France', requests: 3, share: 0.75 }, { country: 'Unknown', requests: 1, share: 0.25 }]);
  t.same(p.topSources, [{ ip: '10.0.0.1', requests: 2, bytes: 10 }, { ip: '10.0.0.2', requests: 1, bytes: 50 }, { ip: '10.0.0.3', requests: 1, bytes: 1 }]);
  t.same(p.risk, { index: 0.25, rating: 'medium' });
  t.equal(p.from, new Date(NOW - 24 * HOUR).toISOString());
  const empty = buildProxyLogs([], NOW - 24 * HOUR, NOW, 'cdn.localhost');
  t.same(empty.requests, { total: 0, allowed: 0, blocked: 0 });
  t.same(empty.risk, { index: 0, rating: 'low' });
});

t.test('risk index: concentration on one source raises it', async (t) => {
  t.equal(riskIndex(100, 0, 10), 0);
  t.equal(riskIndex(100, 0, 100), 0.25);
  t.equal(riskIndex(10, 0, 10), 0, 'too few requests to call it concentrated');
  t.equal(riskIndex(100, 100, 100), 1);
});
