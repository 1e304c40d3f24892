// The disk tier shared by the workers of one data directory (src/cdn/cache/disk-tier.ts, disk-index.ts,
// remote-fill.ts): two edge caches opened on one directory stand for two worker processes (each its own
// index connection, memory tier and fills), with storage sources made of buffers that count their
// opens. A fill happens once across them (the other follows its file), the second's first answer after
// a fill is a HIT, eviction keeps the whole directory under one bound, a purge in one drops the disk
// copy for both (and a fill in flight in the other), a dead or stalled filler is taken over or left
// behind, a lost index is rebuilt from the files, and the edge proxy's answers keep working.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { DiskTier, encodeHeader } from '../../src/cdn/cache/disk-tier.js';
import { CdnCache, objectCacheKey, type CacheObject, type CacheResult } from '../../src/cdn/cdn-cache.js';
import { ProxyResponseCache } from '../../src/edge/response-cache.js';
import type { ReadRange } from '../../src/storage/backend.js';
import { tempDir } from '../helpers/temp-data.js';

const KiB = 1024;

interface Opened {
  cache: CdnCache;
  warnings: unknown[];
}

async function openCache(t: Test, dir: string, opts: { memoryEntryMaxBytes?: number; diskBytes?: number; stallMs?: number } = {}): Promise<Opened> {
  const warnings: unknown[] = [];
  const cache = await CdnCache.open({
    dir,
    memoryBytes: 1 << 20,
    memoryEntryMaxBytes: opts.memoryEntryMaxBytes ?? 8 * KiB,
    diskBytes: opts.diskBytes ?? 16 << 20,
    now: () => 1_000_000,
    log: { warn: (obj: unknown) => void warnings.push(obj) },
    ...(opts.stallMs !== undefined ? { stallMs: opts.stallMs } : {}),
  });
  t.teardown(() => cache.close());
  return { cache, warnings };
}

/** Two workers on one cache directory. */
async function twoWorkers(t: Test, opts: Parameters<typeof openCache>[2] = {}): Promise<{ dir: string; a: CdnCache; b: CdnCache }> {
  const dir = join(tempDir(t), 'cdn-cache');
  const a = (await openCache(t, dir, opts)).cache;
  const b = (await openCache(t, dir, opts)).cache;
  return { dir, a, b };
}

/** An object whose bytes come from `data` (16 KiB chunks); counts its storage opens and the ranges asked. */
class Source {
  opens = 0;
  readonly ranges: (ReadRange | undefined)[] = [];
  constructor(
    public data: Buffer,
    public key = objectCacheKey('B1', 'dir/file.bin'),
    public etag = '"v1"',
  ) {}

  object(): CacheObject {
    return { key: this.key, etag: this.etag, size: this.data.length, owner: 'alice', open: (range) => this.open(range) };
  }

  open(range?: ReadRange): Promise<Readable> {
    this.opens++;
    this.ranges.push(range);
    const bytes = range ? this.data.subarray(range.start, range.end + 1) : this.data;
    const chunks: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 16 * KiB) chunks.push(bytes.subarray(i, i + 16 * KiB));
    return Promise.resolve(Readable.from(chunks, { objectMode: false }));
  }
}

/** A source whose single stream the test feeds by hand. */
class GatedSource extends Source {
  readonly stream = new PassThrough();
  override open(): Promise<Readable> {
    this.opens++;
    return Promise.resolve(this.stream);
  }
}

/** The status of a read, its body consumed (a file body left unread would hold its file open). */
async function statusOf(reading: Promise<CacheResult>): Promise<string> {
  const result = await reading;
  await bytesOf(result);
  return result.status;
}

async function bytesOf(result: CacheResult): Promise<Buffer> {
  if (Buffer.isBuffer(result.body)) return result.body;
  const chunks: Buffer[] = [];
  for await (const chunk of result.body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function pattern(size: number, seed = 1): Buffer {
  return Buffer.from(Array.from({ length: size }, (_, i) => (i * 31 + seed) & 0xff));
}

/** Complete cache files (the shard directories' files) with their sizes. */
function cacheFiles(dir: string): { name: string; size: number }[] {
  return readdirSync(dir)
    .filter((d) => /^[0-9a-f]{2}$/.test(d))
    .flatMap((d) => readdirSync(join(dir, d)).map((name) => ({ name, size: statSync(join(dir, d, name)).size })));
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '0']);
  if (pid === undefined) throw new Error('no child process');
  return pid;
}

t.test('a large object filled by one worker is followed by the other: one storage read between them', async (t) => {
  const { a, b } = await twoWorkers(t);
  const data = pattern(300 * KiB, 3);
  const filling = new GatedSource(data);
  const other = new Source(data);
  const first = a.read(filling.object());
  filling.stream.write(data.subarray(0, 100 * KiB));
  const followed = await b.read(other.object());
  const ranged = await b.read(other.object(), { range: { start: 150 * KiB, end: 250 * KiB - 1 } });
  t.equal(followed.status, 'MISS', "the other worker's first request joins the fill in flight");
  const bodies = Promise.all([first.then(bytesOf), bytesOf(followed), bytesOf(ranged)]);
  for (let i = 100 * KiB; i < data.length; i += 20 * KiB) {
    await sleep(2);
    filling.stream.write(data.subarray(i, i + 20 * KiB));
  }
  filling.stream.end();
  const [mine, theirs, part] = await bodies;
  t.ok(mine.equals(data), 'the filler gets the object');
  t.ok(theirs.equals(data), 'so does the follower, from the fill file');
  t.ok(part.equals(data.subarray(150 * KiB, 250 * KiB)), 'and a range of it');
  t.equal(other.opens, 0, 'the follower never read storage');
  await a.idle();
  await b.idle();
  t.match(a.stats(), { storageReads: 1, diskEntries: 1 });
  t.match(b.stats(), { storageReads: 0, diskEntries: 1, fillsInFlight: 0 }, 'one disk tier: the same file for both');
  const hit = await b.read(other.object());
  t.equal(hit.status, 'HIT');
  t.ok((await bytesOf(hit)).equals(data), 'then a disk hit in the other worker');
  t.equal(other.opens, 0);
});

t.test("a small object: the other worker's first answer after the fill is a HIT; concurrent misses share one read", async (t) => {
  const { a, b } = await twoWorkers(t);
  const small = new Source(pattern(3000, 4), objectCacheKey('B1', 'small.txt'));
  t.equal((await a.read(small.object())).status, 'MISS');
  await a.idle();
  const hit = await b.read(small.object());
  t.equal(hit.status, 'HIT', 'from the shared disk tier');
  t.ok((await bytesOf(hit)).equals(small.data));
  t.equal(small.opens, 1, 'one storage read for the two workers');
  t.equal(b.stats().memoryEntries, 1, 'and promoted into the other worker’s memory tier');

  const gated = new GatedSource(pattern(5000, 5), objectCacheKey('B1', 'gated.txt'));
  const both = [a.read(gated.object()), b.read(gated.object()), b.read(gated.object())];
  await sleep(20);
  gated.stream.end(gated.data);
  for (const r of await Promise.all(both)) t.ok((await bytesOf(r)).equals(gated.data), 'the body');
  t.equal(gated.opens, 1, 'three concurrent misses in two workers: one storage read');
  t.equal(b.stats().storageReads, 0);
  t.equal(b.stats().memoryEntries, 2, 'the follower keeps the body in memory too');
});

t.test('eviction keeps the whole directory under one bound, whichever worker fills', async (t) => {
  const size = 20 * KiB;
  const perEntry = encodeHeader({ key: objectCacheKey('B1', 'k0'), etag: '"v1"', owner: 'alice', size, cachedAt: 1_000_000 }).length + size;
  const bound = 3 * perEntry + 10;
  const { dir, a, b } = await twoWorkers(t, { diskBytes: bound });
  const sources = Array.from({ length: 5 }, (_, i) => new Source(pattern(size, i), objectCacheKey('B1', `k${i}`)));
  const [s0, s1, s2, s3, s4] = sources as [Source, Source, Source, Source, Source];
  for (const [cache, src] of [[a, s0], [b, s1], [a, s2]] as const) {
    await bytesOf(await cache.read(src.object()));
    await cache.idle();
  }
  t.equal(a.stats().diskEntries, 3);
  // Worker B reads k0 from disk: now the most recently used (its use is written by idle()).
  t.equal(await statusOf(b.read(s0.object())), 'HIT');
  await b.idle();
  for (const [cache, src] of [[b, s3], [a, s4]] as const) {
    await bytesOf(await cache.read(src.object()));
    await cache.idle();
  }
  t.equal(b.stats().diskEntries, 3, 'three bodies fit');
  const onDisk = cacheFiles(dir);
  t.equal(onDisk.length, 3, 'evicted files are deleted, whoever filled them');
  t.ok(onDisk.reduce((n, f) => n + f.size, 0) <= bound, 'the files stay within the one bound');
  t.equal(a.probe(s0.object()).status, 'HIT', 'k0, used by the other worker, stays');
  t.equal(a.probe(s1.object()).status, 'BYPASS', 'the least recently used went first');
  t.equal(a.probe(s2.object()).status, 'BYPASS');
});

t.test('a purge in one worker drops the disk copy for both, and a fill in flight in the other', async (t) => {
  const { a, b } = await twoWorkers(t);
  const data = pattern(100 * KiB, 6);
  const src = new Source(data);
  await bytesOf(await a.read(src.object()));
  await a.idle();
  t.equal(await statusOf(b.read(src.object())), 'HIT', 'cached by A, a hit in B');
  t.equal(a.purgeObject('B1', 'dir/file.bin'), 1);
  await a.idle();
  t.equal(b.probe(src.object()).status, 'BYPASS', 'B no longer holds it');
  const again = await b.read(src.object());
  t.equal(again.status, 'MISS', 'B reads it again');
  t.ok((await bytesOf(again)).equals(data));
  await b.idle();
  t.equal(src.opens, 2);

  const gated = new GatedSource(pattern(100 * KiB, 7), objectCacheKey('B1', 'in-flight.bin'));
  const pending = b.read(gated.object());
  gated.stream.write(gated.data.subarray(0, 10 * KiB));
  t.equal(a.purgeObject('B1', 'in-flight.bin'), 1, "B's fill in flight counts in A");
  gated.stream.end(gated.data.subarray(10 * KiB));
  t.ok((await bytesOf(await pending)).equals(gated.data), 'those following it get the bytes');
  await b.idle();
  t.equal(b.probe(gated.object()).status, 'BYPASS', 'but it is not published');
  t.equal(a.probe(gated.object()).status, 'BYPASS');

  for (const [i, key] of ['img/a.png', 'img/b.png', 'css/c.css'].entries()) await bytesOf(await (i % 2 ? a : b).read(new Source(pattern(20 * KiB, i), objectCacheKey('B1', key)).object()));
  await a.idle();
  await b.idle();
  t.equal(b.purgePrefix('B1', 'img/'), 2, 'a prefix purge in B finds what A filled too');
  t.equal(a.stats().diskEntries, 2, 'the css and the refetched object stay');
  t.equal(a.purgeOwner('alice'), 2);
  t.equal(b.stats().diskEntries, 0);
});

t.test('a fill whose process died is taken over; its temp file goes', async (t) => {
  const dir = join(tempDir(t), 'cdn-cache');
  const { cache: b } = await openCache(t, dir);
  const data = pattern(200 * KiB, 8);
  const src = new Source(data);
  const dead = await DiskTier.open({ dir, maxBytes: 16 << 20, log: { warn: () => undefined }, pid: deadPid() });
  const slot = dead.reserve({ key: src.key, etag: src.etag, owner: 'alice', size: data.length, cachedAt: 1 });
  if (!slot) throw new Error('no slot');
  await slot.write(data.subarray(0, 10 * KiB), 0);
  t.ok(existsSync(slot.tempFile), 'the dead process left a half-written temp file');
  const res = await b.read(src.object());
  t.equal(res.status, 'MISS');
  t.ok((await bytesOf(res)).equals(data), 'the whole object, from storage');
  t.equal(src.opens, 1, 'read once, by the worker that took over');
  await b.idle();
  t.notOk(existsSync(slot.tempFile), 'the dead fill’s temp file is deleted');
  t.equal(b.stats().diskEntries, 1, 'and the new fill is published');
  t.equal(await statusOf(b.read(src.object())), 'HIT');
  slot.release();
});

t.test('a fill that fails or stalls in one worker: its follower reads the rest from storage', async (t) => {
  const { a, b } = await twoWorkers(t, { stallMs: 300 });
  const data = pattern(200 * KiB, 9);
  const failing = new GatedSource(data);
  const other = new Source(data);
  const first = a.read(failing.object());
  failing.stream.write(data.subarray(0, 50 * KiB));
  const followed = await b.read(other.object());
  const firstBody = first.then(bytesOf);
  await sleep(20);
  failing.stream.destroy(new Error('storage went away'));
  await t.rejects(firstBody, 'the filler’s own reader sees the failure');
  t.ok((await bytesOf(followed)).equals(data), 'the follower gets every byte: the rest from its own storage read');
  t.equal(other.opens, 1);
  t.ok((other.ranges[0]?.start ?? 0) > 0, `only the missing part was read (from byte ${other.ranges[0]?.start})`);

  const stalled = new GatedSource(data, objectCacheKey('B1', 'stalled.bin'));
  const again = new Source(data, objectCacheKey('B1', 'stalled.bin'));
  const stalling = a.read(stalled.object());
  stalled.stream.write(data.subarray(0, 30 * KiB));
  const waiting = await b.read(again.object());
  t.ok((await bytesOf(waiting)).equals(data), 'a fill with no progress for stallMs is left: the follower reads the rest itself');
  t.equal(again.opens, 1);
  const taken = new Source(data, objectCacheKey('B1', 'stalled.bin'));
  const res = await b.read(taken.object());
  t.equal(res.status, 'MISS', 'a later request takes the stalled fill over');
  t.ok((await bytesOf(res)).equals(data));
  t.equal(taken.opens, 1);
  stalled.stream.end(data.subarray(30 * KiB));
  t.ok((await bytesOf(await stalling)).equals(data), 'the slow filler still serves its own reader');
  await a.idle();
  await b.idle();
  t.equal(b.stats().diskEntries, 1, 'one entry: the taken-over fill was not published over the new one');
});

t.test('restart: a lost or unreadable index is rebuilt from the files', async (t) => {
  const dir = join(tempDir(t), 'cdn-cache');
  const one = new Source(pattern(2000, 1), objectCacheKey('B1', 'one'));
  const two = new Source(pattern(50 * KiB, 2), objectCacheKey('B1', 'two'));
  const objects = [one, two];
  {
    const { cache } = await openCache(t, dir);
    for (const o of objects) await bytesOf(await cache.read(o.object()));
    await cache.close();
  }
  for (const damage of ['deleted', 'garbage'] as const) {
    for (const name of ['index.db', 'index.db-wal', 'index.db-shm']) rmSync(join(dir, name), { force: true });
    if (damage === 'garbage') writeFileSync(join(dir, 'index.db'), 'this is not an SQLite database, not even close to one');
    const { cache, warnings } = await openCache(t, dir);
    await cache.idle();
    t.equal(cache.stats().diskEntries, 2, `${damage}: both entries come back from the files`);
    for (const o of objects) {
      const res = await cache.read(o.object());
      t.equal(res.status, 'HIT', `${damage}: a hit`);
      t.ok((await bytesOf(res)).equals(o.data));
    }
    t.equal(warnings.length, damage === 'garbage' ? 1 : 0, `${damage}: ${damage === 'garbage' ? 'logged' : 'nothing to say'}`);
    await cache.close();
  }
  t.equal(one.opens + two.opens, 2, 'no storage read after the first fills');
});

t.test("the edge proxy's answers: each worker keeps its own; a hostname purge in one drops both", async (t) => {
  const { a, b } = await twoWorkers(t);
  const now = (): number => 1_000_000;
  const proxies = [new ProxyResponseCache(a, { maxEntries: 100, now, elapsed: now }), new ProxyResponseCache(b, { maxEntries: 100, now, elapsed: now })];
  const body = pattern(100 * KiB, 11);
  const req = { method: 'GET', url: '/big', headers: {} };
  let originRequests = 0;
  /** What the proxy handler does: look up, else "forward" (a body from the origin) and offer the answer. */
  const get = async (proxy: ProxyResponseCache): Promise<string | null> => {
    const hit = await proxy.lookup('site.test', req);
    if (hit) {
      if (!(await bodyOf(hit.body)).equals(body)) t.fail('a hit with other bytes');
      return hit.cacheStatus;
    }
    originRequests++;
    const stored = await proxy.store('site.test', req, 200, { 'cache-control': 'max-age=60', 'content-length': String(body.length) }, Readable.from([body]));
    if (!stored) return null;
    if (!(await bodyOf(stored.body)).equals(body)) t.fail('a stored answer with other bytes');
    return stored.cacheStatus;
  };
  const statuses: (string | null)[] = [];
  for (const proxy of [...proxies, ...proxies, ...proxies]) {
    statuses.push(await get(proxy));
    await a.idle();
    await b.idle();
  }
  // Its metadata is in each process: another worker's answer is not this one's, and a large answer
  // (disk only) must not be replaced by the other worker's at every request.
  t.same(statuses, ['MISS', 'MISS', 'HIT', 'HIT', 'HIT', 'HIT'], 'each worker stores its answer once, then hits');
  t.equal(originRequests, 2);
  t.ok(proxies[0]?.purgeHostname('site.test'), "a hostname purge in one worker finds both workers' copies");
  // The purge drops the shared index's entries at once, and deletes their files in the background; B
  // may use what it read of the index within the last second (the disk tier's hint) until its open of
  // the file fails. So B's miss is certain once A's deletions are done (or after that second).
  await a.idle();
  const after = await proxies[1]?.lookup('site.test', req);
  t.equal(after, undefined, "the other worker's copy is gone with it (the shared disk tier)");
});

async function bodyOf(body: Buffer | Readable | null): Promise<Buffer> {
  if (body === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}
