// One CDN cache whatever the worker count (docs/SCALE.md "Memory and disk"): a real `serve --workers 2`
// serves public assets, each fetched many times over fresh connections (round robin spreads them over
// both workers; each request comes from a loopback address of its own, so its log line tells which
// worker answered). Every asset is read from storage exactly once across the workers (the storage-read
// counter summed over them in /api/v3/metrics), and the first answer of the worker that did not fill
// it is a HIT. The cache survives a restart with another worker count.
import t from 'tap';
import { join } from 'node:path';
import { apiUser, eventually } from '../helpers/api.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';

const FETCHES = 16;

let sent = 0;
/** A loopback source address no other request of this file uses (127.0.0.1 is the API clients'). */
function freshAddress(): string {
  const n = sent++;
  return `127.0.${1 + Math.floor(n / 250)}.${2 + (n % 250)}`;
}

/** The pid on the CDN log line of the request from `ip` (written just after the answer). */
async function servedBy(server: RunningServer, ip: string): Promise<number> {
  const needle = `"clientIp":"${ip}"`;
  let pid: number | undefined;
  await eventually(() => {
    for (const text of server.output().split('\n')) {
      if (!text.startsWith('{') || !text.includes(needle)) continue;
      try {
        const line = JSON.parse(text) as Record<string, unknown>;
        if (line['surface'] === 'cdn' && typeof line['pid'] === 'number') pid = line['pid'];
      } catch {
        // a line cut where the capture was trimmed
      }
    }
    return pid !== undefined;
  }, `the cdn log line of the request from ${ip}`);
  return pid as number;
}

/** The edge cache's figures of the whole server (summed over the workers; the shared disk tier's once). */
async function cacheMetrics(server: RunningServer, token: string): Promise<Record<string, number>> {
  const res = await rawRequest({ url: server.url }, { method: 'GET', target: '/api/v3/metrics', headers: [['Host', new URL(server.url).host], ['Authorization', `Bearer ${token}`]] });
  if (res.status !== 200) throw new Error(`metrics: ${res.status}`);
  const out: Record<string, number> = {};
  for (const m of res.text.matchAll(/^(s3edge_cdn_cache_\w+|s3edge_workers_reporting) (\S+)$/gm)) out[m[1] as string] = Number(m[2]);
  return out;
}

/** A figure of the answer; NaN when missing, which fails every comparison. */
function figure(metrics: Record<string, number>, name: string): number {
  return metrics[name] ?? NaN;
}

function pattern(size: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length: size }, (_, i) => 0x61 + ((i * 7 + seed) % 26)));
}

const dataDir = join(tempDir(t), 'data');

t.test('serve --workers 2: one storage read per asset, and the other worker’s first answer is a HIT', async (t) => {
  const server = await startServer({ dataDir, workers: 2 });
  t.teardown(() => server.stop());
  const user = await apiUser(server, ['assets:read', 'assets:write', 'metrics:read'], { name: 'shared' });
  const assets = [
    { what: 'a small asset (memory tier)', data: pattern(4096, 1) },
    { what: 'a large asset (disk tier only)', data: pattern(2 * 1024 * 1024 + 3, 2) },
  ];
  // A worker answers the cluster's metrics once it has loaded them (prom-client loads at the first
  // scrape); on a busy machine the first answer may come without the other worker's.
  let before: Record<string, number> = {};
  await eventually(async () => (before = await cacheMetrics(server, user.token))['s3edge_workers_reporting'] === 2, 'both workers report');
  t.equal(before['s3edge_workers_reporting'], 2, 'both workers report');
  for (const { what, data } of assets) {
    const asset = await user.client.upload({ file: data, fileName: 'shared.bin' });
    const url = new URL(asset.publicUrl);
    const answers: { res: RawResponse; pid: number }[] = [];
    for (let i = 0; i < FETCHES; i++) {
      const ip = freshAddress();
      const res = await rawRequest({ url: server.cdnUrl, localAddress: ip }, { method: 'GET', target: url.pathname, headers: [['Host', url.host]] });
      if (res.status !== 200 || !res.body.equals(data)) t.fail(`${what}: answer ${i + 1} is ${res.status} with other bytes`);
      answers.push({ res, pid: await servedBy(server, ip) });
    }
    const pids = [...new Set(answers.map((a) => a.pid))];
    t.equal(pids.length, 2, `${what}: answered by both workers (${pids.join(', ')})`);
    const [filler, other] = pids as [number, number];
    t.equal(answers[0]?.res.headers['x-cache'], 'MISS', `${what}: the first answer fills the cache (worker ${filler})`);
    const firstOfOther = answers.find((a) => a.pid === other);
    t.equal(firstOfOther?.res.headers['x-cache'], 'HIT', `${what}: the other worker's first answer is a HIT (worker ${other})`);
    const statuses = answers.map((a) => a.res.headers['x-cache']);
    t.same(statuses.slice(1), statuses.slice(1).map(() => 'HIT'), `${what}: every answer after the first is a HIT`);
  }
  const after = await cacheMetrics(server, user.token);
  t.equal(figure(after, 's3edge_cdn_cache_storage_reads_total') - figure(before, 's3edge_cdn_cache_storage_reads_total'), assets.length, 'one storage read per asset, summed over both workers');
  t.equal(figure(after, 's3edge_cdn_cache_hits_total') - figure(before, 's3edge_cdn_cache_hits_total'), assets.length * (FETCHES - 1), 'every other answer a hit');
  await eventually(async () => (await cacheMetrics(server, user.token))['s3edge_cdn_cache_fills_in_flight'] === 0, 'fills published');
  const settled = await cacheMetrics(server, user.token);
  t.equal(settled['s3edge_cdn_cache_disk_entries'], assets.length, 'each asset stored once (both workers see the one disk tier)');
  t.ok(figure(settled, 's3edge_cdn_cache_disk_bytes') < 2 * (2 * 1024 * 1024 + 4096), `the disk tier holds each body once (${settled['s3edge_cdn_cache_disk_bytes']} bytes)`);
});

t.test('the cache survives a restart with another worker count', async (t) => {
  const server = await startServer({ dataDir, workers: 1 });
  t.teardown(() => server.stop());
  const user = await apiUser(server, ['assets:read', 'metrics:read'], { name: 'shared' });
  const { assets } = await user.client.listAssets();
  t.equal(assets.length, 2);
  for (const asset of assets) {
    const url = new URL(asset.publicUrl);
    const res = await rawRequest({ url: server.cdnUrl }, { method: 'GET', target: url.pathname, headers: [['Host', url.host]] });
    t.equal(res.status, 200);
    t.equal(res.headers['x-cache'], 'HIT', `${asset.size} bytes: a hit after going from two workers to one`);
  }
  t.equal((await cacheMetrics(server, user.token))['s3edge_cdn_cache_storage_reads_total'], 0, 'no storage read');
});
