// The edge cache's disk tier across processes: filled by one server, stopped, and a second server on
// the same data directory answers from the files (no storage read), having dropped temp and corrupt
// files; and a small disk bound (S3EDGE_CDN_CACHE_DISK_BYTES) that eviction keeps.
import t from 'tap';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3EdgeClient } from '../../src/client/index.js';
import { apiClient, apiUser, eventually, PROVIDER_NAMES, ResponseRecorder } from '../helpers/api.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { startServer, type RunningServer } from '../helpers/server.js';

const recorder = new ResponseRecorder();

async function cdn(server: RunningServer, target: string): Promise<RawResponse> {
  const host = `cdn.localhost:${new URL(server.cdnUrl).port}`;
  const res = await rawRequest({ url: server.cdnUrl }, { method: 'GET', target, headers: [['Host', host]] });
  recorder.record({ method: 'GET', path: `cdn ${target}`, status: res.status, body: `${JSON.stringify(res.headers)}\n${res.body.subarray(0, 64 * 1024).toString('latin1')}` });
  return res;
}

/** Waits for fills in flight to publish their files (a client's last byte comes before that). */
function settled(client: S3EdgeClient): Promise<void> {
  return eventually(async () => (await client.cacheStats()).fillsInFlight === 0, 'cache fills to finish');
}

function pathOf(publicUrl: string): string {
  return new URL(publicUrl).pathname;
}

function pattern(size: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length: size }, (_, i) => 0x61 + ((i * 11 + seed) % 26)));
}

/** Complete cache files (not temp files) and their sizes. */
function cacheFiles(dataDir: string): { name: string; size: number }[] {
  const dir = join(dataDir, 'cdn-cache');
  return readdirSync(dir)
    .filter((d) => d !== 'tmp' && statSync(join(dir, d)).isDirectory())
    .flatMap((d) => readdirSync(join(dir, d)).map((name) => ({ name, size: statSync(join(dir, d, name)).size })));
}

t.test('the disk tier survives a restart: HIT from disk without a storage read', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 's3edge-cdn-restart-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dataDir = join(root, 'data');
  mkdirSync(dataDir);

  const first = await startServer({ dataDir });
  const user = await apiUser(first, ['assets:read', 'assets:write', 'metrics:read'], { recorder });
  const small = pattern(20_000, 1);
  const large = pattern(2 * 1024 * 1024 + 5, 2);
  const smallAsset = await user.client.upload({ file: small, fileName: 'small.bin' });
  const largeAsset = await user.client.upload({ file: large, fileName: 'large.bin' });
  for (const [asset, data] of [[smallAsset, small], [largeAsset, large]] as const) {
    const res = await cdn(first, pathOf(asset.publicUrl));
    t.equal(res.headers['x-cache'], 'MISS', `${asset.fileName}: filled by the first server`);
    t.ok(res.body.equals(data));
  }
  await settled(user.client);
  t.match(await user.client.cacheStats(), { storageReads: 2, diskEntries: 2 });
  await first.stop();

  // What a crash could leave: a half-written temp file and a cut-short cache file.
  const cacheDir = join(dataDir, 'cdn-cache');
  writeFileSync(join(cacheDir, 'tmp', 'f'.repeat(32)), 'half a body');
  const shard = readdirSync(cacheDir).find((d) => d !== 'tmp') ?? '';
  writeFileSync(join(cacheDir, shard, 'e'.repeat(32)), 'S3ECDN1\ntorn');
  t.equal(cacheFiles(dataDir).length, 3);

  const second = await startServer({ dataDir });
  t.teardown(() => second.stop());
  const client = apiClient(second, user.token, recorder);
  t.match(await client.cacheStats(), { storageReads: 0, diskEntries: 2 }, 'the index is rebuilt from the files');
  for (const [asset, data] of [[smallAsset, small], [largeAsset, large]] as const) {
    const res = await cdn(second, pathOf(asset.publicUrl));
    t.equal(res.status, 200);
    t.equal(res.headers['x-cache'], 'HIT', `${asset.fileName}: a hit after the restart`);
    t.match(res.headers.age, /^\d+$/, 'with its age');
    t.ok(res.body.equals(data), `${asset.fileName}: the bytes`);
  }
  t.equal((await client.cacheStats()).storageReads, 0, 'no storage read');
  t.same(readdirSync(join(cacheDir, 'tmp')), [], 'temp files dropped');
  t.equal(cacheFiles(dataDir).length, 2, 'the torn file dropped');
  t.notOk(cacheFiles(dataDir).some((f) => f.name === 'e'.repeat(32)));
});

t.test('eviction keeps the disk tier under S3EDGE_CDN_CACHE_DISK_BYTES', async (t) => {
  const bound = 300_000;
  const server = await startServer({ env: { S3EDGE_CDN_CACHE_DISK_BYTES: String(bound), S3EDGE_CDN_CACHE_MEMORY_ENTRY_MAX_BYTES: '16384' } });
  t.teardown(() => server.stop());
  const user = await apiUser(server, ['assets:read', 'assets:write', 'metrics:read'], { recorder });
  const assets = [];
  for (let i = 0; i < 10; i++) {
    const data = pattern(50_000, i);
    const asset = await user.client.upload({ file: data, fileName: `evict-${i}.bin` });
    assets.push({ asset, data });
    const res = await cdn(server, pathOf(asset.publicUrl));
    t.equal(res.headers['x-cache'], 'MISS');
    t.ok(res.body.equals(data), `asset ${i}: the bytes`);
    const onDisk = cacheFiles(server.dataDir).reduce((n, f) => n + f.size, 0);
    t.ok(onDisk <= bound, `after ${i + 1} fills: ${onDisk} bytes on disk, within ${bound}`);
  }
  await settled(user.client);
  const stats = await user.client.cacheStats();
  t.ok(stats.diskBytes <= bound, `the index counts ${stats.diskBytes} bytes`);
  t.equal(stats.diskEntries, 5, 'five 50 kB bodies fit');
  t.equal(cacheFiles(server.dataDir).length, 5, 'one file each; evicted files are deleted');
  const last = assets[9];
  const firstOne = assets[0];
  if (!last || !firstOne) throw new Error('no assets');
  t.equal((await cdn(server, pathOf(last.asset.publicUrl))).headers['x-cache'], 'HIT', 'the most recent stays');
  const evicted = await cdn(server, pathOf(firstOne.asset.publicUrl));
  t.equal(evicted.headers['x-cache'], 'MISS', 'the least recently used was evicted');
  t.ok(evicted.body.equals(firstOne.data));
  recorder.assertNoLeaks(t, [...PROVIDER_NAMES, server.dataDir, 'cdn-cache', ...cacheFiles(server.dataDir).map((f) => f.name)]);
});
