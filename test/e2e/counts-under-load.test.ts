// Faster, not thinner (issue 30): under concurrent keep-alive load on `serve --workers 2`, every request
// is still counted where it is promised to be. The hot paths batch their bookkeeping (the request log's
// rows are written by a thread in batches, metrics are summed per series and published on a scrape, the
// log line is serialised in one pass), and this shows the batches add up: the request log's rows, the
// download usage events, the Prometheus request counters summed across both workers, the proxy logs'
// per-hostname counts and the log lines each equal the requests sent; an API route's rate limit lets
// exactly its maximum through when its requests arrive at once.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Pool } from 'undici';
import { apiUser, eventually, query } from '../helpers/api.js';
import { addProjectHostnames, urlOrigin } from '../helpers/edge.js';
import { startServer } from '../helpers/server.js';
import { signHeaders, UNSIGNED_PAYLOAD } from '../helpers/signer.js';
import { tempDir } from '../helpers/temp-data.js';

// Each phase's log lines must fit the 256 KiB of output the test helper keeps (a CDN line is ~450 bytes).
const CDN_REQUESTS = 550;
const S3_REQUESTS = 600;
const PROXY_REQUESTS = 600;
/** Requests in flight at once, over as many keep-alive connections (node:cluster spreads them over both workers). */
const IN_FLIGHT = 32;
const SEARCH_MAX = 20;

const origin: Server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
  res.end('from the origin\n');
});
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));
const originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;

const dataDir = join(tempDir(t), 'data');
await addProjectHostnames(dataDir, 'counter', [{ hostname: 'counted.test', origin: urlOrigin(originUrl) }]);
const server = await startServer({
  dataDir,
  workers: 2,
  env: { S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true', S3EDGE_DOMAINS_RATE_LIMITS_TLD_SEARCH: String(SEARCH_MAX) },
});
t.teardown(() => server.stop());

/** `count` GETs, IN_FLIGHT at a time over one keep-alive pool; every answer's status. */
async function load(url: string, count: number, request: (i: number) => { path: string; headers: Record<string, string> }): Promise<number[]> {
  const pool = new Pool(url, { connections: IN_FLIGHT, pipelining: 1 });
  const statuses: number[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const { path, headers } = request(next++);
      const res = await pool.request({ method: 'GET', path, headers });
      await res.body.arrayBuffer();
      statuses.push(res.statusCode);
    }
  };
  try {
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  } finally {
    await pool.close();
  }
  return statuses;
}

/** A Prometheus counter summed over the series whose labels include `labels`. */
async function counter(name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const wanted = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (wanted) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** The server's JSON log lines that match, every request line logged so far included. */
async function lines(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const text of (await server.loggedOutput()).split('\n')) {
    if (!text.startsWith('{')) continue;
    try {
      const line = JSON.parse(text) as Record<string, unknown>;
      if (match(line)) out.push(line);
    } catch {
      // not a line of ours
    }
  }
  return out;
}

const user = await apiUser(server, ['assets:read', 'assets:write', 'usage:read', 'domains:read'], { name: 'counter' });
const asset = await user.client.upload({ file: Buffer.alloc(4096, 7), fileName: 'counted.bin', visibility: 'public' });
const cdnPath = new URL(asset.publicUrl).pathname;
const cdnHost = new URL(asset.publicUrl).host;

t.test('CDN hits: log rows, download events, metrics and log lines equal the requests', async (t) => {
  const statuses = await load(server.cdnUrl, CDN_REQUESTS, () => ({ path: cdnPath, headers: { host: cdnHost } }));
  t.equal(statuses.filter((s) => s === 200).length, CDN_REQUESTS, 'every request answered 200');
  const rows = (): number => query<{ n: number }>(server, "SELECT count(*) AS n FROM cdn_requests WHERE surface = 'cdn' AND asset_id = ?", asset.id)[0]?.n ?? 0;
  await eventually(() => rows() >= CDN_REQUESTS, 'the request log flushed', 20_000);
  t.equal(rows(), CDN_REQUESTS, 'one request log row per request');
  const events = query<{ n: number; bytes: number }>(server, "SELECT count(*) AS n, sum(bytes) AS bytes FROM usage_events WHERE event_type = 'download' AND asset_id = ?", asset.id)[0];
  t.equal(events?.n, CDN_REQUESTS, 'one download usage event per request');
  t.equal(events?.bytes, CDN_REQUESTS * 4096, 'their bytes');
  const ids = query<{ n: number }>(server, "SELECT count(DISTINCT id) AS n FROM usage_events WHERE event_type = 'download' AND asset_id = ?", asset.id)[0];
  t.equal(ids?.n, CDN_REQUESTS, 'every event its own id');
  t.equal(await counter('s3edge_requests_total', { surface: 'cdn', operation: 'GET', status: '200' }), CDN_REQUESTS, 's3edge_requests_total summed across workers');
  t.equal(await counter('s3edge_request_duration_seconds_count', { surface: 'cdn', operation: 'GET' }), CDN_REQUESTS, 'the latency histogram counted each');
  t.equal(await counter('s3edge_response_body_bytes_total', { surface: 'cdn' }), CDN_REQUESTS * 4096, 'response body bytes');
  const logged = await lines((l) => l['msg'] === 'cdn request' && l['assetId'] === asset.id);
  t.equal(logged.length, CDN_REQUESTS, 'one log line per request');
  t.equal(new Set(logged.map((l) => l['pid'])).size, 2, 'served by both workers');
  const summary = await user.client.summary();
  t.equal(summary.downloadedBytes, CDN_REQUESTS * 4096, "the summary's downloadedBytes");
  t.equal(summary.analytics.requests, CDN_REQUESTS, "the summary's analytics count the requests");
});

t.test('S3 GETs: metrics and log lines equal the requests', async (t) => {
  const host = new URL(server.url).host;
  const s3 = async (method: string, path: string, body?: Buffer): Promise<number> => {
    const signed = await signHeaders({ host, method, path, payloadHash: UNSIGNED_PAYLOAD, credentials: server.rootKey });
    const res = await fetch(`${server.url}${signed.target}`, { method, headers: Object.fromEntries(signed.headers), ...(body ? { body: new Uint8Array(body) } : {}) });
    await res.arrayBuffer();
    return res.status;
  };
  t.equal(await s3('PUT', '/counted'), 200, 'bucket created');
  t.equal(await s3('PUT', '/counted/object.bin', Buffer.alloc(4096, 3)), 200, 'object stored');
  const before = await counter('s3edge_requests_total', { surface: 's3', operation: 'GetObject' });
  // Signed once per second of the run: a signature is valid for 15 minutes, and signing each is the client's cost.
  const signed = new Map<number, Record<string, string>>();
  const headersFor = async (): Promise<Record<string, string>> => {
    const second = Math.floor(Date.now() / 1000);
    let h = signed.get(second);
    if (!h) {
      h = Object.fromEntries((await signHeaders({ host, method: 'GET', path: '/counted/object.bin', payloadHash: UNSIGNED_PAYLOAD, credentials: server.rootKey })).headers);
      signed.set(second, h);
    }
    return h;
  };
  const headers = await headersFor();
  const statuses = await load(server.url, S3_REQUESTS, () => ({ path: '/counted/object.bin', headers }));
  t.equal(statuses.filter((s) => s === 200).length, S3_REQUESTS, 'every request answered 200');
  t.equal((await counter('s3edge_requests_total', { surface: 's3', operation: 'GetObject' })) - before, S3_REQUESTS, 's3edge_requests_total summed across workers');
  const logged = await lines((l) => l['msg'] === 's3 request' && l['operation'] === 'GetObject' && l['bucket'] === 'counted' && l['status'] === 200);
  t.equal(logged.length, S3_REQUESTS, 'one log line per request');
  t.ok(logged.every((l) => l['bytesOut'] === 4096 && l['bytesIn'] === 0), 'each line with its body bytes');
});

t.test('proxied requests: log rows, proxy logs and metrics equal the requests', async (t) => {
  const statuses = await load(server.url, PROXY_REQUESTS, (i) => ({ path: `/page/${i}`, headers: { host: 'counted.test' } }));
  t.equal(statuses.filter((s) => s === 200).length, PROXY_REQUESTS, 'every request answered 200');
  const rows = (): number => query<{ n: number }>(server, "SELECT count(*) AS n FROM cdn_requests WHERE surface = 'proxy' AND host = 'counted.test'")[0]?.n ?? 0;
  await eventually(() => rows() >= PROXY_REQUESTS, 'the request log flushed', 20_000);
  t.equal(rows(), PROXY_REQUESTS, 'one request log row per request');
  t.equal(await counter('s3edge_requests_total', { surface: 'proxy', operation: 'GET', status: '200' }), PROXY_REQUESTS, 's3edge_requests_total summed across workers');
  const res = await fetch(`${server.url}/api/v3/cdn/proxy-logs?hostname=counted.test&hours=1`, { headers: { authorization: `Bearer ${user.token}` } });
  const data = ((await res.json()) as { data: { requests: { total: number; allowed: number } } }).data;
  t.equal(data.requests.total, PROXY_REQUESTS, 'the proxy logs count every request');
  t.equal(data.requests.allowed, PROXY_REQUESTS, 'all of them allowed');
  t.equal((await lines((l) => l['msg'] === 'proxy request' && l['host'] === 'counted.test')).length, PROXY_REQUESTS, 'one log line per request');
});

t.test('an API rate limit lets exactly its maximum through when the requests arrive at once', async (t) => {
  const statuses = await load(server.url, SEARCH_MAX * 3, () => ({ path: '/api/v3/domains/tlds/search?q=io', headers: { authorization: `Bearer ${user.token}` } }));
  t.equal(statuses.filter((s) => s === 200).length, SEARCH_MAX, `exactly ${SEARCH_MAX} served`);
  t.equal(statuses.filter((s) => s === 429).length, SEARCH_MAX * 2, 'the rest refused 429');
});
