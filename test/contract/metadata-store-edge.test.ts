// The edge group's repositories on both metadata stores (SQLite and a real PostgreSQL): the TLD
// catalogue (prices, popular ranks, promotions, the operator's own names), projects with their
// deployments, hostnames, origins, rules and routes, anomaly events, the request log (batched insert
// with its download usage events, hourly roll-ups, late requests, retention, and the traffic queries
// of the summary and proxy logs), and the cache invalidation feed. Same calls, same expectations.
import t from 'tap';
import type { CdnRequestRecord } from '../../src/db/repos/request-records.js';
import { RequestLog, type Scheduler } from '../../src/analytics/request-log.js';
import { AnomaliesRepo } from '../../src/db/repos/anomalies.js';
import { CacheInvalidationsRepo } from '../../src/db/repos/cache-invalidations.js';
import { CdnLogRepo } from '../../src/db/repos/cdn-log.js';
import { CdnTrafficRepo } from '../../src/db/repos/cdn-traffic.js';
import { EdgeTrafficRepo } from '../../src/db/repos/edge-traffic.js';
import { ProjectsRepo } from '../../src/db/repos/projects.js';
import { TldsRepo, UnknownTld, type TldRecord } from '../../src/db/repos/tlds.js';
import type { SqlExecutor } from '../../src/db/store/types.js';
import type { AnomalyEvent } from '../../src/db/repos/anomaly-event.js';
import { NO_RULES } from '../../src/db/repos/hostname-model.js';
import { HOUR, LOG_NOW, logRecord as rec } from '../helpers/log-records.js';
import { storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);
const NO_TIMERS: Scheduler = { every: () => () => undefined, soon: () => undefined };
const H12 = Date.parse('2026-11-21T12:00:00Z');

async function user(db: SqlExecutor, id: string): Promise<void> {
  await db.run('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)', [id, `name-${id}`, 1]);
}

function tld(name: string, over: Partial<TldRecord> = {}): Omit<TldRecord, 'updatedAt'> {
  return {
    tld: name, registerUsd: 1000, renewUsd: 1200, transferUsd: 900, registerNgn: null, renewNgn: null, transferNgn: null,
    minYears: 1, maxYears: 10, restrictions: '', requiresLocalPresence: false, rdapNotFoundReliable: true, popularRank: null, ...over,
  };
}

stores.each('TLD catalogue: upsert, reads, popular ranks, delete', async (t, open) => {
  const db = await open(t);
  let now = 1000;
  const tlds = new TldsRepo(db, () => now);
  t.equal(await tlds.count(), 0);
  await tlds.upsert([tld('com', { popularRank: 1 }), tld('co.uk', { registerNgn: 500_000, requiresLocalPresence: true, rdapNotFoundReliable: false })]);
  t.equal(await tlds.count(), 2);
  t.same(await tlds.get('co.uk'), { ...tld('co.uk', { registerNgn: 500_000, requiresLocalPresence: true, rdapNotFoundReliable: false }), updatedAt: 1000 }, 'every field, flags as booleans');
  t.equal(await tlds.get('net'), undefined);
  t.same((await tlds.list()).map((x) => x.tld), ['co.uk', 'com'], 'alphabetical');

  now = 2000;
  await tlds.upsert([tld('com', { registerUsd: 1100, popularRank: 1 }), tld('io'), tld('net')]);
  t.match(await tlds.get('com'), { registerUsd: 1100, updatedAt: 2000 }, 'replaced');
  t.equal(await tlds.count(), 4);

  t.equal(await tlds.setPopular(['io', 'com']), true);
  t.same((await tlds.popular()).map((x) => [x.tld, x.popularRank]), [['io', 1], ['com', 2]], 'in the order given');
  await t.rejects(tlds.setPopular(['net', 'nope']), UnknownTld, 'a TLD not in the catalogue');
  t.same((await tlds.popular()).map((x) => x.tld), ['io', 'com'], 'the failed call changed nothing');

  t.equal(await tlds.delete('io'), true);
  t.equal(await tlds.delete('io'), false);
  t.same((await tlds.popular()).map((x) => x.tld), ['com']);
});

stores.each('TLD promotions and own names', async (t, open) => {
  const db = await open(t);
  let now = 5000;
  const tlds = new TldsRepo(db, () => now);
  await tlds.upsert([tld('cv'), tld('ng')]);
  const p1 = await tlds.addPromotion({ tld: 'cv', bonusNgn: 5000, bonusUsd: null, endsOn: '2026-12-31' });
  t.same(p1, { id: p1.id, tld: 'cv', bonusNgn: 5000, bonusUsd: null, endsOn: '2026-12-31', createdAt: 5000, endedAt: null });
  const p2 = await tlds.addPromotion({ tld: 'ng', bonusNgn: null, bonusUsd: 350, endsOn: '2027-01-31' });
  const p3 = await tlds.addPromotion({ tld: 'cv', bonusNgn: 100, bonusUsd: 1, endsOn: '2027-02-28' });
  t.ok(p2.id > p1.id && p3.id > p2.id, 'ids grow');
  t.same((await tlds.promotions()).map((p) => p.id), [p1.id, p3.id, p2.id], 'by TLD, then id');
  t.same((await tlds.promotions('cv')).map((p) => p.id), [p1.id, p3.id]);
  const byTld = await tlds.promotionsByTld();
  t.same([...byTld.keys()], ['cv', 'ng']);
  t.same(byTld.get('cv')?.map((p) => p.id), [p1.id, p3.id]);

  now = 6000;
  t.equal(await tlds.endPromotion(p1.id), true);
  t.equal(await tlds.endPromotion(p1.id), false, 'already ended');
  t.equal(await tlds.endPromotion(999_999), false);
  t.match(await tlds.getPromotion(p1.id), { endedAt: 6000 });
  t.equal(await tlds.getPromotion(999_999), undefined);
  await tlds.delete('cv');
  t.same((await tlds.promotions()).map((p) => p.id), [p2.id], "a TLD's promotions go with it");

  now = 7000;
  t.same(await tlds.putName({ name: 'gold.ng', status: 'premium', priceUsd: 250_000, priceNgn: null, note: 'shiny' }), {
    name: 'gold.ng', status: 'premium', priceUsd: 250_000, priceNgn: null, note: 'shiny', createdAt: 7000,
  });
  now = 8000;
  t.same(await tlds.putName({ name: 'gold.ng', status: 'sold', priceUsd: null, priceNgn: null, note: '' }), {
    name: 'gold.ng', status: 'sold', priceUsd: null, priceNgn: null, note: '', createdAt: 7000,
  }, 'replaced; created when first put');
  await tlds.putName({ name: 'abc.ng', status: 'reserved', priceUsd: null, priceNgn: null, note: '' });
  t.same((await tlds.names()).map((n) => n.name), ['abc.ng', 'gold.ng']);
  t.match(await tlds.name('abc.ng'), { status: 'reserved', createdAt: 8000 });
  t.equal(await tlds.deleteName('abc.ng'), true);
  t.equal(await tlds.deleteName('abc.ng'), false);
  t.equal(await tlds.name('abc.ng'), undefined);
});

stores.each('a transaction across repositories: the catalogue written in it is all or nothing', async (t, open) => {
  const db = await open(t);
  await t.rejects(
    db.transaction(async (tx) => {
      await new TldsRepo(tx).upsert([tld('com'), tld('net')]);
      await new TldsRepo(tx).setPopular(['com', 'org']);
    }),
    UnknownTld,
  );
  t.equal(await new TldsRepo(db).count(), 0, 'the upsert was rolled back with it');
});

stores.each('projects, deployments, hostnames, origins, rules and routes', async (t, open) => {
  const db = await open(t);
  let now = 100;
  const projects = new ProjectsRepo(db, () => now);
  await user(db, 'u1');
  await user(db, 'u2');

  const site = await projects.createProject('u1', 'site');
  t.match(site, { userId: 'u1', name: 'site', createdAt: 100 });
  now = 200;
  const shop = await projects.createProject('u1', 'shop');
  const other = await projects.createProject('u2', 'site');
  await t.rejects(projects.createProject('u1', 'site'), { name: 'ConstraintError', reason: 'duplicate' });
  t.same(await projects.project(site.id), site);
  t.equal(await projects.project('nope'), undefined);
  t.same((await projects.projectsOfUser('u1')).map((p) => p.name), ['site', 'shop'], 'oldest first');
  t.same(await projects.projectByName('u2', 'site'), other);
  t.equal(await projects.projectByName('u2', 'shop'), undefined);

  const d1 = await projects.createDeployment(site.id, 'v1');
  now = 300;
  const d2 = await projects.createDeployment(site.id, 'v2');
  t.same(await projects.deployment(d1.id), { id: d1.id, projectId: site.id, name: 'v1', createdAt: 200 });
  t.same((await projects.deployments(site.id)).map((d) => d.name), ['v2', 'v1'], 'newest first');
  await t.rejects(projects.createDeployment('gone', 'v1'), { name: 'ConstraintError', reason: 'in_use' });
  t.equal(await projects.deployment('nope'), undefined);
  t.ok(d2);

  const origin = { kind: 'url' as const, url: 'https://origin.example.net', preserveHost: false };
  const www = await projects.addHostname(site.id, 'www.example.com', 'tok-1', origin, { ...NO_RULES, blockCountries: ['KP'] });
  t.same(www, {
    id: www.id, hostname: 'www.example.com', projectId: site.id, origin, rules: { ...NO_RULES, blockCountries: ['KP'] },
    verificationToken: 'tok-1', verifiedAt: null, verifiedBy: null, createdAt: 300, updatedAt: 300,
  });
  const api = await projects.addHostname(site.id, 'api.example.com', 'tok-2');
  t.same(api.rules, NO_RULES);
  t.equal(api.origin, null);
  const store = await projects.addHostname(shop.id, 'store.example.com', 'tok-3');
  const theirs = await projects.addHostname(other.id, 'b.example.org', 'tok-4');
  await t.rejects(projects.addHostname(shop.id, 'www.example.com', 'tok'), { name: 'ConstraintError', reason: 'duplicate' }, 'taken by any project');

  t.same(await projects.hostname(api.id), api);
  t.same(await projects.hostnameByName('store.example.com'), store);
  t.equal(await projects.hostnameByName('nope.example.com'), undefined);
  t.same((await projects.hostnamesOfProject(site.id)).map((h) => h.hostname), ['api.example.com', 'www.example.com']);
  t.same((await projects.hostnamesOfUser('u1')).map((h) => h.hostname), ['api.example.com', 'store.example.com', 'www.example.com']);
  t.same((await projects.allHostnames()).map((h) => h.hostname), ['api.example.com', 'b.example.org', 'store.example.com', 'www.example.com']);

  // Rules written by an older version (a field missing) read with the default.
  await db.run('UPDATE project_hostnames SET rules = ? WHERE id = ?', ['{"blockIps":["192.0.2.1"]}', api.id]);
  t.same((await projects.hostname(api.id))?.rules, { ...NO_RULES, blockIps: ['192.0.2.1'] });

  now = 400;
  const bucketOrigin = { kind: 'bucket' as const, bucketId: 'B1', indexDocument: 'index.html', errorDocument: null };
  t.equal(await projects.setOrigin(api.id, bucketOrigin), true);
  t.equal(await projects.setRules(api.id, { ...NO_RULES, allowedMethods: ['GET'] }), true);
  t.match(await projects.hostname(api.id), { origin: bucketOrigin, rules: { allowedMethods: ['GET'] }, updatedAt: 400 });
  t.equal(await projects.setOrigin(api.id, null), true);
  t.equal((await projects.hostname(api.id))?.origin, null);
  t.equal(await projects.setOrigin('nope', origin), false);
  t.equal(await projects.setRules('nope', NO_RULES), false);

  t.same(await projects.routes(), [], 'nothing verified: nothing routed');
  now = 500;
  t.equal(await projects.markVerified(www.id, 'dns'), true);
  t.equal(await projects.markVerified(theirs.id, 'operator'), true);
  t.equal(await projects.markVerified('nope', 'dns'), false);
  t.match(await projects.hostname(www.id), { verifiedAt: 500, verifiedBy: 'dns', updatedAt: 500 });
  t.same(await projects.routes(), [
    { hostnameId: theirs.id, hostname: 'b.example.org', projectId: other.id, ownerId: 'u2', origin: null, rules: NO_RULES, tls: null },
    { hostnameId: www.id, hostname: 'www.example.com', projectId: site.id, ownerId: 'u1', origin, rules: { ...NO_RULES, blockCountries: ['KP'] }, tls: null },
  ]);

  t.equal(await projects.deleteHostname(store.id), true);
  t.equal(await projects.deleteHostname(store.id), false);
  t.equal(await projects.deleteProject(site.id), true);
  t.equal(await projects.deleteProject(site.id), false);
  t.equal(await projects.hostname(www.id), undefined, 'hostnames go with their project');
  t.equal(await projects.deployment(d1.id), undefined, 'deployments too');
  t.same((await projects.routes()).map((r) => r.hostname), ['b.example.org']);
});

function event(over: Partial<AnomalyEvent> = {}): AnomalyEvent {
  return { id: 'e1', hostname: 'h.example.com', ownerId: 'o1', kind: 'rate-spike', severity: 'low', startedAt: 1000, endedAt: null, observed: 100.5, baseline: 10, detail: { z: 7 }, ...over };
}

stores.each('anomaly events: one open per hostname and kind, updates, the window and limit of list()', async (t, open) => {
  const db = await open(t);
  const anomalies = new AnomaliesRepo(db);
  const e = event();
  await anomalies.insert(e);
  await t.rejects(anomalies.insert({ ...e, id: 'e2' }), { name: 'ConstraintError', reason: 'duplicate' });
  t.equal(await anomalies.update('e1', 'high', 500.25, { z: 40 }), true);
  t.same(await anomalies.open(), [{ ...e, severity: 'high', observed: 500.25, detail: { z: 40 } }]);
  t.equal(await anomalies.close('e1', 2000), true);
  t.equal(await anomalies.close('e1', 3000), false, 'already ended');
  t.equal(await anomalies.update('e1', 'low', 1, {}), false, 'an ended event is not changed');
  await anomalies.insert({ ...e, id: 'e2', startedAt: 3000 });
  await anomalies.insert(event({ id: 'e3', kind: 'blocked-surge', startedAt: 2500, endedAt: 2600 }));
  await anomalies.insert(event({ id: 'e4', hostname: 'other.example.com', startedAt: 2500 }));
  await anomalies.insert(event({ id: 'e5', ownerId: 'o2', hostname: 'theirs.example.com' }));
  t.same((await anomalies.open()).map((x) => x.id), ['e5', 'e4', 'e2'], 'open ones, oldest first');

  const q = { ownerId: 'o1', limit: 10 };
  t.same((await anomalies.list({ ...q, fromMs: 0, toMs: 10_000 })).map((x) => x.id), ['e2', 'e4', 'e3', 'e1'], 'newest first, then id');
  t.same((await anomalies.list({ ...q, fromMs: 1500, toMs: 1501 })).map((x) => x.id), ['e1'], 'overlaps a window inside it');
  t.same((await anomalies.list({ ...q, fromMs: 2000, toMs: 2400 })).map((x) => x.id), [], 'ended by the window start; started at its end');
  t.same((await anomalies.list({ ...q, fromMs: 0, toMs: 10_000, hostname: 'other.example.com' })).map((x) => x.id), ['e4']);
  t.same((await anomalies.list({ ...q, fromMs: 0, toMs: 10_000, limit: 2.7 })).map((x) => x.id), ['e2', 'e4'], 'limit, whole');
  t.same(await anomalies.list({ ...q, fromMs: 0, toMs: 10_000, limit: -1 }), [], 'a negative limit is 0');
  t.same((await anomalies.list({ ownerId: 'o2', fromMs: 0, toMs: 10_000, limit: 10 })).map((x) => x.id), ['e5']);
  t.match(await anomalies.byId('o1', 'e3'), { id: 'e3', kind: 'blocked-surge', endedAt: 2600 }, 'one event by id');
  t.equal(await anomalies.byId('o1', 'e5'), undefined, "another owner's: none");
  t.equal(await anomalies.byId('o1', 'nope'), undefined);
});

/** Traffic of three hours for two owners and one request of no owner (as test/unit/request-log-rollup). */
function traffic(): CdnRequestRecord[] {
  return [
    rec({ time: H12 - 2 * HOUR + 10, status: 200, bytesSent: 1000, cacheStatus: 'MISS', country: 'DE' }),
    rec({ time: H12 - 2 * HOUR + 20, status: 200, bytesSent: 1000, cacheStatus: 'HIT', country: 'DE' }),
    rec({ time: H12 - HOUR + 5, status: 206, bytesSent: 10, cacheStatus: 'HIT', country: 'NG' }),
    rec({ time: H12 - HOUR + 6, status: 404, bytesSent: 0, cacheStatus: null, country: '' }),
    rec({ time: H12 - HOUR + 7, ownerId: 'u2', status: 200, bytesSent: 7, cacheStatus: 'BYPASS', country: 'FR' }),
    rec({ time: H12 - HOUR + 8, ownerId: null, assetId: null, status: 404, bytesSent: 9, cacheStatus: null, country: '' }),
    rec({ time: H12 + 60_000, status: 200, bytesSent: 50, cacheStatus: 'HIT', country: 'DE' }),
  ];
}

stores.each('request log: one batch with its download events, all or nothing', async (t, open) => {
  const db = await open(t);
  await user(db, 'u1');
  const log = new CdnLogRepo(db);
  await log.insertBatch([]);
  await log.insertBatch([
    rec({ assetId: null, bucket: 'photos', key: 'a/b.jpg', status: 206, cacheStatus: 'HIT', clientIp: '2001:db8::7', durationMs: 12.25, downloadKey: 'photos/a/b.jpg', bytesSent: 5 }),
    rec({ surface: 'proxy', method: 'POST', path: '/api', bytesIn: 77, decision: 'rate-limited', status: 429, host: 'shop.example.com', cacheStatus: null }),
    rec({ downloadKey: 'a1/f.txt', bytesSent: 42, country: 'NG' }),
    rec({ downloadKey: 'a1/f.txt', ownerId: 'gone-user' }),
  ]);
  const rows = await db.all('SELECT * FROM cdn_requests ORDER BY id');
  t.same(rows.slice(0, 2), [
    {
      id: 1, time: LOG_NOW, host: 'cdn.localhost', asset_id: null, bucket: 'photos', object_key: 'a/b.jpg', owner_id: 'u1', status: 206, bytes_sent: 5,
      cache_status: 'HIT', client_ip: '2001:db8::7', country: 'DE', user_agent: 'curl/8', duration_ms: 12.25, surface: 'cdn', method: 'GET', path: '/a1/file.txt',
      bytes_in: 0, decision: 'allowed',
    },
    {
      id: 2, time: LOG_NOW, host: 'shop.example.com', asset_id: 'a1', bucket: null, object_key: null, owner_id: 'u1', status: 429, bytes_sent: 100,
      cache_status: null, client_ip: '203.0.113.1', country: 'DE', user_agent: 'curl/8', duration_ms: 1.5, surface: 'proxy', method: 'POST', path: '/api',
      bytes_in: 77, decision: 'rate-limited',
    },
  ], 'every field stored, in order');
  t.match(rows.slice(2), [{ id: 3, owner_id: 'u1', bytes_sent: 42, country: 'NG' }, { id: 4, owner_id: 'gone-user' }]);
  t.same(
    await db.all('SELECT user_id, asset_id, event_type, source, bytes, hostname, country, status_code, client_ip, metadata, created_at FROM usage_events ORDER BY seq'),
    [
      { user_id: 'u1', asset_id: '', event_type: 'download', source: 'cdn', bytes: 5, hostname: 'cdn.localhost', country: 'DE', status_code: 206, client_ip: '2001:db8::7', metadata: '{"key":"photos/a/b.jpg"}', created_at: LOG_NOW },
      { user_id: 'u1', asset_id: 'a1', event_type: 'download', source: 'cdn', bytes: 42, hostname: 'cdn.localhost', country: 'NG', status_code: 200, client_ip: '203.0.113.1', metadata: '{"key":"a1/f.txt"}', created_at: LOG_NOW },
    ],
    'one event per download; none for a user deleted since (the batch goes on)',
  );

  // A row the table refuses (status out of range) fails the whole batch: no row, no event.
  await t.rejects(log.insertBatch([rec({ downloadKey: 'a1/f.txt' }), rec({ status: 50 })]));
  t.equal((await db.get<{ n: number }>('SELECT count(*) AS n FROM cdn_requests'))?.n, 4);
  t.equal((await db.get<{ n: number }>('SELECT count(*) AS n FROM usage_events'))?.n, 2);
});

async function count(db: SqlExecutor, sql: string): Promise<number> {
  return (await db.get<{ n: number | null }>(sql))?.n ?? 0;
}

stores.each('request log: hourly roll-ups once, late requests, readers see the same numbers, retention', async (t, open) => {
  const db = await open(t);
  const log = new CdnLogRepo(db);
  const reads = new CdnTrafficRepo(db);
  await log.insertBatch(traffic());
  const expected = [
    { hour: H12 - 2 * HOUR, requests: 2, bytes: 2000, cachedBytes: 1000, hits: 1, cacheLookups: 2, statusCounts: { '200': 2 }, countryCounts: { DE: 2 } },
    { hour: H12 - HOUR, requests: 2, bytes: 10, cachedBytes: 10, hits: 1, cacheLookups: 1, statusCounts: { '206': 1, '404': 1 }, countryCounts: { NG: 1 } },
    { hour: H12, requests: 1, bytes: 50, cachedBytes: 50, hits: 1, cacheLookups: 1, statusCounts: { '200': 1 }, countryCounts: { DE: 1 } },
  ].map((h) => ({ ownerId: 'u1', ...h }));
  t.same(await reads.ownerHours('u1', H12 - 23 * HOUR, LOG_NOW), expected, 'from raw rows only');
  t.equal(await log.rolledUntil(), 0);

  t.equal(await log.rollUp(LOG_NOW), 4, 'u1 x 2 hours, u2 and no owner x 1 hour');
  t.equal(await log.rolledUntil(), H12);
  const hourly = 'SELECT owner_id, hour, requests, bytes, cached_bytes, hits, cache_lookups, status_counts, country_counts FROM cdn_hourly ORDER BY hour, owner_id';
  const rows = await db.all<Record<string, unknown>>(hourly);
  t.same(rows.map((r) => [r['owner_id'], r['hour']]), [['u1', H12 - 2 * HOUR], ['', H12 - HOUR], ['u1', H12 - HOUR], ['u2', H12 - HOUR]]);
  t.same(rows[2], { owner_id: 'u1', hour: H12 - HOUR, requests: 2, bytes: 10, cached_bytes: 10, hits: 1, cache_lookups: 1, status_counts: '{"206":1,"404":1}', country_counts: '{"NG":1}' });
  t.same(await reads.ownerHours('u1', H12 - 23 * HOUR, LOG_NOW), expected, 'roll-ups and raw rows give what raw rows gave');
  t.same((await reads.ownerHours('u2', H12 - 23 * HOUR, LOG_NOW)).map((h) => [h.hour, h.requests, h.cacheLookups, h.hits]), [[H12 - HOUR, 1, 1, 0]]);
  t.equal(await log.rollUp(LOG_NOW), 0, 'running again adds nothing');
  t.same(await db.all(hourly), rows);

  // A long download that started at 11:59 and ended now: added to the 11:00 roll-up in its batch, once.
  await log.insertBatch([rec({ time: H12 - 60_000, status: 200, bytesSent: 5000, cacheStatus: 'HIT', country: 'NG' })]);
  t.same(await reads.ownerHours('u1', H12 - HOUR, H12 - 1), [
    { ownerId: 'u1', hour: H12 - HOUR, requests: 3, bytes: 5010, cachedBytes: 5010, hits: 2, cacheLookups: 2, statusCounts: { '206': 1, '404': 1, '200': 1 }, countryCounts: { NG: 2 } },
  ]);
  t.equal(await log.rollUp(LOG_NOW + HOUR), 1, 'the 12:00 hour');
  t.equal((await reads.ownerHours('u1', H12 - HOUR, H12 - 1))[0]?.requests, 3, 'not counted again');
  t.equal((await reads.ownerHours('u1', H12, LOG_NOW + HOUR))[0]?.requests, 1);

  // Seven days after 11:00:00.005: the 10:xx rows and the 10:00 roll-up are past the retention.
  t.same(await log.expire(H12 - HOUR + 5 - 0), { requests: 2, hours: 1 });
  t.equal(await count(db, 'SELECT count(*) AS n FROM cdn_requests'), 6);
  t.same(await log.expire(LOG_NOW + 2 * HOUR), { requests: 6, hours: 4 });
  t.equal(await count(db, 'SELECT count(*) AS n FROM cdn_hourly'), 0);
});

stores.each('request log: retention deletes in chunks until none is left', async (t, open) => {
  const db = await open(t);
  const log = new CdnLogRepo(db);
  await log.insertBatch(Array.from({ length: 12_000 }, (_, i) => rec({ time: H12 - HOUR + i, clientIp: `198.51.100.${i % 200}` })));
  t.equal(await count(db, 'SELECT count(*) AS n FROM cdn_requests'), 12_000, 'one batch of 12 000 rows');
  t.equal(await count(db, 'SELECT count(*) AS n FROM cdn_requests a JOIN cdn_requests b ON b.id = a.id + 1 WHERE b.time < a.time'), 0, 'ids in the order of the batch');
  t.same(await log.expire(H12), { requests: 12_000, hours: 0 });
});

stores.each('proxy-log queries: groups, series and top sources of one owner', async (t, open) => {
  const db = await open(t);
  const log = new CdnLogRepo(db);
  const proxied = (over: Partial<CdnRequestRecord>): CdnRequestRecord => rec({ surface: 'proxy', host: 'shop.example.com', assetId: null, cacheStatus: null, ...over });
  await log.insertBatch([
    proxied({ clientIp: '198.51.100.1', bytesSent: 100, country: 'DE', time: LOG_NOW - 2 * HOUR }),
    proxied({ clientIp: '198.51.100.1', bytesSent: 100, country: 'DE', status: 502 }),
    proxied({ clientIp: '198.51.100.2', bytesSent: 10, country: 'NG', status: 429, decision: 'rate-limited' }),
    proxied({ clientIp: '198.51.100.3', bytesSent: 10, country: 'US', status: 403, decision: 'country-blocked' }),
    rec({ clientIp: '198.51.100.4', bytesSent: 5000, country: 'DE' }),
    rec({ clientIp: '198.51.100.5', bytesSent: 0, country: '', status: 403, cacheStatus: null }),
    rec({ clientIp: '', bytesSent: 1, status: 500 }),
    proxied({ ownerId: 'u2', host: 'other.example.com' }),
    proxied({ time: LOG_NOW - 25 * HOUR }),
  ]);
  const traffic = new EdgeTrafficRepo(db);
  const q = { ownerId: 'u1', fromMs: LOG_NOW - 24 * HOUR + 1, toMs: LOG_NOW, hostname: '' };
  const byKey = (rows: { host: string; decision: string; serverError: number; country: string }[]): typeof rows =>
    [...rows].sort((a, b) => `${a.host}|${a.decision}|${a.serverError}|${a.country}`.localeCompare(`${b.host}|${b.decision}|${b.serverError}|${b.country}`));
  t.same(byKey(await traffic.groups(q)), [
    { host: 'cdn.localhost', decision: 'allowed', serverError: 0, country: 'DE', requests: 1, bytes: 5000 },
    { host: 'cdn.localhost', decision: 'allowed', serverError: 1, country: 'DE', requests: 1, bytes: 1 },
    { host: 'cdn.localhost', decision: 'refused', serverError: 0, country: '', requests: 1, bytes: 0 },
    { host: 'shop.example.com', decision: 'allowed', serverError: 0, country: 'DE', requests: 1, bytes: 100 },
    { host: 'shop.example.com', decision: 'allowed', serverError: 1, country: 'DE', requests: 1, bytes: 100 },
    { host: 'shop.example.com', decision: 'country-blocked', serverError: 0, country: 'US', requests: 1, bytes: 10 },
    { host: 'shop.example.com', decision: 'rate-limited', serverError: 0, country: 'NG', requests: 1, bytes: 10 },
  ], 'a blocked 5xx is no server error; a CDN refusal is "refused"');
  t.same((await traffic.groups({ ...q, hostname: 'shop.example.com' })).length, 4, 'one hostname');
  t.same(await traffic.series(q, HOUR), [
    { start: LOG_NOW - 2 * HOUR - (LOG_NOW % HOUR), requests: 1, blocked: 0, bytes: 100 },
    { start: H12, requests: 6, blocked: 3, bytes: 5121 },
  ], 'buckets aligned to the epoch, oldest first');
  const week = 7 * 24 * HOUR;
  t.same(await traffic.series({ ...q, fromMs: 0 }, week), [{ start: Math.floor(LOG_NOW / week) * week, requests: 8, blocked: 3, bytes: 5321 }], 'a bucket wider than 2^31 ms');
  t.same(await traffic.topSources(q, 'requests', 3), [
    { ip: '198.51.100.1', requests: 2, bytes: 200, blocked: 0 },
    { ip: '198.51.100.4', requests: 1, bytes: 5000, blocked: 0 },
    { ip: '198.51.100.2', requests: 1, bytes: 10, blocked: 1 },
  ], 'by requests, then bytes; no address left out');
  t.same((await traffic.topSources(q, 'bytes', 2)).map((s) => s.ip), ['198.51.100.4', '198.51.100.1']);
  t.same(await traffic.topSources({ ...q, ownerId: 'nobody' }, 'bytes', 2), []);

  t.same(await traffic.countries(q, 10), [
    { country: 'DE', requests: 4, blocked: 0 },
    { country: '', requests: 1, blocked: 1 },
    { country: 'NG', requests: 1, blocked: 1 },
    { country: 'US', requests: 1, blocked: 1 },
  ], 'countries, busiest first, unknown as ""');
  const ids = async (filter: Parameters<EdgeTrafficRepo['requests']>[1], limit = 20): Promise<string[]> =>
    (await traffic.requests(q, filter, null, limit)).map((r) => `${r.clientIp}:${r.decision}`);
  const all = await traffic.requests(q, {}, null, 20);
  t.equal(all.length, 7, 'every request of the owner in the window');
  t.ok(all.every((r, i) => i === 0 || r.time < all[i - 1]!.time || (r.time === all[i - 1]!.time && r.id < all[i - 1]!.id)), 'newest first, then by id');
  t.match(all.find((r) => r.decision === 'rate-limited'), { host: 'shop.example.com', surface: 'proxy', status: 429, clientIp: '198.51.100.2', country: 'NG', bytesSent: 10 });
  t.same((await ids({ decision: 'blocked' })).sort(), ['198.51.100.2:rate-limited', '198.51.100.3:country-blocked', '198.51.100.5:refused']);
  t.same(await ids({ decision: 'refused' }), ['198.51.100.5:refused'], 'a CDN refusal');
  t.same(await ids({ decision: 'country-blocked' }), ['198.51.100.3:country-blocked'], 'one rule');
  t.equal((await ids({ decision: 'allowed' })).length, 4, 'allowed: the rest');
  t.same(await ids({ ip: '198.51.100.4' }), ['198.51.100.4:allowed']);
  t.same(await ids({ country: 'NG' }), ['198.51.100.2:rate-limited']);
  t.same(await ids({ country: '' }), ['198.51.100.5:refused'], 'unknown country');
  t.equal((await ids({ pathPrefix: '/' })).length, 7, 'a path prefix');
  t.same(await ids({ pathPrefix: '/nothing-here' }), []);
  t.same(await ids({ pathPrefix: "%'" }), [], 'a prefix is no pattern');
  // Pages: each starts after the previous page's last row, and together they are the whole list.
  const paged: number[] = [];
  for (let before: { time: number; id: number } | null = null; ; ) {
    const page = await traffic.requests(q, {}, before, 3);
    paged.push(...page.map((r) => r.id));
    const last = page.at(-1);
    if (page.length < 3 || !last) break;
    before = { time: last.time, id: last.id };
  }
  t.same(paged, all.map((r) => r.id), 'pages of 3 give every row once, in order');
});

stores.each('RequestLog over the store: flush, maintain, close', async (t, open) => {
  const db = await open(t);
  await user(db, 'u1');
  const clock = { now: H12 - 3 * HOUR };
  const log = new RequestLog(db, { bufferSize: 100, flushIntervalMs: 1000, retentionDays: 7 }, { clock: () => clock.now, scheduler: NO_TIMERS });
  for (const r of traffic()) log.record({ ...r, downloadKey: 'a1/file.txt' });
  t.equal(await log.flush(), 7);
  t.equal(await count(db, 'SELECT count(*) AS n FROM usage_events'), 5, "downloads of u1 (u2 and no owner have no user row)");
  clock.now = LOG_NOW;
  t.same(await log.maintain(), { rolledHours: 4, expiredRequests: 0, expiredHours: 0 });
  t.equal((await log.traffic.ownerHours('u1', H12 - 23 * HOUR, LOG_NOW)).reduce((n, h) => n + h.requests, 0), 5);
  log.record(rec());
  await log.close();
  t.equal(await count(db, 'SELECT count(*) AS n FROM cdn_requests'), 8, 'close flushed the last record');
  t.match(log.stats(), { buffered: 0, flushed: 8, flushes: 2, flushErrors: 0 });
});

stores.each('cache invalidation feed: append, read after a position, prune; seq never reused', async (t, open) => {
  const db = await open(t);
  const feed = new CacheInvalidationsRepo(db);
  t.equal(await feed.lastSeq(), 0, 'empty');
  const s1 = await feed.append({ at: 1000, writer: 'w1', kind: 'asset', a: 'A1', b: null });
  const s2 = await feed.append({ at: 2000, writer: 'w2', kind: 'object', a: 'B1', b: 'k/x' });
  const s3 = await feed.append({ at: 3000, writer: 'w1', kind: 'prefix', a: 'B1', b: '' });
  t.ok(s1 > 0 && s2 > s1 && s3 > s2);
  t.equal(await feed.lastSeq(), s3);
  t.same(await feed.after(0, 10), [
    { seq: s1, at: 1000, writer: 'w1', kind: 'asset', a: 'A1', b: null },
    { seq: s2, at: 2000, writer: 'w2', kind: 'object', a: 'B1', b: 'k/x' },
    { seq: s3, at: 3000, writer: 'w1', kind: 'prefix', a: 'B1', b: '' },
  ]);
  t.same((await feed.after(s1, 1)).map((r) => r.seq), [s2], 'after a position, limited');
  t.same(await feed.after(s3, 10), []);
  t.equal(await feed.pruneBefore(2000), 1);
  t.equal(await feed.pruneBefore(10_000), 2);
  t.equal(await feed.lastSeq(), 0, 'nothing left');
  const s4 = await feed.append({ at: 4000, writer: 'w1', kind: 'owner', a: 'u1', b: null });
  t.ok(s4 > s3, 'a new row after a full prune has a seq after every earlier one');
});
