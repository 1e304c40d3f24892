// The invalidation feed between gateway processes (src/cdn/cache-purges.ts): "processes" here are
// separate connections to one SQLite file, each with its own real edge cache, proxy cache and
// CachePurges, whose feed the test reads by calling poll() (no timer). Another process's purges are
// applied, its own are not, a process that starts later does not replay older ones, long feeds are read
// in batches, old rows are pruned, and a failed append does not fail the purge. Also: how a process's
// share of the cache and upload budget is computed, and what becomes of the old per-worker layout's files.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CachePurges, RETENTION_MS } from '../../src/cdn/cache-purges.js';
import { encodeHeader } from '../../src/cdn/cache/disk-tier.js';
import { assetCacheKey, CdnCache, objectCacheKey, type CacheObject } from '../../src/cdn/cdn-cache.js';
import { shareLimits } from '../../src/context/shares.js';
import { openDatabase, type Db } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import { proxyCacheOwner } from '../../src/db/repos/hostname-model.js';
import { ProxyResponseCache } from '../../src/edge/response-cache.js';
import { tempDir, testConfig } from '../helpers/temp-data.js';

interface Clock {
  now: number;
}

interface Proc {
  db: Db;
  repos: Repos;
  edge: CdnCache;
  purges: CachePurges;
  warnings: unknown[];
}

async function startProc(t: Test, file: string, cacheDir: string, clock: Clock): Promise<Proc> {
  const db = openDatabase(file);
  const repos = createRepos(db);
  const warnings: unknown[] = [];
  const log = { warn: (obj: unknown) => void warnings.push(obj) };
  const edge = await CdnCache.open({ dir: cacheDir, memoryBytes: 1 << 20, memoryEntryMaxBytes: 64 * 1024, diskBytes: 4 << 20, now: () => clock.now, log });
  const proxyCache = new ProxyResponseCache(edge, { maxEntries: 100, now: () => clock.now, elapsed: () => clock.now });
  const purges = new CachePurges({ cdnCache: edge, proxyCache, repos, now: () => clock.now, elapsed: () => clock.now, log, tailMs: 0 });
  t.teardown(async () => {
    await purges.close();
    await edge.close();
    db.close();
  });
  return { db, repos, edge, purges, warnings };
}

function entry(key: string, owner = 'alice'): CacheObject {
  const data = Buffer.from(`bytes of ${key}`);
  return { key, etag: '"v1"', size: data.length, owner, open: () => Promise.resolve(Readable.from([data])) };
}

/** Through the cache's real read path: a miss that fills both tiers. */
async function fill(p: Proc, obj: CacheObject): Promise<void> {
  const res = await p.edge.read(obj);
  if (!Buffer.isBuffer(res.body)) for await (const _ of res.body as AsyncIterable<Buffer>) void _;
  await p.edge.idle();
}

function holds(p: Proc, obj: CacheObject): boolean {
  return p.edge.holds(obj);
}

async function twoProcs(t: Test, clock: Clock = { now: 1_000_000 }): Promise<{ a: Proc; b: Proc; file: string; dir: string; clock: Clock }> {
  const dir = tempDir(t);
  const file = join(dir, 'meta.db');
  const a = await startProc(t, file, join(dir, 'cache-a'), clock);
  const b = await startProc(t, file, join(dir, 'cache-b'), clock);
  return { a, b, file, dir, clock };
}

const X = entry(objectCacheKey('B1', 'img/x.png'));
const Y = entry(objectCacheKey('B1', 'doc/y.txt'));
const ASSET = entry(assetCacheKey('a'.repeat(32)));
const BOBS = entry(objectCacheKey('B2', 'bob.txt'), 'bob');
const PROXIED = entry('p/H1/GET/abc', proxyCacheOwner('H1'));

t.test("another process's purges are applied there; a process's own are not applied twice", async (t) => {
  const { a, b } = await twoProcs(t);
  for (const p of [a, b]) for (const obj of [X, Y]) await fill(p, obj);

  t.equal(a.purges.purge({ kind: 'object', bucketId: 'B1', key: 'img/x.png' }), 1, 'purged here at once');
  t.notOk(holds(a, X), 'gone here');
  t.ok(holds(b, X), 'still there until B reads the feed');
  await a.purges.idle();
  t.equal(await b.purges.poll(), 1, 'B applies it');
  t.notOk(holds(b, X), 'gone there');
  t.ok(holds(b, Y), 'the other object stays');
  t.equal(await b.purges.poll(), 0, 'nothing new: nothing applied');

  // A caches X again; B's next purge makes A read the feed, its own row included.
  await fill(a, X);
  t.equal(b.purges.purge({ kind: 'owner', userId: 'nobody' }), 0);
  await b.purges.idle();
  t.equal(await a.purges.poll(), 1, "only B's purge is applied");
  t.ok(holds(a, X), "A's own purge was not applied again to what it cached since");
  t.same(a.purges.stats(), { appended: 1, appendFailures: 0, applied: 1, position: await a.repos.cacheInvalidations.lastSeq() }, 'A has read the feed to its end');
  t.equal(b.purges.stats().appended, 1);
  t.same(a.warnings, []);
});

t.test('every kind of purge reaches the other process', async (t) => {
  const { a, b } = await twoProcs(t);
  const cases = [
    { purge: { kind: 'asset', assetId: 'a'.repeat(32) }, gone: [ASSET] },
    { purge: { kind: 'prefix', bucketId: 'B1', prefix: 'img/' }, gone: [X] },
    { purge: { kind: 'owner', userId: 'bob' }, gone: [BOBS] },
    { purge: { kind: 'hostname', hostnameId: 'H1' }, gone: [PROXIED] },
    { purge: { kind: 'prefix', bucketId: 'B1', prefix: '' }, gone: [X, Y] },
  ] as const;
  for (const c of cases) {
    for (const obj of [X, Y, ASSET, BOBS, PROXIED]) await fill(b, obj);
    a.purges.purge(c.purge);
    await a.purges.idle();
    t.equal(await b.purges.poll(), 1, `${c.purge.kind}: applied`);
    for (const obj of [X, Y, ASSET, BOBS, PROXIED]) {
      t.equal(holds(b, obj), !c.gone.includes(obj), `${c.purge.kind}: ${obj.key} ${c.gone.includes(obj) ? 'purged' : 'kept'}`);
    }
  }
});

t.test('a process that starts later does not replay the purges made before it started', async (t) => {
  const { a, file, dir, clock } = await twoProcs(t);
  a.purges.purge({ kind: 'object', bucketId: 'B1', key: 'img/x.png' });
  await a.purges.idle();
  const late = await startProc(t, file, join(dir, 'cache-late'), clock);
  t.equal(await late.purges.poll(), 0, 'nothing to apply at its start');
  t.equal(late.purges.stats().position, await a.repos.cacheInvalidations.lastSeq(), 'it starts at the end of the feed');
  await fill(late, X);
  a.purges.purge({ kind: 'object', bucketId: 'B1', key: 'doc/y.txt' });
  await a.purges.idle();
  t.equal(await late.purges.poll(), 1, 'only the purge made after its start');
  t.ok(holds(late, X), 'the older purge of X was not applied');
});

t.test('a long feed is read to its end in one poll', async (t) => {
  const { a, b } = await twoProcs(t);
  for (let i = 0; i < 1203; i++) a.purges.purge({ kind: 'object', bucketId: 'B1', key: `k${i}` });
  await a.purges.idle();
  t.equal(await b.purges.poll(), 1203);
  t.equal(b.purges.stats().position, await a.repos.cacheInvalidations.lastSeq());
});

t.test('rows older than the retention are pruned by the next append', async (t) => {
  const { a, b, clock } = await twoProcs(t);
  a.purges.purge({ kind: 'asset', assetId: '1'.repeat(32) });
  await a.purges.idle();
  clock.now += 30_000;
  b.purges.purge({ kind: 'asset', assetId: '2'.repeat(32) });
  await b.purges.idle();
  t.equal((await a.repos.cacheInvalidations.after(0, 100)).length, 2, 'both rows are young');
  clock.now += RETENTION_MS - 10_000;
  a.purges.purge({ kind: 'asset', assetId: '3'.repeat(32) });
  await a.purges.idle();
  const left = await a.repos.cacheInvalidations.after(0, 100);
  t.same(left.map((r) => r.a), ['2'.repeat(32), '3'.repeat(32)], 'the row older than the retention went');
  t.equal(await b.purges.poll(), 1, "B still reads A's rows that are left");
  // seq is never reused: a reader's position stays valid after everything was pruned.
  clock.now += 2 * RETENTION_MS;
  const before = await a.repos.cacheInvalidations.lastSeq();
  a.purges.purge({ kind: 'asset', assetId: '4'.repeat(32) });
  await a.purges.idle();
  const rows = await a.repos.cacheInvalidations.after(0, 100);
  t.equal(rows.length, 1, 'only the newest row is left');
  t.ok((rows[0]?.seq ?? 0) > before, 'with a seq after every earlier one');
  t.equal(await b.purges.poll(), 1);
});

t.test('a purge whose append fails still purges here, and the failure is logged', async (t) => {
  const { a } = await twoProcs(t);
  await fill(a, X);
  a.db.exec('DROP TABLE cache_invalidations');
  t.equal(a.purges.purge({ kind: 'object', bucketId: 'B1', key: 'img/x.png' }), 1);
  t.notOk(holds(a, X));
  await a.purges.idle();
  t.equal(a.purges.stats().appendFailures, 1);
  t.equal(a.purges.stats().appended, 0);
  t.equal(a.warnings.length, 1, 'logged once');
});

t.test("a process's share of the cache and the upload budget", async (t) => {
  const config = testConfig({
    dataDir: '/data',
    'cdn.cache.memoryBytes': '1000',
    'cdn.cache.diskBytes': '10001',
    'limits.uploadBufferBytes': '3000',
  });
  t.same(shareLimits(config), { cacheDir: '/data/cdn-cache', memoryBytes: 1000, diskBytes: 10001, uploadBufferBytes: 3000 }, 'no share: the whole');
  // One disk tier for every worker: the same directory and the whole disk bound; memory is divided.
  t.same(shareLimits(config, { slot: 1, of: 2 }), { cacheDir: '/data/cdn-cache', memoryBytes: 500, diskBytes: 10001, uploadBufferBytes: 1500 });
  t.same(shareLimits(config, { slot: 2, of: 2 }), { cacheDir: '/data/cdn-cache', memoryBytes: 500, diskBytes: 10001, uploadBufferBytes: 1500 });
  t.same(shareLimits(config, undefined, 'supervisor'), { cacheDir: undefined, memoryBytes: 0, diskBytes: 0, uploadBufferBytes: 3000 }, 'the supervisor: no cache, no directory');
  const tiny = testConfig({ dataDir: '/data', 'limits.uploadBufferBytes': '3' });
  t.equal(shareLimits(tiny, { slot: 5, of: 8 }).uploadBufferBytes, 1, 'a cap stays a cap (0 would be none)');
  const uncapped = testConfig({ dataDir: '/data', 'limits.uploadBufferBytes': '0' });
  t.equal(shareLimits(uncapped, { slot: 1, of: 8 }).uploadBufferBytes, 0, 'no cap stays no cap');
  for (const bad of [{ slot: 0, of: 2 }, { slot: 3, of: 2 }, { slot: 1, of: 0 }, { slot: 1.5, of: 2 }]) {
    t.throws(() => shareLimits(config, bad), /slot 1\.\.of/, `${bad.slot} of ${bad.of}`);
  }
});

/** A complete cache file as the old per-worker layout (or any layout) wrote it. */
function cacheFile(key: string, body: string, cachedAt: number): Buffer {
  return Buffer.concat([encodeHeader({ key, etag: '"old"', owner: 'alice', size: Buffer.byteLength(body), cachedAt }), Buffer.from(body)]);
}

t.test("the old per-worker layout's files move into the shared cache; the rest of those directories goes", async (t) => {
  const root = join(tempDir(t), 'cdn-cache');
  const files: [string, Buffer][] = [
    [join(root, '1', 'ab', 'a'.repeat(32)), cacheFile('o/B1/one', 'cached by worker 1', 1000)],
    [join(root, '2', 'cd', 'b'.repeat(32)), cacheFile('o/B1/two', 'cached by worker 2', 1000)],
    // Both workers held a copy of one key: the newer stays.
    [join(root, '1', 'ef', 'c'.repeat(32)), cacheFile('o/B1/both', 'older copy', 1000)],
    [join(root, '2', 'ef', 'd'.repeat(32)), cacheFile('o/B1/both', 'newer copy', 2000)],
    [join(root, '3', 'ab', 'e'.repeat(32)), Buffer.from('not a cache file')],
    // Slot 12 of a larger cluster: a name that is also a shard's.
    [join(root, '12', 'ab', '9'.repeat(32)), cacheFile('o/B1/twelve', 'cached by worker 12', 1000)],
    [join(root, 'supervisor', 'tmp', 'f'.repeat(32)), Buffer.from('half a body')],
  ];
  for (const [file, bytes] of files) {
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, bytes);
  }
  const edge = await CdnCache.open({ dir: root, memoryBytes: 1 << 20, memoryEntryMaxBytes: 1024, diskBytes: 1 << 20, now: () => 5000, log: { warn: () => undefined } });
  t.teardown(() => edge.close());
  await edge.idle();
  t.match(edge.stats(), { diskEntries: 4 }, "the old directories' complete files are indexed");
  for (const [key, body] of [['one', 'cached by worker 1'], ['two', 'cached by worker 2'], ['both', 'newer copy'], ['twelve', 'cached by worker 12']] as const) {
    const obj = { key: objectCacheKey('B1', key), etag: '"old"', size: Buffer.byteLength(body), owner: 'alice', open: () => Promise.reject(new Error('no storage read expected')) };
    const res = await edge.read(obj);
    t.equal(res.status, 'HIT', `${key}: served from the moved file`);
    t.equal((res.body as Buffer).toString(), body);
  }
  t.same(readdirSync(root).filter((n) => !/^[0-9a-f]{2}$/.test(n) && n !== 'tmp' && !n.startsWith('index.db')), [], 'no slot directory is left');
  t.same(readdirSync(join(root, '12')).filter((n) => !/^[0-9a-f]{32}$/.test(n)), [], "and slot 12's shard directories are gone from the shard 12");
});

t.test("a single process removes the slot directories a cluster left in its cache directory", async (t) => {
  const root = join(tempDir(t), 'cdn-cache');
  for (const slot of ['1', '12']) {
    mkdirSync(join(root, slot, 'ab'), { recursive: true });
    writeFileSync(join(root, slot, 'ab', 'f'.repeat(32)), `slot ${slot} cached this`);
  }
  const edge = await CdnCache.open({ dir: root, memoryBytes: 1 << 20, memoryEntryMaxBytes: 1024, diskBytes: 1 << 20, now: () => 0, log: { warn: () => undefined } });
  t.teardown(() => edge.close());
  // The start's check of the directory runs in the background.
  await edge.idle();
  t.equal(edge.stats().diskEntries, 0, 'nothing of theirs is indexed');
  t.notOk(existsSync(join(root, '1')), 'slot 1 is gone');
  t.same(readdirSync(join(root, '12')), [], "slot 12 (a two-hex-digit name, a shard here) is emptied");
});
