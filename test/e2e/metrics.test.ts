// GET /metrics on the real server, protected by metrics.token: refused without the token or with a
// wrong one; with it, Prometheus text that a parser reads whole, with the standard process and Node.js
// metrics, the requests just made by surface, operation and status (S3 over a signed client, the
// management API, the CDN listener), latency histograms, body bytes, and the gateway's own figures.
// `metrics` is a reserved bucket name that a signed S3 request is told about in S3's words.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import parsePrometheusTextFormat, { type PrometheusFamily } from 'parse-prometheus-text-format';
import { request } from 'undici';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';
import { parseS3Error } from '../helpers/xml.js';

const TOKEN = 'scrape-token-for-the-test';
const server = await startServer({ env: { S3EDGE_METRICS_TOKEN: TOKEN } });
t.teardown(() => server.stop());
const s3 = new RawS3({ url: server.url }, server.rootKey);

async function scrape(authorization?: string) {
  const res = await request(`${server.url}/metrics`, authorization ? { headers: { authorization } } : {});
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

/** The value of the sample of `family` whose labels include `labels`. */
function sample(families: PrometheusFamily[], family: string, labels: Record<string, string>): number | undefined {
  const f = families.find((x) => x.name === family);
  const m = f?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  return m?.value === undefined ? undefined : Number(m.value);
}

t.test('without the token, or with a wrong one: 401, nothing shown', async (t) => {
  for (const auth of [undefined, 'Bearer wrong-token', `Basic ${TOKEN}`, `Bearer ${TOKEN}x`]) {
    const res = await scrape(auth);
    t.equal(res.status, 401, `${auth ?? 'no Authorization'}: 401`);
    t.equal(res.headers['www-authenticate'], 'Bearer');
    t.notMatch(res.text, /s3edge_requests_total/);
  }
});

t.test('with the token: Prometheus text with the process, the requests made and the gateway figures', async (t) => {
  const body = randomBytes(5000);
  t.equal((await s3.send({ method: 'PUT', bucket: 'scraped' })).status, 200, 'CreateBucket');
  t.equal((await s3.send({ method: 'PUT', bucket: 'scraped', key: 'a.bin', body })).status, 200, 'PutObject');
  t.equal((await s3.send({ method: 'GET', bucket: 'scraped', key: 'a.bin' })).status, 200, 'GetObject');
  t.equal((await s3.send({ method: 'GET', bucket: 'scraped', key: 'missing' })).status, 404, 'NoSuchKey');
  t.equal((await request(`${server.url}/api/v3/cdn/summary`)).statusCode, 401, 'an API call without a key');
  t.equal((await request(`${server.cdnUrl}/nothing/here.txt`, { headers: { host: 'cdn.localhost' } })).statusCode, 404, 'a CDN miss');

  // The CDN's row reaches the metrics as it is logged (at once); S3 lines when the response closes.
  let families: PrometheusFamily[] = [];
  let res = await scrape(`Bearer ${TOKEN}`);
  for (let i = 0; i < 50 && sample((families = parsePrometheusTextFormat(res.text)), 's3edge_requests_total', { surface: 'cdn' }) === undefined; i++) {
    await new Promise((r) => setTimeout(r, 100));
    res = await scrape(`Bearer ${TOKEN}`);
  }
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  t.ok(families.length > 30, `parsed whole: ${families.length} families`);
  const names = new Set(families.map((f) => f.name));
  for (const standard of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds']) {
    t.ok(names.has(standard), `standard: ${standard}`);
  }
  t.equal(sample(families, 's3edge_requests_total', { surface: 's3', operation: 'PutObject', status: '200' }), 1, 'PutObject 200');
  t.equal(sample(families, 's3edge_requests_total', { surface: 's3', operation: 'GetObject', status: '200' }), 1, 'GetObject 200');
  t.equal(sample(families, 's3edge_requests_total', { surface: 's3', operation: 'GetObject', status: '404' }), 1, 'GetObject 404');
  t.equal(sample(families, 's3edge_requests_total', { surface: 'api', operation: 'GET /api/v3/cdn/summary', status: '401' }), 1, 'the API call, by route');
  t.equal(sample(families, 's3edge_requests_total', { surface: 'cdn', operation: 'GET', status: '404' }), 1, 'the CDN request');
  t.ok((sample(families, 's3edge_request_body_bytes_total', { surface: 's3' }) ?? 0) >= body.length, 'S3 bytes received');
  t.ok((sample(families, 's3edge_response_body_bytes_total', { surface: 's3' }) ?? 0) >= body.length, 'S3 bytes sent');
  const latency = families.find((f) => f.name === 's3edge_request_duration_seconds');
  t.equal(latency?.type, 'HISTOGRAM', 'a latency histogram');
  t.ok(latency?.metrics.some((m) => m.buckets !== undefined && Object.keys(m.buckets).includes('+Inf')), 'with its buckets');
  for (const own of ['s3edge_cdn_log_dropped_total', 's3edge_cdn_cache_hits_total', 's3edge_hashing_queued_tasks', 's3edge_blob_gc_runs_total']) {
    t.ok(names.has(own), `the gateway's own: ${own}`);
  }
  t.notMatch(res.text, new RegExp(server.rootKey.secretAccessKey), 'no secret');
  t.notMatch(res.text, /scraped|a\.bin/, 'no bucket names or keys in the labels');
  const head = await request(`${server.url}/metrics`, { method: 'HEAD', headers: { authorization: `Bearer ${TOKEN}` } });
  t.same([head.statusCode, await head.body.text()], [200, ''], 'HEAD: no body');
});

t.test('metrics is a reserved bucket name; a signed request there is S3', async (t) => {
  const created = await s3.send({ method: 'PUT', path: '/metrics' });
  t.equal(created.status, 400);
  t.equal(parseS3Error(created.text).code, 'InvalidBucketName');
});
