// Coherence of `serve --workers 2` (docs/SCALE.md "What every worker must see"): an overwritten or
// deleted object is read at once by every worker; a revoked key, a deleted asset, a bucket made
// private, a purge, a price change and a new project rule take effect in every worker within a second. Each item: requests on fresh connections until both workers have
// served (and cached) the thing, the change through one worker's API or the admin CLI, then, after the
// documented second and a margin, fresh-connection requests that both workers answer, every one with
// the change. Each request comes from a loopback address of its own (127.0.x.y), so the one log line
// naming that clientIp tells which process answered it.
import t, { type Test } from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { apiUser, eventually } from '../helpers/api.js';
import { addProjectHostnames, urlOrigin } from '../helpers/edge.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';

/** The found-caches keep an answer one second (the feed and the route table look every 250 ms); the rest is slack for a busy machine. */
const SETTLE_MS = 1500;
/** Fresh-connection requests per round, at least. */
const ROUND = 8;
/** A round that has not reached both workers by then fails (round robin alternates them). */
const ROUND_MAX = 40;

const origin: Server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
  res.end('from the origin\n');
});
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));

const OWNER = 'cora';
const dataDir = join(tempDir(t), 'data');
await addProjectHostnames(dataDir, OWNER, [{ hostname: 'coherent.test', origin: urlOrigin(`http://127.0.0.1:${(origin.address() as AddressInfo).port}`) }]);
const server = await startServer({ dataDir, workers: 2, env: { S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true' } });
t.teardown(() => server.stop());
const cora = await apiUser(
  server,
  ['assets:read', 'assets:write', 'buckets:manage', 'storage-keys:manage', 'domains:read', 'projects:read', 'projects:write'],
  { name: OWNER },
);
const cdnHost = `cdn.localhost:${new URL(server.cdnUrl).port}`;

let sent = 0;
/** A loopback source address no other request of this file uses (127.0.0.1 is the API clients'). */
function freshAddress(): string {
  const n = sent++;
  return `127.0.${1 + Math.floor(n / 250)}.${2 + (n % 250)}`;
}

type Surface = 's3' | 'cdn' | 'proxy' | 'api';

/** The pid on the log line of the `surface` request from `ip`, once it is written (just after the answer). */
async function servedBy(surface: Surface, ip: string): Promise<number> {
  const needle = `"clientIp":"${ip}"`;
  let pid: number | undefined;
  await eventually(() => {
    for (const text of server.output().split('\n')) {
      if (!text.startsWith('{') || !text.includes(needle)) continue;
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        continue; // a line cut where the capture was trimmed
      }
      if (line['surface'] === surface && typeof line['pid'] === 'number') pid = line['pid'];
    }
    return pid !== undefined;
  }, `the ${surface} log line of the request from ${ip}`);
  return pid as number;
}

interface Answer {
  res: RawResponse;
  pid: number;
  /** Unix milliseconds when the answer was in. */
  at: number;
}

const pidsOf = (answers: readonly Answer[]): Set<number> => new Set(answers.map((a) => a.pid));
const bothServed = (answers: readonly Answer[]): boolean => pidsOf(answers).size >= 2;

/**
 * Requests on fresh connections, each from a new address, until ROUND were sent and `enough` holds
 * (by default: both workers answered); at most ROUND_MAX.
 */
async function round(surface: Surface, send: (ip: string) => Promise<RawResponse>, enough = bothServed): Promise<Answer[]> {
  const answers: Answer[] = [];
  while ((answers.length < ROUND || !enough(answers)) && answers.length < ROUND_MAX) {
    const ip = freshAddress();
    const res = await send(ip);
    const at = Date.now();
    answers.push({ res, pid: await servedBy(surface, ip), at });
  }
  return answers;
}

function assertBothWorkers(t: Test, answers: readonly Answer[], what: string): void {
  const pids = pidsOf(answers);
  t.equal(pids.size, 2, `${what}: answered by two processes (${[...pids].join(', ')}), ${answers.length} requests`);
  t.notOk(pids.has(server.pid), `${what}: neither of them the supervisor`);
}

function cdnGet(target: string): (ip: string) => Promise<RawResponse> {
  return (ip) => rawRequest({ url: server.cdnUrl, localAddress: ip }, { method: 'GET', target, headers: [['Host', cdnHost]] });
}

/** Both workers have answered HIT: each has the bytes in its memory tier. */
const hitInBoth = (answers: readonly Answer[]): boolean => pidsOf(answers.filter((a) => a.res.headers['x-cache'] === 'HIT')).size >= 2;

/** A CDN answer's status and cache status (none for a refusal). */
const statusAndCache = (a: Answer): unknown[] => [a.res.status, a.res.headers['x-cache'] ?? 'no X-Cache'];

t.test('a revoked key is refused by every worker', async (t) => {
  await cora.client.createBucket('coh-keys');
  const key = await cora.client.createAccessKey('coh-keys', { name: 'soon revoked', permission: 'read_write' });
  const creds = { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey };
  const body = Buffer.from('read with a key about to be revoked\n');
  t.equal((await new RawS3({ url: server.url }, creds).putObject('coh-keys', 'doc.txt', body)).status, 200, 'written with the key');
  const get = (ip: string): Promise<RawResponse> => new RawS3({ url: server.url, localAddress: ip }, creds).getObject('coh-keys', 'doc.txt');

  const before = await round('s3', get);
  assertBothWorkers(t, before, 'before');
  t.same(before.map((a) => a.res.status), before.map(() => 200), 'before: every GET 200 (both workers hold the key)');

  t.equal(await cora.client.deleteAccessKey('coh-keys', key.accessKeyId), 'Access key deleted', 'revoked through the API');
  await sleep(SETTLE_MS);
  const after = await round('s3', get);
  assertBothWorkers(t, after, 'after');
  t.same(
    after.map((a) => [a.res.status, /<Code>([^<]+)<\/Code>/.exec(a.res.text)?.[1]]),
    after.map(() => [403, 'InvalidAccessKeyId']),
    'after: every GET 403 InvalidAccessKeyId',
  );
});

t.test('a deleted asset is gone from every worker', async (t) => {
  const asset = await cora.client.upload({ file: Buffer.from('an asset about to be deleted\n'), fileName: 'gone.txt', contentType: 'text/plain' });
  const get = cdnGet(new URL(asset.publicUrl).pathname);

  const before = await round('cdn', get, hitInBoth);
  t.ok(hitInBoth(before), `before: both workers answered HIT (${before.length} requests)`);
  t.same(before.map((a) => a.res.status), before.map(() => 200), 'before: every GET 200');

  await cora.client.deleteAsset(asset.id);
  await sleep(SETTLE_MS);
  const after = await round('cdn', get);
  assertBothWorkers(t, after, 'after');
  t.same(after.map(statusAndCache), after.map(() => [404, 'no X-Cache']), 'after: every GET 404, from no cache');
});

t.test('an overwrite or a delete through one worker is read at once through the other (the row cache)', async (t) => {
  // Objects are cached by each worker (db/metadata-cache.ts), validated against SQLite's data_version
  // before every cached answer: nothing to wait for here, unlike the found-caches above.
  await cora.client.createBucket('coh-rows');
  const key = await cora.client.createAccessKey('coh-rows', { name: 'writer', permission: 'read_write' });
  const credentials = { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey };
  /** The key's client on a fresh connection from a loopback address of its own. */
  const from = (ip: string): RawS3 => new RawS3({ url: server.url, localAddress: ip }, credentials);
  t.equal((await from(freshAddress()).putObject('coh-rows', 'v.txt', Buffer.from('v0'))).status, 200, 'written');
  const get = (ip: string): Promise<RawResponse> => from(ip).getObject('coh-rows', 'v.txt');
  const warm = await round('s3', get);
  assertBothWorkers(t, warm, 'warm: both workers read (and cached) the object');
  let crossed = 0;
  for (let i = 1; i <= 12; i++) {
    const writer = freshAddress();
    t.equal((await from(writer).putObject('coh-rows', 'v.txt', Buffer.from(`v${i}`))).status, 200, `overwrite ${i}`);
    const reader = freshAddress();
    t.equal((await get(reader)).text, `v${i}`, `overwrite ${i} read at once`);
    if ((await servedBy('s3', writer)) !== (await servedBy('s3', reader))) crossed++;
  }
  t.ok(crossed > 0, `written through one worker and read through the other: ${crossed} of 12`);
  t.equal((await from(freshAddress()).deleteObject('coh-rows', 'v.txt')).status, 204, 'deleted');
  const gone = await round('s3', get);
  assertBothWorkers(t, gone, 'after the delete');
  t.same(gone.map((a) => a.res.status), gone.map(() => 404), 'every worker: 404 at once');
});

t.test('a bucket made private is refused by every worker', async (t) => {
  await cora.client.createBucket('coh-public');
  const key = await cora.client.createAccessKey('coh-public', { name: 'writer', permission: 'read_write' });
  const s3 = new RawS3({ url: server.url }, { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey });
  t.equal((await s3.putObject('coh-public', 'site.css', Buffer.from('body { color: teal }\n'), { 'content-type': 'text/css' })).status, 200, 'an object written');
  t.same(await cora.client.setBucketPublic('coh-public', true), { name: 'coh-public', public: true }, 'the bucket made public');
  const get = cdnGet('/b/coh-public/site.css');

  const before = await round('cdn', get, hitInBoth);
  t.ok(hitInBoth(before), `before: both workers answered HIT (${before.length} requests)`);
  t.same(before.map((a) => a.res.status), before.map(() => 200), 'before: every GET 200');

  t.same(await cora.client.setBucketPublic('coh-public', false), { name: 'coh-public', public: false }, 'made private through the API');
  await sleep(SETTLE_MS);
  const after = await round('cdn', get);
  assertBothWorkers(t, after, 'after');
  t.same(after.map(statusAndCache), after.map(() => [404, 'no X-Cache']), 'after: every GET 404, from no cache');
});

t.test('a purge reaches every worker: none serves a copy cached before it', async (t) => {
  const asset = await cora.client.upload({ file: Buffer.from('an asset about to be purged\n'), fileName: 'purged.txt', contentType: 'text/plain' });
  const get = cdnGet(new URL(asset.publicUrl).pathname);

  const before = await round('cdn', get, hitInBoth);
  t.ok(hitInBoth(before), `before: both workers answered HIT (${before.length} requests)`);
  // The copies cached before the purge are then more than a second older than it.
  await sleep(1100);
  const purgedAt = Date.now();
  t.equal(await cora.client.purge({ assetId: asset.id }), 1, 'purged through the API: one cached copy in the worker that took the call');
  await sleep(SETTLE_MS);
  const after = await round('cdn', get);
  assertBothWorkers(t, after, 'after');
  t.same(after.map((a) => a.res.status), after.map(() => 200), 'after: every GET 200');
  t.equal(after[0]?.res.headers['x-cache'], 'MISS', 'the first answer after the purge fetches the asset again');
  for (const a of after) {
    // A copy cached before the purge would be older than the time since the purge (Age in whole seconds).
    const sincePurge = Math.floor((a.at - purgedAt) / 1000);
    t.ok(Number(a.res.headers.age) <= sincePurge, `worker ${a.pid}: ${a.res.headers['x-cache']}, Age ${a.res.headers.age} (${sincePurge} s since the purge): cached after it`);
  }
});

t.test('a price change is shown by every worker', async (t) => {
  const tldsOf = (ip: string): Promise<RawResponse> =>
    rawRequest(
      { url: server.url, localAddress: ip },
      { method: 'GET', target: '/api/v3/domains/tlds', headers: [['Host', new URL(server.url).host], ['Authorization', `Bearer ${cora.token}`]] },
    );
  const priceOf = (res: RawResponse): unknown => {
    if (res.status !== 200) return `status ${res.status}`;
    return (JSON.parse(res.text) as { tlds: { tld: string; registerDollar: number }[] }).tlds.find((x) => x.tld === '.io')?.registerDollar;
  };

  const before = await round('api', tldsOf);
  assertBothWorkers(t, before, 'before');
  const old = priceOf(before[0]?.res as RawResponse);
  t.type(old, 'number', `.io costs ${String(old)}`);
  t.same(before.map((a) => priceOf(a.res)), before.map(() => old), 'before: every answer the old price');
  const price = Math.round((Number(old) + 1.11) * 100) / 100;

  await server.admin(['tlds', 'set', 'io', '--register', price.toFixed(2)]);
  await sleep(SETTLE_MS);
  const after = await round('api', tldsOf);
  assertBothWorkers(t, after, 'after');
  t.same(after.map((a) => priceOf(a.res)), after.map(() => price), `after: every answer ${price}`);
});

t.test('a new project rule is applied by every worker', async (t) => {
  const [project] = await cora.client.listProjects();
  const [hostname] = await cora.client.listHostnames(project?.id as string);
  t.equal(hostname?.hostname, 'coherent.test', 'the project hostname, proxied to the loopback origin');
  const get = (ip: string): Promise<RawResponse> =>
    rawRequest({ url: server.url, localAddress: ip }, { method: 'GET', target: '/page', headers: [['Host', 'coherent.test']] });

  const before = await round('proxy', get);
  assertBothWorkers(t, before, 'before');
  t.same(before.map((a) => [a.res.status, a.res.text]), before.map(() => [200, 'from the origin\n']), 'before: every request reaches the origin');

  await cora.client.setRules(project?.id as string, hostname?.id as string, { blockIps: ['127.0.0.0/8'] });
  await sleep(SETTLE_MS);
  const after = await round('proxy', get);
  assertBothWorkers(t, after, 'after');
  t.same(after.map((a) => a.res.status), after.map(() => 403), 'after: every request 403, refused by the rule');
});
