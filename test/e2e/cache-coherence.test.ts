// Two gateway processes on one data directory, as `serve --workers 2` runs them (issue 21): here two
// contexts built in this test process with shares 1 and 2 of 2, each listening on its own ports
// (createContext + startServer). A public bucket object cached by both CDN listeners is purged through
// the management API of the first; the second stops serving its cached copy once it has read the
// invalidation feed (polled against a generous deadline). Each share caches in its own directory,
// with its part of the upload budget; worker 1 removes a single process's cache files. (Without a
// share the cache is cdn-cache/ itself, as before: test/unit/cache-purges.test.ts, cdn-cache-disk.)
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { mintApiKey } from '../../src/auth/api-keys.js';
import { createContext, type AppContext } from '../../src/context.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { inProcessServerConfig, tempDir } from '../helpers/temp-data.js';

const DEADLINE_MS = 10_000;

async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${DEADLINE_MS} ms: ${what}`);
    await sleep(25);
  }
}

function cdnGet(server: RunningServer, target: string): Promise<RawResponse> {
  const cdnUrl = server.cdnUrl as string;
  return rawRequest({ url: cdnUrl }, { method: 'GET', target, headers: [['Host', `cdn.localhost:${new URL(cdnUrl).port}`]] });
}

function api(server: RunningServer, token: string, method: string, target: string, body: unknown): Promise<RawResponse> {
  const bytes = Buffer.from(JSON.stringify(body));
  return rawRequest(
    { url: server.url },
    {
      method,
      target,
      headers: [['Host', new URL(server.url).host], ['Authorization', `Bearer ${token}`], ['Content-Type', 'application/json'], ['Content-Length', String(bytes.length)]],
      body: bytes,
    },
  );
}

t.test('a purge through one worker reaches the cached copy of the other', async (t) => {
  const dataDir = tempDir(t);
  const rootKey = { accessKeyId: `COHERE${randomBytes(4).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(30).toString('base64url') };
  const config = inProcessServerConfig(dataDir, {
    host: '127.0.0.1',
    rootAccessKey: rootKey.accessKeyId,
    rootSecretKey: rootKey.secretAccessKey,
    'cdn.cache.diskBytes': '8000000',
    'limits.uploadBufferBytes': '4000000',
  });
  const cacheRoot = join(dataDir, 'cdn-cache');

  // What a single process left: its cache is cdn-cache/ itself (shard directories and tmp).
  mkdirSync(join(cacheRoot, 'ab'), { recursive: true });
  mkdirSync(join(cacheRoot, 'tmp'));
  writeFileSync(join(cacheRoot, 'ab', 'f'.repeat(32)), 'a single process cached this');

  const contexts: AppContext[] = [];
  const servers: RunningServer[] = [];
  for (const slot of [1, 2]) {
    const ctx = await createContext(config, { share: { slot, of: 2 } });
    contexts.push(ctx);
    servers.push(await startServer(ctx));
  }
  t.teardown(async () => {
    for (const s of servers) await s.close(1000);
    for (const ctx of contexts) await ctx.close();
  });
  const [ctx1, ctx2] = contexts as [AppContext, AppContext];
  const [s1, s2] = servers as [RunningServer, RunningServer];

  t.equal(ctx1.uploadBudget.capBytes, 2_000_000, 'share 1: half the upload budget');
  t.equal(ctx2.uploadBudget.capBytes, 2_000_000, 'share 2: half the upload budget');
  t.ok(existsSync(join(cacheRoot, '1', 'tmp')) && existsSync(join(cacheRoot, '2', 'tmp')), 'each share has its own directory');
  await until("worker 1 removed the single process's files", () => readdirSync(cacheRoot).sort().join() === '1,2');

  // A public bucket object, written through worker 1.
  const s3 = new RawS3({ url: s1.url }, rootKey);
  t.equal((await s3.createBucket('coherent')).status, 200);
  const body = randomBytes(5000);
  t.equal((await s3.putObject('coherent', 'pics/a.bin', body)).status, 200);
  const root = await ctx1.repos.users.getByName('root');
  if (!root) throw new Error('no root user');
  const { token } = await mintApiKey(ctx1.repos.apiKeys, root.id, 'coherence test', ['buckets:manage', 'assets:write']);
  t.equal((await api(s1, token, 'PUT', '/api/v3/buckets/coherent/public', { public: true })).status, 200);

  // The PUT purged the key in worker 1 and appended that to the feed: worker 2 applies it within a
  // tick of its tail, which must be over before it caches (or it would drop its fresh copy).
  await ctx1.cachePurges.idle();
  await until('worker 2 read the feed to its end', async () => ctx2.cachePurges.stats().position === (await ctx2.repos.cacheInvalidations.lastSeq()));

  // Both workers cache it (memory and their own disk directory).
  const target = '/b/coherent/pics/a.bin';
  for (const s of [s1, s2]) {
    const first = await cdnGet(s, target);
    t.equal(first.status, 200);
    t.ok(first.body.equals(body), 'the object');
    t.equal(first.headers['x-cache'], 'MISS');
    t.equal((await cdnGet(s, target)).headers['x-cache'], 'HIT');
  }
  await ctx2.edge.idle();
  t.equal(ctx2.edge.stats().diskEntries, 1, 'worker 2 keeps it on disk');
  const shardFiles = (slot: string): number =>
    readdirSync(join(cacheRoot, slot)).filter((d) => d !== 'tmp').reduce((n, d) => n + readdirSync(join(cacheRoot, slot, d)).length, 0);
  t.equal(shardFiles('2'), 1, 'in cdn-cache/2');
  t.equal(shardFiles('1'), 1, "worker 1's copy in cdn-cache/1");

  const appliedBefore = ctx2.cachePurges.stats().applied;

  // Purged through worker 1's management API: worker 1 at once, worker 2 once it reads the feed.
  const purged = await api(s1, token, 'POST', '/api/v3/cdn/purge', { bucket: 'coherent', prefix: 'pics/' });
  t.equal(purged.status, 200);
  t.same(JSON.parse(purged.text), { success: true, purged: 1 }, "worker 1's copy");
  await until('worker 2 stops serving its cached copy', async () => {
    const res = await cdnGet(s2, target);
    t.equal(res.status, 200);
    return res.headers['x-cache'] !== 'HIT';
  });
  t.equal(ctx2.cachePurges.stats().applied, appliedBefore + 1, 'worker 2 applied the purge from the feed');
  t.equal((await cdnGet(s2, target)).headers['x-cache'], 'HIT', 'cached again after the refetch');
  const again = await cdnGet(s1, target);
  t.equal(again.headers['x-cache'], 'MISS', 'worker 1 refetches too');
  t.ok(again.body.equals(body));
  t.equal(ctx1.cachePurges.stats().applied, 0, 'worker 1 never applies its own purge again');
});
