// Proxy logs and anomaly events of proxied traffic, against an injected clock: the server runs in this
// process (createContext with a clock the test moves, listening on real loopback sockets), the project,
// hostname, origin and rules are made by the admin CLI in another process, requests go through the
// proxy to a loopback origin that counts what reaches it. Client addresses come from X-Forwarded-For,
// which the server reads because the test is its trusted proxy (cdn.trustedProxies).
import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { createContext } from '../../src/context.js';
import { startServer as listen } from '../../src/server.js';
import { S3EdgeClient } from '../../src/client/index.js';
import { runCli } from '../helpers/server.js';
import { inProcessServerConfig, tempDir } from '../helpers/temp-data.js';

const BUCKET_MS = 300_000;
const HOST = 'shop.example.com';

// The origin: counts the requests that reach it, by client address as the proxy forwarded it.
const reached = new Map<string, number>();
const origin: Server = createServer((req, res) => {
  const ip = String(req.headers['x-forwarded-for'] ?? '').split(',').at(-1)?.trim() ?? '';
  reached.set(ip, (reached.get(ip) ?? 0) + 1);
  res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
  res.end('hello from the origin\n');
});
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));
const originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;

const dataDir = join(tempDir(t), 'data');
const config = inProcessServerConfig(dataDir, {
  'cdn.trustedProxies': '127.0.0.1/32',
  'cdn.countryHeader': 'x-test-country',
  'edge.allowPrivateOrigins': 'true',
  'edge.anomalies.bucketSeconds': String(BUCKET_MS / 1000),
  'edge.anomalies.baselineBuckets': '12',
  'edge.anomalies.minRequests': '20',
});
// A bucket boundary, so every step below lands in the bucket it means.
let now = Math.ceil(Date.parse('2026-11-25T00:00:00Z') / BUCKET_MS) * BUCKET_MS;
// Both clocks move with the test: dates (the wall clock) and the limiter's elapsed time (monotonic).
// `wallJump` steps the wall clock alone, as NTP or an operator's `date -s` would.
let wallJump = 0;
const ctx = await createContext(config, { clock: () => new Date(now + wallJump), monotonic: () => now });
const server = await listen(ctx);
t.teardown(async () => {
  await server.close();
  await ctx.close();
});

// The CLI checks origins against the same policy as the server: loopback allowed here.
const CLI_ENV = { ...process.env, S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true' };

async function admin(...args: string[]): Promise<string> {
  const r = await runCli(dataDir, args, CLI_ENV);
  if (r.code !== 0) throw new Error(`s3edge ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

await admin('users', 'create', 'ana');
await admin('projects', 'create', 'shop', '--user', 'ana');
await admin('hostnames', 'add', HOST, '--user', 'ana', '--project', 'shop');
await admin('hostnames', 'verify', HOST, '--operator');
await admin('hostnames', 'set-origin', HOST, '--url', originUrl);
const { token } = JSON.parse(await admin('api-keys', 'create', '--user', 'ana', '--scopes', 'usage:read,projects:read')) as { token: string };
const client = new S3EdgeClient({ baseUrl: server.url, apiKey: token });

/** One request through the proxy from `ip`; resolves with the status. */
async function send(ip: string, path = '/'): Promise<number> {
  return (await sendTo(HOST, ip, {})).status;
}

async function sendTo(host: string, ip: string, headers: Record<string, string>): Promise<{ status: number; retryAfter: string | undefined }> {
  const res = await request(`${server.cdnUrl as string}/`, { headers: { host, 'x-forwarded-for': ip, ...headers } });
  await res.body.dump();
  const retryAfter = res.headers['retry-after'];
  return { status: res.statusCode, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined };
}

/** `n` requests spread over `sources` client addresses, a few at a time. */
async function traffic(n: number, sources: number, prefix = '198.51.100.'): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i += 8) {
    const batch = Array.from({ length: Math.min(8, n - i) }, (_, j) => send(`${prefix}${((i + j) % sources) + 1}`));
    statuses.push(...(await Promise.all(batch)));
  }
  return statuses;
}

t.test('proxy logs count exactly the requests sent, allowed and blocked by rule, and only allowed ones reach the origin', async (t) => {
  await admin('hostnames', 'set-rules', HOST, '--rules', JSON.stringify({ blockIps: ['203.0.113.0/24'] }));
  reached.clear();
  const allowed = await traffic(30, 3);
  const blocked = await traffic(7, 1, '203.0.113.');
  t.same(new Set(allowed), new Set([200]));
  t.same(new Set(blocked), new Set([403]));
  t.equal([...reached.values()].reduce((a, b) => a + b, 0), 30, 'the origin saw the allowed requests only');
  t.notOk(reached.has('203.0.113.1'), 'never the blocked client');

  const p = await client.proxyLogs({ hostname: HOST, hours: 1 });
  t.match(p, { available: true, hostname: HOST, hours: 1, requests: { total: 37, allowed: 30, blocked: 7, blockedBy: { 'ip-blocked': 7 }, serverErrors: 0 } });
  t.same(
    p.topSources.map((s) => [s.ip, s.requests, s.blocked]),
    [['203.0.113.1', 7, 7], ['198.51.100.1', 10, 0], ['198.51.100.2', 10, 0], ['198.51.100.3', 10, 0]].sort((a, b) => (b[1] as number) - (a[1] as number) || String(a[0]).localeCompare(String(b[0]))),
  );
  // All of it blocked (70) and 7 of 37 requests, a share 0.089 above 10% of the scale (30 x 0.099).
  t.same(p.topSources.find((s) => s.ip === '203.0.113.1')?.risk, { index: 73, rating: 'high' }, 'a source blocked every time');
  t.equal(p.series.points.reduce((n, x) => n + x.requests, 0), 37);
  t.match(p.hostnames, [{ hostname: HOST, kind: 'project', verified: true, requests: 37, blocked: 7 }]);
  t.ok(p.risk.index > 0, 'blocked traffic raises the risk');
  // The request log itself, through the typed client: the blocked requests, two pages by the cursor.
  const first = await client.proxyLogRequests({ hostname: HOST, decision: 'ip-blocked', limit: 4 });
  t.equal(first.requests.length, 4);
  t.ok(first.nextCursor, 'a next page');
  const rest = await client.proxyLogRequests({ hostname: HOST, decision: 'ip-blocked', limit: 4, cursor: first.nextCursor ?? '' });
  t.equal(rest.nextCursor, null, 'the last page');
  const blockedRows = [...first.requests, ...rest.requests];
  t.equal(new Set(blockedRows.map((r) => r.id)).size, 7, 'the 7 blocked requests, once each');
  t.ok(blockedRows.every((r) => r.clientIp === '203.0.113.1' && r.status === 403 && r.surface === 'proxy'), 'all from the blocked client');
  t.equal((await client.proxyLogRequests({ hostname: HOST, decision: 'allowed', limit: 500 })).requests.length, 30, 'and the 30 allowed');
  await admin('hostnames', 'set-rules', HOST, '--rules', '{}');
  // The first bucket of the spike test starts clean.
  now += BUCKET_MS;
});

t.test('a synthetic burst opens exactly one rate-spike event with its figures, which ends when traffic is back', async (t) => {
  const start = now;
  for (let bucket = 0; bucket < 12; bucket++) {
    await traffic(20, 10);
    now += BUCKET_MS;
  }
  const burstStart = now;
  await traffic(400, 10);
  now += BUCKET_MS;
  const open = await client.anomalies({ hostname: HOST, hours: 2 });
  t.equal(open.length, 1, 'one event');
  t.match(open[0], { hostname: HOST, kind: 'rate-spike', observed: 400, baseline: 20, endedAt: null, startedAt: new Date(burstStart).toISOString() });

  // Another burst bucket: the same event, not a second one.
  await traffic(400, 10);
  now += BUCKET_MS;
  t.equal((await client.anomalies({ hostname: HOST, hours: 2, state: 'open' })).length, 1);

  await traffic(20, 10);
  now += BUCKET_MS;
  const after = await client.anomalies({ hostname: HOST, hours: 2 });
  t.equal(after.length, 1, 'still one event');
  t.equal(after[0]?.endedAt, new Date(burstStart + 2 * BUCKET_MS).toISOString(), 'ended at the first bucket without the spike');
  t.same(await client.anomalies({ hostname: HOST, hours: 2, state: 'open' }), []);

  const p = await client.proxyLogs({ hostname: HOST, hours: 2 });
  t.equal(p.anomalies.length, 1, 'listed in proxy logs too');
  t.equal(p.requests.total, 12 * 20 + 400 + 400 + 20 + 37, 'every request since the start of the first test');
  t.ok(now - start > 0);
});

/** ana's verified hostname in the project shop, proxied to the loopback origin, with these rules. */
async function proxiedHostname(host: string, rules: Record<string, unknown>): Promise<void> {
  await admin('hostnames', 'add', host, '--user', 'ana', '--project', 'shop');
  await admin('hostnames', 'verify', host, '--operator');
  await admin('hostnames', 'set-origin', host, '--url', originUrl);
  await admin('hostnames', 'set-rules', host, '--rules', JSON.stringify(rules));
}

t.test('rate limit per client (IPv6 by /64) with bans that grow for a repeat offender; countries', async (t) => {
  const API = 'api.example.com';
  const rateLimit = { requestsPerSecond: 1, burst: 2, banAfter: 3, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 240 };
  await proxiedHostname(API, { rateLimit, blockCountries: ['NG'] });
  const from = (ip: string, country = 'DE'): Promise<{ status: number; retryAfter: string | undefined }> => sendTo(API, ip, { 'x-test-country': country });
  reached.clear();

  // Two addresses of one /64 are one client: they share the burst of 2.
  t.equal((await from('2001:db8:1:2::1')).status, 200);
  t.equal((await from('2001:db8:1:2::2')).status, 200);
  t.same(await from('2001:db8:1:2::3'), { status: 429, retryAfter: '1' }, 'the shared bucket is empty: one token a second');
  t.equal((await from('2001:db8:1:3::1')).status, 200, 'another /64 has its own bucket');

  // Three refusals within the window: banned for 60 s; a second offence after it: 120 s.
  const offend = async (): Promise<void> => {
    for (let i = 0; i < 2; i++) await from('2001:db8:1:2::1');
  };
  await offend();
  const banned = await from('2001:db8:1:2::9');
  t.same(banned, { status: 429, retryAfter: '60' }, 'banned for 60 s');
  now += 61_000;
  t.equal((await from('2001:db8:1:2::1')).status, 200, 'the ban is over and the bucket refilled');
  t.equal((await from('2001:db8:1:2::1')).status, 200);
  for (let i = 0; i < 3; i++) await from('2001:db8:1:2::1');
  t.same(await from('2001:db8:1:2::1'), { status: 429, retryAfter: '120' }, 'the second ban is twice as long');

  t.equal((await from('198.51.100.200', 'NG')).status, 403, 'a blocked country');
  t.equal((await from('198.51.100.201', 'ng')).status, 403, 'its code in any case');
  t.equal(reached.get('198.51.100.200'), undefined, 'never reaching the origin');

  const p = await client.proxyLogs({ hostname: API, hours: 1 });
  // The refusal that reaches banAfter is the ban's first request: two offences of 2 + 1 refusals, 2 after each ban began.
  t.same(p.requests.blockedBy, { 'rate-limited': 4, banned: 4, 'country-blocked': 2 });
  t.equal(p.requests.allowed, [...reached.values()].reduce((a, b) => a + b, 0), 'every allowed request reached the origin');
});

t.test('hostname filter: another user\'s hostname or a stranger is 404', async (t) => {
  const res = await client.raw('GET', '/api/v3/cdn/proxy-logs?hostname=other.example.com');
  t.equal(res.status, 404);
  t.match(JSON.parse(res.body.toString('utf8')), { success: false, code: 'not_found' });
});

t.test('a wall-clock jump of an hour, back or forward, neither lifts a ban nor stops the buckets refilling', async (t) => {
  const HOST = 'jumpy.example.com';
  await proxiedHostname(HOST, { rateLimit: { requestsPerSecond: 1, burst: 1, banAfter: 2, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 60 } });
  const from = (ip: string): Promise<{ status: number; retryAfter: string | undefined }> => sendTo(HOST, ip, { 'x-test-country': 'DE' });
  t.teardown(() => void (wallJump = 0));

  t.equal((await from('192.0.2.10')).status, 200);
  t.same(await from('192.0.2.10'), { status: 429, retryAfter: '1' }, 'the bucket is empty');
  wallJump = -3600_000;
  now += 1000;
  t.equal((await from('192.0.2.10')).status, 200, 'the wall clock stepped back an hour: a second later the bucket has its token again');

  t.same(await from('192.0.2.10'), { status: 429, retryAfter: '60' }, 'a second refusal within the window: banned for 60 s');
  wallJump = 3600_000;
  t.same(await from('192.0.2.10'), { status: 429, retryAfter: '60' }, 'the wall clock stepped forward an hour: still banned');
  wallJump = -3600_000;
  now += 30_000;
  t.same(await from('192.0.2.10'), { status: 429, retryAfter: '30' }, 'and back an hour: 30 s of the ban are left, as elapsed');
  now += 31_000;
  t.equal((await from('192.0.2.10')).status, 200, 'the ban ends 60 s after it began, whatever the wall clock said');
});

t.test('a wall-clock step of an hour either way: the anomaly buckets move with it (no false drop, no stall), and a burst after it is dated by the wall clock', async (t) => {
  const HOST = 'steady.example.com';
  await proxiedHostname(HOST, {});
  t.teardown(() => void (wallJump = 0));
  // `n` requests, then the evaluation the monitor's timer runs every few seconds of a real clock.
  const steady = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i += 8) {
      const batch = Array.from({ length: Math.min(8, n - i) }, (_, j) => sendTo(HOST, `203.0.113.${((i + j) % 10) + 1}`, {}));
      for (const r of await Promise.all(batch)) if (r.status !== 200) throw new Error(`steady traffic: ${r.status}`);
    }
    await ctx.edgeMonitor.evaluate();
  };
  for (let bucket = 0; bucket < 12; bucket++) {
    await steady(20);
    now += BUCKET_MS;
  }
  wallJump = 3600_000;
  for (let bucket = 0; bucket < 3; bucket++) {
    await steady(20);
    now += BUCKET_MS;
  }
  t.same(await client.anomalies({ hostname: HOST, hours: 3 }), [], 'an hour forward: no rate drop (the hour skipped is not an hour of empty buckets)');
  wallJump = 0;
  for (let bucket = 0; bucket < 3; bucket++) {
    await steady(20);
    now += BUCKET_MS;
  }
  t.same(await client.anomalies({ hostname: HOST, hours: 3 }), [], 'an hour back: nothing either');
  const burst = Math.floor(now / BUCKET_MS) * BUCKET_MS;
  await steady(400);
  now += BUCKET_MS;
  t.match(await client.anomalies({ hostname: HOST, hours: 3 }), [{ kind: 'rate-spike', observed: 400, baseline: 20, startedAt: new Date(burst).toISOString() }], 'the burst right after is seen at once (the buckets did not stall for the hour), dated by the wall clock');
});
