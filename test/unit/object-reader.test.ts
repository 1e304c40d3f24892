// Reading objects made of parts: ranges across parts, part numbers, leases that keep a version's
// blobs alive while it streams, and the sweep of abandoned uploads. Real context, real disk.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { createContext, type AppContext } from '../../src/context.js';
import { newUploadId } from '../../src/db/repos/multipart.js';
import type { ObjectRecord } from '../../src/db/repos/objects.js';
import { listBlobFiles } from '../../src/storage/disk.js';
import { openObjectBody, parsePartNumber, partRange, segmentsOf } from '../../src/storage/object-reader.js';
import { releaseBlobs } from '../../src/buckets/object-removal.js';
import { sweepMultipart } from '../../src/jobs/multipart-sweep.js';
import { tempDir, testConfig } from '../helpers/temp-data.js';
import { isDirectBody } from '../../src/storage/file-body.js';

async function collect(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

async function context(t: TapTest, clock?: () => Date): Promise<AppContext> {
  const dir = tempDir(t);
  const ctx = await createContext(testConfig({ dataDir: dir, logLevel: 'silent' }), clock ? { clock } : {});
  t.teardown(() => ctx.close());
  return ctx;
}

async function blob(ctx: AppContext, data: Buffer): Promise<string> {
  const staged = await ctx.storage.stage(Readable.from([data]));
  await staged.commit();
  return staged.blobId;
}

function record(parts: { blobId: string; size: number }[]): ObjectRecord {
  return {
    bucketId: 'b', key: 'k', blobId: '', size: parts.reduce((s, p) => s + p.size, 0), etag: '"e-3"', sha256: '',
    checksumAlgorithm: null, checksumValue: null, checksumType: null, contentType: null, contentEncoding: null,
    contentDisposition: null, contentLanguage: null, cacheControl: null, expires: null, userMetadata: {}, lastModified: 0,
    parts: parts.map((p) => ({ ...p, etag: '"x"' })),
  };
}

t.test('segments of a range over parts', async (t) => {
  const rec = record([{ blobId: 'a', size: 10 }, { blobId: 'z', size: 0 }, { blobId: 'b', size: 10 }, { blobId: 'c', size: 5 }]);
  t.same(segmentsOf(rec), [
    { blobId: 'a', range: { start: 0, end: 9 }, part: 0 },
    { blobId: 'b', range: { start: 0, end: 9 }, part: 2 },
    { blobId: 'c', range: { start: 0, end: 4 }, part: 3 },
  ]);
  t.same(segmentsOf(rec, { start: 5, end: 21 }), [
    { blobId: 'a', range: { start: 5, end: 9 }, part: 0 },
    { blobId: 'b', range: { start: 0, end: 9 }, part: 2 },
    { blobId: 'c', range: { start: 0, end: 1 }, part: 3 },
  ]);
  t.same(segmentsOf(rec, { start: 10, end: 19 }), [{ blobId: 'b', range: { start: 0, end: 9 }, part: 2 }], 'exactly one part');
  t.same(segmentsOf({ ...rec, parts: undefined, blobId: 'one' }, { start: 3, end: 4 }), [{ blobId: 'one', range: { start: 3, end: 4 } }]);
  t.same(segmentsOf({ ...rec, parts: undefined, blobId: 'one', size: 0 }), [], 'empty object');
});

t.test('part numbers', async (t) => {
  const rec = record([{ blobId: 'a', size: 10 }, { blobId: 'b', size: 10 }, { blobId: 'c', size: 5 }]);
  t.same(partRange(rec, 1), { range: { start: 0, end: 9 }, count: 3 });
  t.same(partRange(rec, 3), { range: { start: 20, end: 24 }, count: 3 });
  t.throws(() => partRange(rec, 4), { code: 'InvalidPartNumber', status: 416 });
  t.same(partRange({ size: 7 }, 1), { range: { start: 0, end: 6 }, count: 1 }, 'a plain object is its own part 1');
  t.throws(() => partRange({ size: 7 }, 2), { code: 'InvalidPartNumber' });
  t.equal(parsePartNumber('10000'), 10000);
  for (const bad of ['0', '10001', '-1', 'x', '', '1.5', '000000001']) t.throws(() => parsePartNumber(bad), { code: 'InvalidArgument' }, bad);
});

t.test('streams parts in order, any range, and holds their blobs while it streams', async (t) => {
  const ctx = await context(t);
  const data = [randomBytes(3 << 20), randomBytes(1 << 20), randomBytes(777)];
  const whole = Buffer.concat(data);
  const ids = await Promise.all(data.map((d) => blob(ctx, d)));
  const rec = record(ids.map((blobId, i) => ({ blobId, size: (data[i] as Buffer).length })));
  t.ok((await collect(await openObjectBody(ctx, rec))).equals(whole), 'whole object');
  for (const [start, end] of [[0, 0], [5, (3 << 20) + 10], [(3 << 20) - 1, (3 << 20)], [whole.length - 700, whole.length - 1], [100, whole.length - 1]] as const) {
    const got = await collect(await openObjectBody(ctx, rec, { range: { start, end } }));
    t.ok(got.equals(whole.subarray(start, end + 1)), `range ${start}-${end}`);
  }

  // An overwrite releases the blobs while a reader is mid-stream: the reader still gets every byte.
  const reading = await openObjectBody(ctx, rec);
  const first = await new Promise<Buffer>((resolve) => reading.once('data', resolve));
  reading.pause();
  await releaseBlobs(ctx, ids);
  t.equal(ctx.leases.deferred, 3, 'removal deferred');
  const rest = await collect(reading);
  t.ok(Buffer.concat([first, rest]).equals(whole), 'the reader saw one whole version');
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(ctx.leases.deferred, 0);
  const left = await listBlobFiles(join(ctx.config.dataDir, 'storage'));
  t.same(left.filter((f) => ids.includes(f)), [], 'the blobs went once the reader finished');
});

t.test('an abandoned stream releases its lease', async (t) => {
  const ctx = await context(t);
  const id = await blob(ctx, randomBytes(2 << 20));
  const id2 = await blob(ctx, randomBytes(10));
  const rec = record([{ blobId: id, size: 2 << 20 }, { blobId: id2, size: 10 }]);
  const s = await openObjectBody(ctx, rec);
  t.ok(ctx.leases.isLeased(id));
  s.destroy();
  await new Promise((resolve) => s.once('close', resolve));
  t.notOk(ctx.leases.isLeased(id), 'released without being read');
  t.notOk(ctx.leases.isLeased(id2));
});

t.test('the sweep aborts uploads older than multipartMaxAgeSeconds and removes their parts', async (t) => {
  let now = Date.UTC(2030, 0, 1);
  const ctx = await context(t, () => new Date(now));
  const user = await ctx.repos.users.create('sweeper');
  const bucket = await ctx.repos.buckets.insert({ name: 'sweep', ownerId: user.id, region: 'us-east-1' });
  const make = async (initiated: number): Promise<string> => {
    const uploadId = newUploadId(initiated);
    await ctx.multipart.create({
      uploadId, bucketId: bucket.id, key: 'k', ownerId: user.id, initiated, checksumAlgorithm: null, checksumType: null,
      contentType: null, contentEncoding: null, contentDisposition: null, contentLanguage: null, cacheControl: null,
      expires: null, userMetadata: {},
    });
    return uploadId;
  };
  const old = await make(now - 604_800_000 - 1);
  const fresh = await make(now - 1000);
  const partBlob = await blob(ctx, randomBytes(100));
  await ctx.multipart.putPart({ uploadId: old, partNumber: 1, blobId: partBlob, size: 100, etag: '"e"', crc32c: null, checksumAlgorithm: null, checksumValue: null, lastModified: now });
  const result = await sweepMultipart(ctx);
  t.match(result, { aborted: 1, blobsRemoved: 1 });
  t.equal(await ctx.multipart.get(old), undefined);
  t.ok(await ctx.multipart.get(fresh), 'a younger upload stays');
  t.notOk((await listBlobFiles(join(ctx.config.dataDir, 'storage'))).includes(partBlob), 'its part blob is gone');
  now += 604_800_000;
  t.match(await sweepMultipart(ctx), { aborted: 1 });
});

t.test('a single-blob body sent straight to a destination that fails releases its lease', async (t) => {
  const ctx = await context(t);
  const size = 6 << 20;
  const id = await blob(ctx, randomBytes(size));
  const { parts: _none, ...plain } = record([]);
  const rec: ObjectRecord = { ...plain, blobId: id, size };
  const s = await openObjectBody(ctx, rec);
  t.ok(isDirectBody(s), 'a stored file sends itself');
  if (!isDirectBody(s)) return;
  let seen = 0;
  const dest = new Writable({ write: (c: Buffer, _e, cb) => ((seen += c.length) > 2 << 20 ? cb(new Error('reset')) : cb()) });
  dest.on('error', () => undefined);
  await t.rejects(s.sendTo(dest));
  if (!s.closed) await new Promise((resolve) => s.once('close', resolve));
  t.notOk(ctx.leases.isLeased(id), 'released after the failed send');
});
