// Proxy logs from the request log (real RequestLog and SQLite): the owner's window, blocked by reason,
// CDN refusals, origin errors, geo concentration, top sources by requests and by bytes with their own
// risk, the series with its empty buckets, and the usage-event fallback; the risk index's signals.
import t from 'tap';
import { openDatabase } from '../../src/db/open.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import { RequestLog, type Scheduler } from '../../src/analytics/request-log.js';
import { EdgeTrafficRepo, type EdgeTrafficQuery } from '../../src/db/repos/edge-traffic.js';
import { bucketMsFor, buildProxyLogs, factsFromUsage, TOP_SOURCES, type ReportWindow } from '../../src/proxy/proxy-logs.js';
import { concentration, riskOf, sourceRisk } from '../../src/proxy/risk.js';
import type { UsageEvent } from '../../src/db/repos/usage.js';
import { HOUR, LOG_NOW as NOW, logRecord } from '../helpers/log-records.js';

const NO_TIMERS: Scheduler = { every: () => () => undefined, soon: () => undefined };
const MIN = 60_000;

function proxied(over: Parameters<typeof logRecord>[0] = {}): ReturnType<typeof logRecord> {
  return logRecord({ surface: 'proxy', host: 'shop.example.com', assetId: null, cacheStatus: null, method: 'GET', path: '/', ...over });
}

async function trafficOf(records: ReturnType<typeof logRecord>[]): Promise<EdgeTrafficRepo> {
  const db = openDatabase(':memory:');
  t.teardown(() => db.close());
  const store = new SqliteStore(db);
  const log = new RequestLog(store, { bufferSize: 1000, flushIntervalMs: 1000, retentionDays: 7 }, { clock: () => NOW, scheduler: NO_TIMERS });
  for (const r of records) log.record(r);
  await log.flush();
  return new EdgeTrafficRepo(store);
}

const window = (hostname: string | null, hours = 24): ReportWindow => ({
  fromMs: NOW - hours * HOUR + 1,
  toMs: NOW,
  hours,
  bucketMs: bucketMsFor(hours),
  hostname,
});

async function report(repo: EdgeTrafficRepo, hostname: string | null, hours = 24): Promise<ReturnType<typeof buildProxyLogs>> {
  const w = window(hostname, hours);
  const q: EdgeTrafficQuery = { ownerId: 'u1', fromMs: w.fromMs, toMs: w.toMs, hostname: hostname ?? '' };
  const facts = {
    groups: await repo.groups(q),
    series: await repo.series(q, w.bucketMs),
    byRequests: await repo.topSources(q, 'requests', TOP_SOURCES),
    byBytes: await repo.topSources(q, 'bytes', TOP_SOURCES),
  };
  const hostnames = [
    { hostname: 'shop.example.com', kind: 'project' as const, projectId: 'p1', verified: true, https: { state: 'issued' as const, certificate: 'acme' as const, notAfter: '2027-03-01T00:00:00.000Z', lastError: null } },
    { hostname: 'cdn.localhost', kind: 'cdn' as const, projectId: null, verified: true, https: null },
  ];
  return buildProxyLogs(facts, true, w, hostname === null ? hostnames : hostnames.filter((h) => h.hostname === hostname), []);
}

t.test('counts by decision, CDN refusals, origin errors, hostnames, bytes', async (t) => {
  const repo = await trafficOf([
    proxied({ clientIp: '198.51.100.1', bytesSent: 100, country: 'DE' }),
    proxied({ clientIp: '198.51.100.1', bytesSent: 100, country: 'DE', status: 502 }),
    proxied({ clientIp: '198.51.100.2', bytesSent: 10, country: 'NG', status: 429, decision: 'rate-limited' }),
    proxied({ clientIp: '198.51.100.3', bytesSent: 10, country: 'US', status: 403, decision: 'country-blocked' }),
    logRecord({ clientIp: '198.51.100.4', bytesSent: 5000, country: 'DE' }), // a CDN download
    logRecord({ clientIp: '198.51.100.5', bytesSent: 0, country: '', status: 403, cacheStatus: null }), // a CDN refusal
    proxied({ ownerId: 'u2', host: 'other.example.com' }), // someone else's
    proxied({ time: NOW - 25 * HOUR }), // before the window
  ]);
  const all = await report(repo, null);
  t.same(all.requests, { total: 6, allowed: 3, blocked: 3, blockedBy: { 'rate-limited': 1, 'country-blocked': 1, refused: 1 }, serverErrors: 1 });
  t.equal(all.bytes, 5220);
  t.same(all.hostnames, [
    { hostname: 'shop.example.com', kind: 'project', projectId: 'p1', verified: true, https: { state: 'issued', certificate: 'acme', notAfter: '2027-03-01T00:00:00.000Z', lastError: null }, requests: 4, blocked: 2 },
    { hostname: 'cdn.localhost', kind: 'cdn', projectId: null, verified: true, https: null, requests: 2, blocked: 1 },
  ]);
  const shop = await report(repo, 'shop.example.com');
  t.same(shop.requests, { total: 4, allowed: 2, blocked: 2, blockedBy: { 'rate-limited': 1, 'country-blocked': 1 }, serverErrors: 1 });
  t.equal(shop.hostname, 'shop.example.com');
  t.same(shop.topSources.map((s) => [s.ip, s.requests, s.bytes, s.blocked]), [
    ['198.51.100.1', 2, 200, 0],
    ['198.51.100.2', 1, 10, 1],
    ['198.51.100.3', 1, 10, 1],
  ]);
  t.same(all.topSourcesByBytes.map((s) => s.ip).slice(0, 2), ['198.51.100.4', '198.51.100.1'], 'by bytes: the CDN download first');
  t.same(shop.geo, [
    { country: 'Germany', code: 'DE', requests: 2, share: 0.5 },
    { country: 'Nigeria', code: 'NG', requests: 1, share: 0.25 },
    { country: 'United States', code: 'US', requests: 1, share: 0.25 },
  ]);
  t.same(shop.geoConcentration, { index: 0.375, topCountry: 'Germany', topShare: 0.5 });
});

t.test('the series covers every bucket of the window, oldest first, and adds up', async (t) => {
  const repo = await trafficOf([
    proxied({ time: NOW }),
    proxied({ time: NOW - 1 * MIN, decision: 'ip-blocked', status: 403 }),
    proxied({ time: NOW - 3 * HOUR, bytesSent: 7 }),
  ]);
  const p = await report(repo, null);
  t.equal(p.series.bucketSeconds, 300);
  t.equal(p.series.points.length, 24 * 12 + 1, 'a partial bucket at each end');
  t.equal(p.series.points.at(-1)?.start, new Date(Math.floor(NOW / (5 * MIN)) * 5 * MIN).toISOString());
  t.equal(p.series.points.reduce((n, x) => n + x.requests, 0), 3);
  t.equal(p.series.points.reduce((n, x) => n + x.blocked, 0), 1);
  const week = await report(repo, null, 168);
  t.equal(week.series.bucketSeconds, 3600);
  t.equal(week.series.points.reduce((n, x) => n + x.requests, 0), 3);
});

t.test('risk: signals and their weights; a flood from one blocked source rates high', async (t) => {
  const quiet = riskOf({ requests: 100, blocked: 0, serverErrors: 0, topSourceRequests: 10, geoConcentration: 0.3, anomalies: [] });
  t.equal(quiet.index, 0);
  t.equal(quiet.rating, 'low');
  t.same(quiet.signals.map((s) => s.name), ['blocked-share', 'source-concentration', 'geo-concentration', 'origin-errors', 'anomalies']);
  const flood = riskOf({ requests: 1000, blocked: 900, serverErrors: 0, topSourceRequests: 950, geoConcentration: 1, anomalies: [{ severity: 'high', ongoing: true }] });
  // 35 * 0.9 + 20 * (0.95 - 0.3) / 0.7 + 10 * 1 + 0 + 20 * 1 = 31.5 + 18.571 + 10 + 20
  t.equal(flood.index, 80);
  t.equal(flood.rating, 'critical');
  t.same(flood.signals.find((s) => s.name === 'blocked-share'), { name: 'blocked-share', value: 0.9, weight: 35, points: 31.5 });
  const ended = riskOf({ requests: 10, blocked: 0, serverErrors: 5, topSourceRequests: 10, geoConcentration: 1, anomalies: [{ severity: 'medium', ongoing: false }] });
  // Too few requests for concentration; 5xx share 0.5 doubled = 1 -> 15; an ended medium event 0.3 * 20 = 6.
  t.equal(ended.index, 21);
  t.equal(ended.rating, 'medium');
  t.same(sourceRisk({ requests: 50, blocked: 50 }, 100), { index: 83, rating: 'critical' });
  t.same(sourceRisk({ requests: 1, blocked: 0 }, 100), { index: 0, rating: 'low' });
  t.equal(concentration([1, 1, 1, 1]), 0.25);
  t.equal(concentration([]), 0);
});

t.test('the fallback: download usage events as CDN requests, available false', async (t) => {
  const ev = (over: Partial<UsageEvent>): UsageEvent => ({
    id: 'e', userId: 'u1', assetId: 'a', eventType: 'download', source: 'cdn', bytes: 100, hostname: 'cdn.localhost',
    country: '', statusCode: 200, clientIp: '', metadata: { key: 'a/x' }, createdAt: NOW, ...over,
  });
  const w = window(null);
  const events = [
    ev({ clientIp: '10.0.0.1', bytes: 5, country: 'FR' }),
    ev({ clientIp: '10.0.0.1', bytes: 5, country: 'FR' }),
    ev({ clientIp: '10.0.0.2', bytes: 50, statusCode: 403 }),
    ev({ clientIp: '10.0.0.3', bytes: 1, country: 'FR', createdAt: NOW - 2 * HOUR }),
  ];
  const p = buildProxyLogs(factsFromUsage(events, w), false, w, [], []);
  t.equal(p.available, false);
  t.same(p.requests, { total: 4, allowed: 3, blocked: 1, blockedBy: { refused: 1 }, serverErrors: 0 });
  t.same(p.topSources.map((s) => [s.ip, s.requests, s.bytes, s.blocked]), [['10.0.0.1', 2, 10, 0], ['10.0.0.2', 1, 50, 1], ['10.0.0.3', 1, 1, 0]]);
  t.same(p.topSourcesByBytes.map((s) => s.ip), ['10.0.0.2', '10.0.0.1', '10.0.0.3']);
  t.equal(p.series.points.reduce((n, x) => n + x.requests, 0), 4);
  t.same(p.geo[0], { country: 'France', code: 'FR', requests: 3, share: 0.75 });
  const empty = buildProxyLogs(factsFromUsage([], w), false, w, [], []);
  t.same(empty.requests, { total: 0, allowed: 0, blocked: 0, blockedBy: {}, serverErrors: 0 });
  t.same([empty.risk.index, empty.risk.rating], [0, 'low']);
});
