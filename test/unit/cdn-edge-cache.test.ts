// The edge cache as the CDN handler uses it, against real tiers in a temp directory, with an injected
// clock and storage sources made of buffers (counting how often storage is opened): hits, misses,
// expiry by ETag, single flight, ranges, failed fills, purges, a restart, bypass and compression.
import t from 'tap';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { CdnCache, objectCacheKey, assetCacheKey, type CacheObject, type CacheResult } from '../../src/cdn/cdn-cache.js';
import type { ReadRange } from '../../src/storage/backend.js';
import { tempDir } from '../helpers/temp-data.js';

const silent = { warn: () => undefined };
const KiB = 1024;

interface Clock {
  now: number;
}

async function openCache(dir: string, clock: Clock, opts: { memoryBytes?: number; memoryEntryMaxBytes?: number; diskBytes?: number } = {}): Promise<CdnCache> {
  return CdnCache.open({
    dir,
    memoryBytes: opts.memoryBytes ?? 1 << 20,
    memoryEntryMaxBytes: opts.memoryEntryMaxBytes ?? 64 * KiB,
    diskBytes: opts.diskBytes ?? 16 << 20,
    now: () => clock.now,
    log: silent,
  });
}

/** An object whose bytes come from `data`, in 16 KiB chunks; counts the storage opens. */
class Source {
  opens = 0;
  constructor(
    public data: Buffer,
    public etag = '"v1"',
    public key = objectCacheKey('B1', 'dir/file.bin'),
    public owner = 'alice',
  ) {}

  object(): CacheObject {
    return { key: this.key, etag: this.etag, size: this.data.length, owner: this.owner, open: (range) => this.open(range) };
  }

  open(range?: ReadRange): Promise<Readable> {
    this.opens++;
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

async function bytesOf(result: CacheResult): Promise<Buffer> {
  if (Buffer.isBuffer(result.body)) return result.body;
  const chunks: Buffer[] = [];
  for await (const chunk of result.body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function pattern(size: number, seed = 1): Buffer {
  return Buffer.from(Array.from({ length: size }, (_, i) => (i * 31 + seed) & 0xff));
}

t.test('a small object: MISS fills memory and disk, then HIT with the same bytes', async (t) => {
  const clock = { now: 1_000_000 };
  const cache = await openCache(join(tempDir(t), 'c'), clock);
  const src = new Source(pattern(10 * KiB));
  const miss = await cache.read(src.object());
  t.equal(miss.status, 'MISS');
  t.equal(miss.cachedAt, 1_000_000, 'cached at the injected time');
  t.same(await bytesOf(miss), src.data);
  clock.now += 5000;
  const hit = await cache.read(src.object());
  t.equal(hit.status, 'HIT');
  t.equal(hit.cachedAt, 1_000_000, 'Age counts from the fill');
  t.same(await bytesOf(hit), src.data);
  t.equal(src.opens, 1, 'one storage read');
  t.equal(cache.stats().memoryEntries, 1, 'in memory as soon as the bytes are in');
  await cache.idle();
  t.match(cache.stats(), { storageReads: 1, hits: 1, misses: 1, memoryEntries: 1, diskEntries: 1 }, 'and on disk once synced');
  t.same(cache.probe(src.object()), { status: 'HIT', cachedAt: 1_000_000 });
  await cache.close();
});

t.test('an empty object is cached like any other', async (t) => {
  const dir = join(tempDir(t), 'c');
  const cache = await openCache(dir, { now: 1 });
  const src = new Source(Buffer.alloc(0), '"empty"');
  t.equal((await cache.read(src.object())).status, 'MISS');
  const hit = await cache.read(src.object());
  t.equal(hit.status, 'HIT');
  t.equal((await bytesOf(hit)).length, 0);
  await cache.close();
  const reopened = await openCache(dir, { now: 2 });
  const fromDisk = await reopened.read(src.object());
  t.equal(fromDisk.status, 'HIT', 'and survives a restart');
  t.equal((await bytesOf(fromDisk)).length, 0);
  t.equal(src.opens, 1);
  await reopened.close();
});

t.test('another ETag is EXPIRED: refetched and replaced, never the old bytes', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 });
  const src = new Source(pattern(5000, 1));
  await bytesOf(await cache.read(src.object()));
  src.data = pattern(6000, 2);
  src.etag = '"v2"';
  t.same(cache.probe(src.object()).status, 'BYPASS', 'a HEAD of the new version is not a hit');
  const fresh = await cache.read(src.object());
  t.equal(fresh.status, 'EXPIRED');
  t.same(await bytesOf(fresh), src.data, 'the new bytes');
  const again = await cache.read(src.object());
  t.equal(again.status, 'HIT');
  t.same(await bytesOf(again), src.data);
  t.equal(src.opens, 2);
  await cache.idle();
  t.match(cache.stats(), { expired: 1, diskEntries: 1, memoryEntries: 1 });
  await cache.close();
});

t.test('50 concurrent misses share one storage read (a large object, followed on disk)', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 }, { memoryEntryMaxBytes: 8 * KiB });
  const data = pattern(300 * KiB, 3);
  const src = new GatedSource(data);
  const reads = Array.from({ length: 50 }, (_, i) => cache.read(src.object(), i % 5 === 4 ? { range: { start: 1000, end: 200_999 } } : {}));
  const bodies = Promise.all(reads.map(async (r) => bytesOf(await r)));
  for (let i = 0; i < data.length; i += 10 * KiB) src.stream.write(data.subarray(i, i + 10 * KiB));
  src.stream.end();
  const results = await Promise.all(reads);
  t.same(new Set(results.map((r) => r.status)), new Set(['MISS']), 'all misses');
  const got = await bodies;
  got.forEach((b, i) => {
    const want = i % 5 === 4 ? data.subarray(1000, 201_000) : data;
    if (!b.equals(want)) t.fail(`reader ${i} got other bytes`);
  });
  t.equal(src.opens, 1, 'exactly one storage read');
  // The file is synced and published after the last byte went out: nobody waits for that.
  await cache.idle();
  t.match(cache.stats(), { storageReads: 1, misses: 50, fillsInFlight: 0, diskEntries: 1, memoryEntries: 0 });
  const hit = await cache.read(src.object());
  t.equal(hit.status, 'HIT');
  t.same(await bytesOf(hit), data, 'then served from disk');
  await cache.close();
});

t.test('50 concurrent misses of a small object: one read, everyone gets the body', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 });
  const src = new GatedSource(pattern(3000, 4));
  const reads = Array.from({ length: 50 }, () => cache.read(src.object()));
  src.stream.end(src.data);
  for (const r of await Promise.all(reads)) if (!(await bytesOf(r)).equals(src.data)) t.fail('other bytes');
  t.equal(src.opens, 1);
  t.equal(cache.stats().storageReads, 1);
  await cache.close();
});

t.test('a cold range fills the whole object; nothing partial is cached', async (t) => {
  for (const [what, size] of [['memory-sized', 20 * KiB], ['disk-only', 200 * KiB]] as const) {
    const cache = await openCache(join(tempDir(t), 'c'), { now: 1 });
    const src = new Source(pattern(size, 5));
    const part = await cache.read(src.object(), { range: { start: 100, end: 199 } });
    t.equal(part.status, 'MISS', `${what}: a miss`);
    t.same(await bytesOf(part), src.data.subarray(100, 200), `${what}: the range`);
    // A range ends before the fill may; the fill goes on whether anyone reads it or not.
    await cache.idle();
    const whole = await cache.read(src.object());
    t.equal(whole.status, 'HIT', `${what}: then a hit`);
    t.same(await bytesOf(whole), src.data, `${what}: the whole object`);
    t.equal(src.opens, 1, `${what}: one read of the whole object`);
    await cache.close();
  }
});

t.test('a failed fill caches nothing and the next request tries again', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 }, { memoryEntryMaxBytes: 4 * KiB });
  const data = pattern(100 * KiB, 6);
  const src = new GatedSource(data);
  const first = cache.read(src.object());
  const second = cache.read(src.object());
  src.stream.write(data.subarray(0, 30 * KiB));
  const firstBody = bytesOf(await first);
  src.stream.destroy(new Error('storage went away'));
  await t.rejects(firstBody, 'the first reader sees the failure');
  await t.rejects(second.then(bytesOf), 'so does the one that joined');
  t.match(cache.stats(), { diskEntries: 0, memoryEntries: 0, fillsInFlight: 0 });
  const retry = new Source(data);
  const again = await cache.read(retry.object());
  t.equal(again.status, 'MISS', 'a miss again');
  t.same(await bytesOf(again), data);
  await cache.idle();
  t.equal(cache.stats().diskEntries, 1);

  const small = new GatedSource(pattern(1000, 7), '"s"', assetCacheKey('a'.repeat(32)));
  const smallRead = cache.read(small.object());
  small.stream.end(small.data.subarray(0, 10));
  await t.rejects(smallRead, /short read/, 'a short storage read fails the fill');
  t.equal(cache.probe(small.object()).status, 'BYPASS', 'and caches nothing');
  await cache.close();
});

t.test('readHeld and holds never start a fill: they find a tier\'s copy or join the fill in flight', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 }, { memoryEntryMaxBytes: 4 * KiB });
  const data = pattern(50 * KiB, 9);
  const src = new GatedSource(data);
  const { open: _open, ...held } = src.object();
  t.equal(await cache.readHeld(held), undefined, 'nothing held: undefined');
  t.equal(cache.holds(held), false);
  t.equal(src.opens, 0, 'and nothing was opened');
  t.equal(cache.stats().fillsInFlight, 0);

  const filling = cache.read(src.object());
  t.equal(cache.holds(held), true, 'a fill of this version is in flight');
  t.equal(cache.holds({ ...held, etag: '"other"' }), false, 'not of another version');
  const joined = await cache.readHeld(held, { range: { start: 10, end: 19 } });
  src.stream.end(data);
  t.same(await bytesOf(await filling), data);
  if (!joined) throw new Error('readHeld did not join the fill');
  t.equal(joined.status, 'MISS', 'a joiner is a miss, as in read()');
  t.same(await bytesOf(joined), data.subarray(10, 20));
  t.equal(src.opens, 1, 'one read between them');
  await cache.idle();

  const hit = await cache.readHeld(held);
  t.equal(hit?.status, 'HIT', 'then from disk');
  t.same(hit && (await bytesOf(hit)), data);
  t.equal(await cache.readHeld({ ...held, etag: '"other"' }), undefined, 'another version: undefined');
  t.equal(cache.holds(held), true, 'which left the held copy alone');
  cache.purgeOwner('alice');
  t.equal(cache.holds(held), false);
  t.equal(await cache.readHeld(held), undefined, 'purged: undefined');
  await cache.close();
});

t.test('a purge during a fill: those waiting get the bytes, nothing is cached', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 });
  const src = new GatedSource(pattern(2000, 8));
  const pending = cache.read(src.object());
  t.equal(cache.purgeObject('B1', 'dir/file.bin'), 1, 'the fill in flight counts');
  src.stream.end(src.data);
  t.same(await bytesOf(await pending), src.data);
  await cache.idle();
  t.equal(cache.probe(src.object()).status, 'BYPASS', 'not cached');
  t.match(cache.stats(), { memoryEntries: 0, diskEntries: 0 });
  await cache.close();
});

t.test('purges: one object, a prefix of a bucket, everything of an owner', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 }, { memoryEntryMaxBytes: 4 * KiB });
  const objects = [
    new Source(pattern(100), '"1"', objectCacheKey('B1', 'img/a.png')),
    new Source(pattern(100), '"2"', objectCacheKey('B1', 'img/b.png')),
    new Source(pattern(10 * KiB), '"3"', objectCacheKey('B1', 'css/site.css')),
    new Source(pattern(100), '"4"', objectCacheKey('B2', 'img/a.png')),
    new Source(pattern(100), '"5"', assetCacheKey('f'.repeat(32))),
    new Source(pattern(100), '"6"', assetCacheKey('e'.repeat(32)), 'bob'),
  ];
  for (const o of objects) await bytesOf(await cache.read(o.object()));
  t.equal(cache.purgeObject('B1', 'img/zzz.png'), 0, 'nothing cached under that key');
  t.equal(cache.purgePrefix('B1', 'img/'), 2, 'two under img/ in B1');
  t.equal(cache.probe(objects[3]?.object() as CacheObject).status, 'HIT', "another bucket's img/ stays");
  t.equal(cache.purgeAsset('f'.repeat(32)), 1);
  t.equal(cache.purgeAsset('f'.repeat(32)), 0, 'already gone');
  t.equal(cache.purgeOwner('alice'), 2, "alice's css (on disk) and B2 object");
  t.equal(cache.probe(objects[5]?.object() as CacheObject).status, 'HIT', "bob's asset stays");
  t.equal(cache.purgePrefix('B1', ''), 0);
  await cache.idle();
  t.match(cache.stats(), { diskEntries: 1, memoryEntries: 1 });
  await cache.close();
});

t.test('the disk tier survives a restart: HIT without a storage read', async (t) => {
  const dir = join(tempDir(t), 'c');
  const clock = { now: 50_000 };
  const first = await openCache(dir, clock, { memoryEntryMaxBytes: 16 * KiB });
  const small = new Source(pattern(5 * KiB, 9), '"s"', objectCacheKey('B1', 'small'));
  const large = new Source(pattern(100 * KiB, 10), '"l"', objectCacheKey('B1', 'large'));
  await bytesOf(await first.read(small.object()));
  await bytesOf(await first.read(large.object()));
  await first.close();

  clock.now = 90_000;
  const second = await openCache(dir, clock, { memoryEntryMaxBytes: 16 * KiB });
  t.match(second.stats(), { diskEntries: 2, memoryEntries: 0, storageReads: 0 });
  for (const [src, what] of [[small, 'small (promoted to memory)'], [large, 'large (streamed from disk)']] as const) {
    const hit = await second.read(src.object());
    t.equal(hit.status, 'HIT', what);
    t.equal(hit.cachedAt, 50_000, `${what}: cached before the restart`);
    t.same(await bytesOf(hit), src.data, what);
  }
  const ranged = await second.read(large.object(), { range: { start: 99 * KiB, end: 100 * KiB - 1 } });
  t.same(await bytesOf(ranged), large.data.subarray(99 * KiB), 'a range from the disk file');
  t.equal(small.opens + large.opens, 2, 'no storage read after the restart');
  t.match(second.stats(), { storageReads: 0, memoryEntries: 1 });
  large.etag = '"l2"';
  t.equal((await second.read(large.object())).status, 'EXPIRED', 'a changed ETag still expires a disk entry');
  await second.close();
});

t.test('an object too big for both tiers is a BYPASS, read from storage every time', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 }, { memoryEntryMaxBytes: 1 * KiB, diskBytes: 10 * KiB });
  const src = new Source(pattern(20 * KiB, 11));
  for (let i = 0; i < 2; i++) {
    const r = await cache.read(src.object(), { range: { start: 0, end: 9 } });
    t.equal(r.status, 'BYPASS');
    t.same(await bytesOf(r), src.data.subarray(0, 10), 'only the range is read');
  }
  t.match(cache.stats(), { storageReads: 2, bypasses: 2, diskEntries: 0 });
  await cache.close();
});

t.test('compressed variants: made once, kept in memory next to the body; ranges stay identity', async (t) => {
  const cache = await openCache(join(tempDir(t), 'c'), { now: 1 });
  const text = Buffer.from('body { color: rebeccapurple; }\n'.repeat(200));
  const src = new Source(text, '"css"', objectCacheKey('B1', 'site.css'));
  t.equal(cache.canCompress(text.length), true);
  t.equal(cache.canCompress(100), false, 'too small to bother');
  t.equal(cache.canCompress(2 << 20), false, 'too big for the memory tier');
  const gz = await cache.read(src.object(), { coding: 'gzip' });
  t.equal(gz.coding, 'gzip');
  t.equal(gz.status, 'MISS');
  t.same(gunzipSync(await bytesOf(gz)), text);
  t.equal(cache.stats().memoryEntries, 2, 'identity + gzip');
  const again = await cache.read(src.object(), { coding: 'gzip' });
  t.equal(again.status, 'HIT');
  t.same(await bytesOf(again), await bytesOf(gz), 'the same variant');
  const part = await cache.read(src.object(), { range: { start: 0, end: 3 }, coding: 'gzip' });
  t.equal(part.coding, undefined, 'a range is never compressed');
  t.equal((await bytesOf(part)).toString(), 'body');
  t.equal(src.opens, 1);
  await cache.close();
});
