// Limits and the anomaly monitor with `serve --workers 2` (docs/SCALE.md "Exact across workers"): every
// request on a new connection, so node:cluster hands them to both workers in turn (the log lines, which
// carry each process's pid, show both served), and still an API route's limit lets exactly `max`
// through, the edge proxy's rate-limit rule exactly its burst, and the one anomaly monitor in the
// supervisor sees the traffic of both workers as one bucket.
import t, { type Test } from 'tap';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { apiUser, eventually } from '../helpers/api.js';
import { addProjectHostnames, urlOrigin } from '../helpers/edge.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';

const origin: Server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
  res.end('from the origin\n');
});
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));
const originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;

const SEARCH_MAX = 5;
const BURST = 4;
/** Requests a bucket needs before an anomaly opens: more than either worker serves of WATCHED_REQUESTS. */
const MIN_REQUESTS = 6;
const WATCHED_REQUESTS = 6;
/** The anomaly monitor's bucket: aligned to the epoch, as the monitor's own (Math.floor(time / width)). */
const BUCKET_MS = 10_000;

const dataDir = join(tempDir(t), 'data');
await addProjectHostnames(dataDir, 'ana', [
  {
    hostname: 'rated.test',
    origin: urlOrigin(originUrl),
    rules: { rateLimit: { requestsPerSecond: 0.001, burst: BURST, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 60 } },
  },
  { hostname: 'watched.test', origin: urlOrigin(originUrl) },
]);
const server = await startServer({
  dataDir,
  workers: 2,
  env: {
    S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true',
    S3EDGE_DOMAINS_RATE_LIMITS_TLD_SEARCH: String(SEARCH_MAX),
    S3EDGE_EDGE_ANOMALIES_BUCKET_SECONDS: String(BUCKET_MS / 1000),
    S3EDGE_EDGE_ANOMALIES_MIN_REQUESTS: String(MIN_REQUESTS),
  },
});
t.teardown(() => server.stop());

/** One request on a connection of its own (agent: false), so that either worker may take it. */
function fresh(path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, headers }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.once('error', reject);
    req.end();
  });
}

/** The pids of the log lines that match (the server's stdout, one JSON line each). */
function pidsOf(match: (line: Record<string, unknown>) => boolean): number[] {
  const pids: number[] = [];
  for (const text of server.output().split('\n')) {
    if (!text.startsWith('{')) continue;
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (match(line) && typeof line['pid'] === 'number') pids.push(line['pid']);
  }
  return pids;
}

async function servedByBoth(t: Test, what: string, count: number, match: (line: Record<string, unknown>) => boolean): Promise<void> {
  await eventually(() => pidsOf(match).length >= count, `${what}: ${count} log lines`);
  const pids = new Set(pidsOf(match));
  t.equal(pids.size, 2, `${what}: served by two processes (${[...pids].join(', ')})`);
  t.notOk(pids.has(server.pid), `${what}: neither of them the supervisor`);
}

t.test('an API route limit is exact across workers', async (t) => {
  const ana = await apiUser(server, ['domains:read', 'usage:read'], { name: 'ana' });
  const path = '/api/v3/domains/tlds/search?q=io';
  const statuses: number[] = [];
  for (let i = 0; i < SEARCH_MAX + 3; i++) statuses.push((await fresh(path, { authorization: `Bearer ${ana.token}` })).status);
  t.same(statuses, [...Array<number>(SEARCH_MAX).fill(200), 429, 429, 429], `exactly ${SEARCH_MAX} served, then 429`);
  await servedByBoth(t, 'TLD searches', SEARCH_MAX + 3, (l) => l['msg'] === 'api request' && l['path'] === '/api/v3/domains/tlds/search');
});

t.test('the edge rate-limit rule is exact across workers', async (t) => {
  const answers = [];
  for (let i = 0; i < BURST + 3; i++) answers.push(await fresh('/page', { host: 'rated.test' }));
  t.same(answers.map((a) => a.status), [...Array<number>(BURST).fill(200), 429, 429, 429], `a burst of ${BURST}, then 429`);
  t.ok(Number(answers[BURST]?.headers['retry-after']) > 0, 'a refusal says when to retry');
  await servedByBoth(t, 'rated.test', BURST + 3, (l) => l['surface'] === 'proxy' && l['host'] === 'rated.test');
});

t.test('one anomaly monitor sees both workers’ traffic', async (t) => {
  const ana = await apiUser(server, ['usage:read'], { name: 'ana' });
  // The requests must share one bucket (split across two, neither has MIN_REQUESTS): with less than 5 s
  // of this bucket left, they wait for the next one.
  const left = BUCKET_MS - (Date.now() % BUCKET_MS);
  if (left < 5_000) await sleep(left + 50);
  for (let i = 0; i < WATCHED_REQUESTS; i++) t.equal((await fresh('/', { host: 'watched.test' })).status, 200, `watched.test request ${i + 1}`);
  await servedByBoth(t, 'watched.test', WATCHED_REQUESTS, (l) => l['surface'] === 'proxy' && l['host'] === 'watched.test');
  // One client sent every request of a bucket: source dominance, once the 10 s bucket has closed. Neither
  // worker alone served MIN_REQUESTS, so only a monitor that saw both reports it.
  let events: { hostname: string; kind: string }[] = [];
  await eventually(
    async () => {
      const res = await fetch(`${server.url}/api/v3/cdn/anomalies?hostname=watched.test&hours=1`, { headers: { authorization: `Bearer ${ana.token}` } });
      events = ((await res.json()) as { anomalies: { hostname: string; kind: string }[] }).anomalies;
      return events.length > 0;
    },
    'an anomaly event listed',
    25_000,
  );
  t.match(events, [{ hostname: 'watched.test', kind: 'source-dominance' }]);
});
