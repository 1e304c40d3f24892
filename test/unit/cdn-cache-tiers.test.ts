// The edge cache's tiers on their own: the memory tier's byte bound and variants, the disk tier's
// files (atomic publish, bound, eviction deleting files, rebuild after a restart, corrupt and temp files
// dropped), and the compression helpers.
import t from 'tap';
import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { compress, isCompressibleType, negotiateCoding } from '../../src/cdn/cache/compression.js';
import { DiskTier, encodeHeader, readEntry, type EntryIdentity } from '../../src/cdn/cache/disk-tier.js';
import { ENTRY_OVERHEAD, MemoryTier } from '../../src/cdn/cache/memory-tier.js';
import { tempDir } from '../helpers/temp-data.js';

const silent = { warn: () => undefined };

function entry(body: Buffer, etag = '"e1"', owner = 'u1', cachedAt = 1000) {
  return { etag, owner, body, cachedAt };
}

t.test('memory tier: bounded by bytes, least recently used evicted first', async (t) => {
  const m = new MemoryTier(4 * (1000 + ENTRY_OVERHEAD), 2000);
  for (const k of ['a', 'b', 'c', 'd']) m.set(k, 'identity', entry(Buffer.alloc(1000, k)));
  t.equal(m.stats().entries, 4);
  t.ok(m.get('a'), 'a used: now the most recent');
  m.set('e', 'identity', entry(Buffer.alloc(1000, 'e')));
  t.equal(m.peek('b'), undefined, 'b (least recently used) evicted');
  t.ok(m.peek('a') && m.peek('c') && m.peek('d') && m.peek('e'));
  t.ok(m.stats().bytes <= 4 * (1000 + ENTRY_OVERHEAD), 'bytes within the bound');
  t.equal(m.accepts(2000), true);
  t.equal(m.accepts(2001), false, 'over the per-entry cap');
  t.equal(new MemoryTier(0, 2000).accepts(1), false, 'memoryBytes 0: off');
  t.equal(new MemoryTier(100, 2000).accepts(1000), false, 'bigger than the whole tier');
});

t.test('memory tier: compressed variants live and die with their object', async (t) => {
  const m = new MemoryTier(1 << 20, 1 << 16);
  m.set('k', 'identity', entry(Buffer.from('body')));
  m.set('k', 'gzip', entry(Buffer.from('gz')));
  m.set('k', 'br', entry(Buffer.from('br')));
  t.equal(m.stats().entries, 3, 'variants are entries of their own');
  t.same([...m.objects()].map(([k]) => k), ['k'], 'objects() lists identity entries only');
  m.set('k', 'identity', entry(Buffer.from('new body'), '"e2"'));
  t.equal(m.peek('k', 'gzip'), undefined, 'a new identity body drops the old variants');
  m.set('k', 'gzip', entry(Buffer.from('gz2'), '"e2"'));
  t.equal(m.delete('k'), true);
  t.equal(m.peek('k', 'gzip'), undefined, 'delete drops the variants');
  t.equal(m.stats().entries, 0);
  t.equal(m.delete('k'), false, 'nothing left');
});

/** The pid of a process that has exited. */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '0']);
  if (pid === undefined) throw new Error('no child process');
  return pid;
}

function id(key: string, size: number, cachedAt = 1000, etag = '"e"'): EntryIdentity {
  return { key, etag, owner: 'u1', size, cachedAt };
}

async function put(tier: DiskTier, ident: EntryIdentity, body: Buffer): Promise<void> {
  const slot = tier.reserve(ident);
  if (!slot) throw new Error(`no room for ${ident.key}`);
  await slot.write(body, 0);
  await slot.publish(() => true);
  slot.release();
}

/** Every file under dir (recursively) with its size, but the shared index (index.db and its WAL). */
function files(dir: string): { path: string; size: number }[] {
  const out: { path: string; size: number }[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('index.db')) continue;
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...files(p));
    else out.push({ path: p, size: st.size });
  }
  return out;
}

t.test('disk tier: a published body is a whole file with its header, readable by key', async (t) => {
  const dir = join(tempDir(t), 'cdn-cache');
  const tier = await DiskTier.open({ dir, maxBytes: 1 << 20, log: silent });
  const body = Buffer.from('hello disk tier');
  const slot = tier.reserve(id('o/b1/a.txt', body.length));
  t.ok(slot);
  await slot?.write(body.subarray(0, 5), 0);
  await slot?.write(body.subarray(5), 5);
  t.same(await slot?.read(0, body.length), body, 'readable back while being written');
  t.equal(tier.get('o/b1/a.txt'), undefined, 'not visible before publish');
  t.equal(files(dir).filter((f) => !f.path.startsWith(join(dir, 'tmp'))).length, 0, 'only a temp file so far');
  await slot?.publish(() => true);
  slot?.release();
  const e = tier.get('o/b1/a.txt');
  t.match(e, { key: 'o/b1/a.txt', etag: '"e"', owner: 'u1', size: body.length, cachedAt: 1000 });
  t.match(e?.file.split('/').slice(-2).join('/'), /^[0-9a-f]{2}\/[0-9a-f]{32}$/, 'a random name: nothing of the key');
  t.same(await readEntry(e?.file ?? ''), e, 'the header names the entry');
  t.equal(tier.stats().entries, 1);
  t.equal(tier.stats().bytes, encodeHeader(id('o/b1/a.txt', body.length)).length + body.length);

  const late = tier.reserve(id('o/b1/late.txt', 4));
  await late?.write(Buffer.from('late'), 0);
  await late?.publish(() => false);
  late?.release();
  await tier.idle();
  t.equal(tier.get('o/b1/late.txt'), undefined, 'a body no longer wanted when published is not indexed');
  t.equal(files(dir).filter((f) => !f.path.startsWith(join(dir, 'tmp'))).length, 1, 'and its file is gone');
});

t.test('disk tier: eviction keeps the files under the bound and deletes what it evicts', async (t) => {
  const dir = join(tempDir(t), 'cdn-cache');
  const size = 10_000;
  const perEntry = encodeHeader(id('o/b/k0', size)).length + size;
  const tier = await DiskTier.open({ dir, maxBytes: 3 * perEntry + 10, log: silent });
  for (let i = 0; i < 6; i++) await put(tier, id(`o/b/k${i}`, size, 1000 + i), Buffer.alloc(size, i));
  await tier.idle();
  t.equal(tier.stats().entries, 3);
  t.same([...tier.objects()].map(([k]) => k).sort(), ['o/b/k3', 'o/b/k4', 'o/b/k5'], 'the three most recent stay');
  const onDisk = files(dir);
  t.equal(onDisk.length, 3, 'evicted files are deleted');
  t.ok(onDisk.reduce((n, f) => n + f.size, 0) <= 3 * perEntry + 10, 'bytes on disk within the bound');
  t.equal(tier.reserve(id('o/b/huge', 4 * perEntry)), undefined, 'a body bigger than the tier gets no slot');
  const a = tier.reserve(id('o/b/x', size));
  const b = tier.reserve(id('o/b/y', size));
  const c = tier.reserve(id('o/b/z', size));
  t.ok(a && b && c, 'in-flight fills evict entries to make room');
  t.equal(tier.reserve(id('o/b/w', size)), undefined, 'fills in flight hold the room: no fourth');
  await a?.discard();
  a?.release();
  t.ok(tier.reserve(id('o/b/w', size)), 'a discarded fill gives its room back');
});

t.test('disk tier: replacing or deleting a key deletes its old file', async (t) => {
  const dir = join(tempDir(t), 'cdn-cache');
  const tier = await DiskTier.open({ dir, maxBytes: 1 << 20, log: silent });
  await put(tier, id('a/x', 3, 1000, '"v1"'), Buffer.from('one'));
  const first = tier.get('a/x')?.file;
  await put(tier, id('a/x', 3, 2000, '"v2"'), Buffer.from('two'));
  await tier.idle();
  t.equal(tier.get('a/x')?.etag, '"v2"');
  t.equal(files(dir).length, 1, 'one file for the key');
  t.not(files(dir)[0]?.path, first);
  t.equal(tier.delete('a/x'), true);
  await tier.idle();
  t.equal(files(dir).length, 0);
});

t.test('disk tier: a restart rebuilds the index; temp, foreign and corrupt files go', async (t) => {
  const dir = join(tempDir(t), 'cdn-cache');
  // The first run stands for a process that crashed: the index names a process no longer running.
  const first = await DiskTier.open({ dir, maxBytes: 1 << 20, log: silent, pid: deadPid() });
  await put(first, id('o/b/old', 3, 1000), Buffer.from('old'));
  await put(first, id('o/b/new', 3, 2000), Buffer.from('new'));
  await put(first, id('o/b/torn', 4, 3000), Buffer.from('torn'));
  await put(first, id('o/b/bad', 3, 4000), Buffer.from('bad'));
  const torn = first.get('o/b/torn')?.file ?? '';
  truncateSync(torn, statSync(torn).size - 1);
  writeFileSync(first.get('o/b/bad')?.file ?? '', 'not a cache file at all');
  const left = first.reserve(id('o/b/unfinished', 100));
  await left?.write(Buffer.alloc(10), 0);
  mkdirSync(join(dir, 'zz'));
  writeFileSync(join(dir, 'ab-not-a-shard'), 'x');
  const freeShard = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0')).find((n) => !readdirSync(dir).includes(n)) ?? '';
  writeFileSync(join(dir, freeShard), 'a file where a shard directory belongs');

  const second = await DiskTier.open({ dir, maxBytes: 1 << 20, log: silent });
  // Alone on the directory: every file is checked, in the background.
  await second.idle();
  t.same([...second.objects()].map(([k]) => k).sort(), ['o/b/new', 'o/b/old'], 'whole entries come back');
  t.same(await readEntry(second.get('o/b/new')?.file ?? ''), second.get('o/b/new'));
  t.equal(files(dir).length, 2, 'the torn, corrupt, temp and foreign files are gone');
  const names = readdirSync(dir);
  t.ok(names.every((n) => n === 'tmp' || /^index\.db(-wal|-shm)?$/.test(n) || (/^[0-9a-f]{2}$/.test(n) && statSync(join(dir, n)).isDirectory())), 'only shard directories (and the index) left');
  t.notOk(names.includes('zz') || names.includes('ab-not-a-shard') || names.includes(freeShard), 'foreign entries removed');
  const smaller = await DiskTier.open({ dir, maxBytes: encodeHeader(id('o/b/new', 3)).length + 3, log: silent });
  await smaller.idle();
  t.same([...smaller.objects()].map(([k]) => k), ['o/b/new'], 'a smaller bound keeps the most recent');
  t.equal(files(dir).length, 1);
  await DiskTier.open({ dir, maxBytes: 0, log: silent });
  t.same(files(dir), [], 'a disabled tier leaves nothing behind');
});

t.test('compression: which types, which coding', async (t) => {
  for (const type of ['text/plain', 'text/css; charset=utf-8', 'application/json', 'application/ld+json', 'image/svg+xml', 'application/javascript', 'application/rss+xml']) {
    t.equal(isCompressibleType(type), true, type);
  }
  for (const type of ['image/png', 'application/octet-stream', 'video/mp4', 'application/zip', 'font/woff2']) {
    t.equal(isCompressibleType(type), false, type);
  }
  const cases: [string | undefined, string | undefined][] = [
    [undefined, undefined],
    ['', undefined],
    ['identity', undefined],
    ['gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate, br', 'br'],
    ['br;q=0, gzip', 'gzip'],
    ['br;q=0.5, gzip;q=0.8', 'gzip'],
    ['gzip;q=0', undefined],
    ['*', 'br'],
    ['*;q=0, gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['deflate', undefined],
    ['br;q=abc', 'br'],
  ];
  for (const [header, want] of cases) t.equal(negotiateCoding(header), want, `Accept-Encoding: ${String(header)}`);
  const text = Buffer.from('the quick brown fox jumps over the lazy dog\n'.repeat(100));
  const gz = await compress(text, 'gzip');
  const br = await compress(text, 'br');
  t.ok(gz.length < text.length / 4 && br.length < text.length / 4, 'much smaller');
  t.same(gunzipSync(gz), text, 'gzip round trip');
  t.same(brotliDecompressSync(br), text, 'br round trip');
});
