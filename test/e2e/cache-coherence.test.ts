// Two gateway processes on one data directory, as `serve --workers 2` runs them (issue 21): here two
// contexts built in this test process with shares 1 and 2 of 2, each listening on its own ports
// (createContext + startServer). Both share one disk tier (cdn-cache/ itself, as a single process has
// it): a public bucket object fetched through the first is a HIT in the second without a storage read.
// It is purged through the management API of the first: the disk copy goes for both at once, and the
// second stops serving its memory copy once it has read the invalidation feed (polled against a
// generous deadline). Each share has its part of the upload budget and of the memory tier.
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
  t.ok(existsSync(join(cacheRoot, 'index.db')), 'one cache directory for both, with its shared index');
  await until("the single process's unreadable file is removed", () => !existsSync(join(cacheRoot, 'ab', 'f'.repeat(32))));
  t.same(readdirSync(cacheRoot).filter((n) => /^[0-9]+$/.test(n)), [], 'no per-worker directory');

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

  // Worker 1 fills the cache; worker 2's first answer is a hit from the shared disk tier.
  const target = '/b/coherent/pics/a.bin';
  const first = await cdnGet(s1, target);
  t.equal(first.status, 200);
  t.ok(first.body.equals(body), 'the object');
  t.equal(first.headers['x-cache'], 'MISS');
  await ctx1.cdnCache.idle();
  for (const s of [s2, s1, s2]) {
    const res = await cdnGet(s, target);
    t.equal(res.headers['x-cache'], 'HIT');
    t.ok(res.body.equals(body));
  }
  const storageReads = (): number => ctx1.cdnCache.stats().storageReads + ctx2.cdnCache.stats().storageReads;
  t.equal(storageReads(), 1, 'one storage read for the two workers');
  t.equal(ctx2.cdnCache.stats().diskEntries, 1, 'worker 2 sees the one disk entry');
  const shardFiles = (): number =>
    readdirSync(cacheRoot).filter((d) => /^[0-9a-f]{2}$/.test(d)).reduce((n, d) => n + readdirSync(join(cacheRoot, d)).length, 0);
  t.equal(shardFiles(), 1, 'stored once');

  const appliedBefore = ctx2.cachePurges.stats().applied;

  // Purged through worker 1's management API: the disk copy and worker 1's memory copy at once,
  // worker 2's memory copy once it reads the feed.
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
  await ctx2.cdnCache.idle();
  const again = await cdnGet(s1, target);
  t.equal(again.headers['x-cache'], 'HIT', "worker 1 serves the copy worker 2 fetched again: one refetch for both");
  t.ok(again.body.equals(body));
  t.equal(storageReads(), 2);
  t.equal(shardFiles(), 1);
  t.equal(ctx1.cachePurges.stats().applied, 0, 'worker 1 never applies its own purge again');
});
