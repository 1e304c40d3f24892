// Analytics from the CDN request log, end to end: the compiled server trusts 127.0.0.1 as a proxy
// (X-Forwarded-For, country header x-test-country) and flushes its log every 50 ms. An exact set of CDN
// requests goes over real sockets to the CDN listener; the summary, the proxy logs and the metrics
// must count exactly those. A second loopback address (127.0.0.2) is an untrusted peer whose
// forwarding headers are ignored.
import t from 'tap';
import { countryName } from '../../src/analytics/country-names.js';
import { ApiClientError } from '../../src/client/index.js';
import { apiUser, eventually, PROVIDER_NAMES, query, ResponseRecorder } from '../helpers/api.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { startServer } from '../helpers/server.js';

const recorder = new ResponseRecorder();
const server = await startServer({
  env: { S3EDGE_CDN_TRUSTED_PROXIES: '127.0.0.1', S3EDGE_CDN_COUNTRY_HEADER: 'x-test-country', S3EDGE_CDN_LOG_FLUSH_INTERVAL_MS: '50' },
});
t.teardown(() => server.stop());
const CDN_HOST = `cdn.localhost:${new URL(server.cdnUrl).port}`;
const UA = 'analytics-e2e/1.0';

interface LogRow {
  owner_id: string | null;
  asset_id: string | null;
  host: string;
  status: number;
  bytes_sent: number;
  cache_status: string | null;
  client_ip: string;
  country: string;
  user_agent: string;
}

async function cdn(target: string, headers: [string, string][], from?: string): Promise<RawResponse> {
  const res = await rawRequest(
    { url: server.cdnUrl, ...(from ? { localAddress: from } : {}) },
    { method: 'GET', target, headers: [['Host', CDN_HOST], ['User-Agent', UA], ...headers] },
  );
  recorder.record({ method: 'GET', path: `cdn ${target}`, status: res.status, body: `${JSON.stringify(res.headers)}\n${res.text}` });
  return res;
}

const pathOf = (url: string): string => new URL(url).pathname;

const alice = await apiUser(server, ['assets:read', 'assets:write', 'usage:read'], { recorder });
const ops = await apiUser(server, ['metrics:read'], { recorder });
const A = Buffer.from(Array.from({ length: 1000 }, (_, i) => 65 + (i % 26)));
const B = Buffer.from('b'.repeat(100));
const a = await alice.client.upload({ file: A, fileName: 'a.bin', contentType: 'application/octet-stream' });
const b = await alice.client.upload({ file: B, fileName: 'b.txt', contentType: 'text/plain' });

t.test('before any CDN request the summary falls back to usage events', async (t) => {
  const s = await alice.client.summary();
  t.match(s.analytics, { enabled: true, available: false, hostname: 'cdn.localhost', requests: 0 });
  const p = await alice.client.proxyLogs();
  t.match(p, { available: false, requests: { total: 0 } });
});

t.test('an exact set of CDN requests is counted exactly, by status and country', async (t) => {
  const expect = async (res: Promise<RawResponse>, status: number, what: string): Promise<void> => {
    t.equal((await res).status, status, what);
  };
  // 3 from Germany: two from one client, one through a chain whose right-most hop is the trusted proxy.
  await expect(cdn(pathOf(a.publicUrl), [['X-Forwarded-For', '198.51.100.10'], ['x-test-country', 'DE']]), 200, 'DE 1');
  await expect(cdn(pathOf(a.publicUrl), [['X-Forwarded-For', '198.51.100.10'], ['x-test-country', 'DE']]), 200, 'DE 2');
  await expect(cdn(pathOf(a.publicUrl), [['X-Forwarded-For', '198.51.100.77, 127.0.0.1'], ['x-test-country', 'DE']]), 200, 'DE 3');
  // 2 from Nigeria (a lower-case code is accepted).
  await expect(cdn(pathOf(b.publicUrl), [['X-Forwarded-For', '203.0.113.9'], ['x-test-country', 'ng']]), 200, 'NG 1');
  await expect(cdn(pathOf(b.publicUrl), [['X-Forwarded-For', '203.0.113.9'], ['x-test-country', 'NG']]), 200, 'NG 2');
  // A 404 for a path that names nothing: it has no owner, so it is nobody's analytics.
  await expect(cdn(`/${'0'.repeat(32)}/nothing.txt`, [['X-Forwarded-For', '203.0.113.50'], ['x-test-country', 'FR']]), 404, 'unknown path');
  // A range from a public address without a country header: placed by GeoIP.
  await expect(cdn(pathOf(a.publicUrl), [['X-Forwarded-For', '8.8.8.8'], ['Range', 'bytes=0-99']]), 206, 'range via GeoIP');
  // An untrusted peer: its forwarding headers are ignored.
  await expect(cdn(pathOf(b.publicUrl), [['X-Forwarded-For', '1.2.3.4'], ['x-test-country', 'FR']], '127.0.0.2'), 200, 'untrusted peer');

  let s = await alice.client.summary();
  await eventually(async () => {
    s = await alice.client.summary();
    return s.analytics.requests >= 7;
  }, 'the summary counts the seven requests of alice');
  const rows = query<LogRow>(server, 'SELECT * FROM cdn_requests WHERE owner_id = ? ORDER BY id', a.userId);
  t.equal(rows.length, 7, 'seven log rows of alice (the summary flushed the buffer)');
  const geoCode = rows.find((r) => r.client_ip === '8.8.8.8')?.country ?? '';
  t.match(geoCode, /^[A-Z]{2}$/, 'GeoIP placed 8.8.8.8');

  const an = s.analytics;
  t.match(an, { enabled: true, available: true, hostname: 'cdn.localhost' });
  t.equal(an.requests, 7, 'exactly the requests made (the ownerless 404 is not counted)');
  t.same(an.statusCodes, { '200': 6, '206': 1 });
  const countries: Record<string, number> = { Germany: 3, Nigeria: 2 };
  countries[countryName(geoCode)] = (countries[countryName(geoCode)] ?? 0) + 1;
  t.same(an.countries, countries, 'by name; the untrusted peer has no country');
  t.equal(an.bytes, 3 * A.length + 2 * B.length + 100 + B.length, 'bytes sent');
  const hitRows = rows.filter((r) => r.cache_status === 'HIT');
  const lookups = rows.filter((r) => r.cache_status !== null).length;
  t.equal(an.cachedBytes, hitRows.reduce((n, r) => n + r.bytes_sent, 0), 'cachedBytes: the bytes of the requests the log marked HIT');
  t.equal(an.cacheHitRatio, lookups === 0 ? 0 : hitRows.length / lookups, 'HITs over the requests that reached the cache');
  // With the edge cache: each file's first request fills it, every later one (the range too) is a HIT.
  t.same(rows.map((r) => r.cache_status), ['MISS', 'HIT', 'HIT', 'MISS', 'HIT', 'HIT', 'HIT'], 'the cache statuses, in order');
  t.equal(an.cachedBytes, 2 * A.length + B.length + 100 + B.length, 'cachedBytes: the bytes the HITs sent');
  t.equal(an.cacheHitRatio, 5 / 7);
  t.equal(an.series.length, 24);
  const sum = (k: 'requests' | 'bytes' | 'cachedBytes'): number => an.series.reduce((n, p) => n + p[k], 0);
  t.same([sum('requests'), sum('bytes'), sum('cachedBytes')], [an.requests, an.bytes, an.cachedBytes], 'the series adds up to the totals');
  t.equal(s.downloadedBytes, an.bytes, 'downloadedBytes counts the CDN downloads (usage events)');
});

t.test('the log rows: client IPs through trusted proxies, countries, the ownerless 404, the untrusted peer', async (t) => {
  await eventually(() => query(server, 'SELECT id FROM cdn_requests').length >= 8, 'all eight requests flushed by the timer');
  const all = query<LogRow>(server, 'SELECT * FROM cdn_requests ORDER BY id');
  t.equal(all.length, 8);
  t.same(all.map((r) => [r.client_ip, r.status]), [
    ['198.51.100.10', 200], ['198.51.100.10', 200], ['198.51.100.77', 200], ['203.0.113.9', 200], ['203.0.113.9', 200],
    ['203.0.113.50', 404], ['8.8.8.8', 206], ['127.0.0.2', 200],
  ]);
  t.same(all.map((r) => r.country).slice(0, 6), ['DE', 'DE', 'DE', 'NG', 'NG', 'FR']);
  t.match(all[5], { owner_id: null, asset_id: null, cache_status: null, host: 'cdn.localhost' }, 'the unknown path');
  t.match(all[7], { client_ip: '127.0.0.2', country: '', owner_id: a.userId, asset_id: b.id, bytes_sent: B.length }, 'X-Forwarded-For and the country header of an untrusted peer are ignored');
  t.ok(all.every((r) => r.user_agent === UA), 'user agents');
});

t.test('proxy logs come from the log: allowed and blocked, geo, top sources are the forwarded client IPs', async (t) => {
  const p = await alice.client.proxyLogs();
  const geoCode = query<{ country: string }>(server, "SELECT country FROM cdn_requests WHERE client_ip = '8.8.8.8'")[0]?.country ?? '';
  t.match(p, { available: true, hostname: null, requests: { total: 7, allowed: 7, blocked: 0 }, risk: { rating: 'low' } });
  t.match(p.hostnames, [{ hostname: 'cdn.localhost', kind: 'cdn', requests: 7 }]);
  t.same(p.topSources.map(({ ip, requests, bytes }) => ({ ip, requests, bytes })), [
    { ip: '198.51.100.10', requests: 2, bytes: 2 * A.length },
    { ip: '203.0.113.9', requests: 2, bytes: 2 * B.length },
    { ip: '198.51.100.77', requests: 1, bytes: A.length },
    { ip: '127.0.0.2', requests: 1, bytes: B.length },
    { ip: '8.8.8.8', requests: 1, bytes: 100 },
  ]);
  const geo = Object.fromEntries(p.geo.map((g) => [g.country, g.requests]));
  const want: Record<string, number> = { Germany: 3, Nigeria: 2, Unknown: 1 };
  want[countryName(geoCode)] = (want[countryName(geoCode)] ?? 0) + 1;
  t.same(geo, want);
});

t.test('metrics: Prometheus text with the request log counters, scope metrics:read', async (t) => {
  const text = await ops.client.metrics();
  const value = (name: string): number | undefined => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  t.match(text, /^# TYPE s3edge_cdn_log_dropped_total counter$/m);
  t.match(text, /^# TYPE s3edge_cdn_log_buffered gauge$/m);
  t.equal(value('s3edge_cdn_log_dropped_total'), 0, 'nothing dropped');
  t.ok((value('s3edge_cdn_log_flushed_total') ?? 0) >= 8, 'the eight requests were flushed');
  t.ok((value('s3edge_cdn_log_buffered') ?? -1) >= 0, 'buffered is reported');
  const raw = await ops.client.raw('GET', '/api/v3/metrics');
  t.equal(raw.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  let refused: unknown;
  try {
    await alice.client.metrics();
  } catch (err) {
    refused = err;
  }
  t.ok(refused instanceof ApiClientError && refused.status === 403, 'a key without metrics:read is refused');
  const anonymous = await fetch(new URL('/api/v3/metrics', server.url));
  t.equal(anonymous.status, 401);
});

t.test('a GeoIP database or trusted proxy that cannot be used stops the start with a config error', async (t) => {
  await t.rejects(
    startServer({ env: { S3EDGE_CDN_GEOIP_DATABASE: '/nonexistent/countries.mmdb' } }),
    /exited \(code 2[\s\S]*config: cannot read cdn\.geoipDatabase \/nonexistent\/countries\.mmdb: ENOENT/,
  );
  await t.rejects(
    startServer({ env: { S3EDGE_CDN_TRUSTED_PROXIES: '127.0.0.1,10.0.0.0/40' } }),
    /exited \(code 2[\s\S]*config: cdn\.trustedProxies: '10\.0\.0\.0\/40': the prefix length must be 0 to 32/,
  );
});

t.test('no internal names in any response', async (t) => {
  recorder.assertNoLeaks(t, PROVIDER_NAMES);
});
