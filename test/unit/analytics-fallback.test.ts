import t from 'tap';
import { hourlyBuckets, usageFallbackAnalytics } from '../../src/analytics/usage-fallback.js';
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
