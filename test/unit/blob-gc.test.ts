// The blob collector against writers in flight, on a real context and disk: a blob whose commit is in
// progress is never taken however old it looks (an upstream blob completed from a multipart upload is
// listed with its upload's start time), nor one whose row lands after the pass read its snapshot; a
// file that is not a blob of ours is left alone and stops nothing. And the scrub stops mid-blob.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createContext, type AppContext } from '../../src/context.js';
import type { ObjectRecord } from '../../src/db/repos/objects.js';
import type { StagedBlob } from '../../src/storage/backend.js';
import { collectBlobs, type BlobGcContext } from '../../src/storage/blob-gc.js';
import { commitStaged } from '../../src/storage/commit-staged.js';
import { scrubBlobs } from '../../src/storage/scrub.js';
import { tempDir, testConfig } from '../helpers/temp-data.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];
const DAY_MS = 24 * 3600 * 1000;

async function context(t: TapTest, flags: Record<string, string> = {}): Promise<AppContext> {
  // No background passes: the test runs each pass itself.
  const ctx = await createContext(testConfig({ dataDir: tempDir(t), logLevel: 'silent', 'integrity.scrubBytesPerSecond': '0', ...flags }));
  t.teardown(() => ctx.close());
  // The server's own pass at start-up is over before the test makes anything.
  await ctx.blobGc?.runOnce();
  return ctx;
}

function gcOf(ctx: AppContext, storage = ctx.storage): BlobGcContext {
  return { storage, blobRefs: ctx.repos.blobRefs, leases: ctx.leases, clock: ctx.clock, log: ctx.log, graceMs: 3600 * 1000 };
}

function blobFile(ctx: AppContext, blobId: string): string {
  return join(ctx.config.dataDir, 'storage', 'blobs', blobId.slice(-2), blobId);
}

/** Makes a committed blob look as old as an upstream multipart blob's LastModified can be. */
function age(ctx: AppContext, blobId: string): void {
  const then = new Date(Date.now() - DAY_MS);
  utimesSync(blobFile(ctx, blobId), then, then);
}

function objectRecord(bucketId: string, key: string, staged: StagedBlob): ObjectRecord {
  return {
    bucketId, key, blobId: staged.blobId, blobCrc32c: staged.crc32c, size: staged.size, etag: '"e"', sha256: '',
    checksumAlgorithm: null, checksumValue: null, checksumType: null, contentType: null, contentEncoding: null,
    contentDisposition: null, contentLanguage: null, cacheControl: null, expires: null, userMetadata: {}, lastModified: 0,
  };
}

async function stage(ctx: AppContext, size = 100_000): Promise<StagedBlob> {
  return ctx.storage.stage(Readable.from([randomBytes(size)]));
}

t.test('a blob whose commit is in flight is never collected, however old it looks', async (t) => {
  const ctx = await context(t);
  const bucket = await ctx.repos.buckets.insert({ name: 'b', ownerId: (await ctx.repos.users.create('u')).id, region: 'us-east-1' });
  const staged = await stage(ctx);
  await commitStaged(ctx, staged, async () => {
    // Between the blob's commit and its row: the collector runs now.
    age(ctx, staged.blobId);
    const run = await collectBlobs(gcOf(ctx));
    t.equal(run.collected, 0, 'leased by its commit: skipped');
    await ctx.objects.put(objectRecord(bucket.id, 'k', staged));
  });
  t.notOk(ctx.leases.isLeased(staged.blobId), 'the lease ends with the commit');
  t.equal((await collectBlobs(gcOf(ctx))).collected, 0, 'referenced: kept');
  t.ok(existsSync(blobFile(ctx, staged.blobId)));
});

t.test('leftovers from before the process started go at once; a younger orphan waits out the grace; a commit in flight is kept', async (t) => {
  const ctx = await context(t);
  const bucket = await ctx.repos.buckets.insert({ name: 'b', ownerId: (await ctx.repos.users.create('u')).id, region: 'us-east-1' });
  // A crash's leftover: renamed into place, never committed, ten seconds before this process started.
  const leftover = await stage(ctx);
  await leftover.commit();
  const started = Date.now() - 1000;
  const before = new Date(started - 10_000);
  utimesSync(blobFile(ctx, leftover.blobId), before, before);
  // An orphan of this process (written after its start): within the grace, it may be a commit of another worker.
  const young = await stage(ctx);
  await young.commit();
  const staged = await stage(ctx);
  await commitStaged(ctx, staged, async () => {
    utimesSync(blobFile(ctx, staged.blobId), before, before); // looks old, but its commit holds a lease
    const run = await collectBlobs(gcOf(ctx), () => false, started);
    t.equal(run.collected, 1, 'one blob taken');
    await ctx.objects.put(objectRecord(bucket.id, 'k', staged));
  });
  t.notOk(existsSync(blobFile(ctx, leftover.blobId)), 'the leftover from before the start is gone, though younger than the grace');
  t.ok(existsSync(blobFile(ctx, young.blobId)), 'the orphan written since the start waits out the grace');
  t.ok(existsSync(blobFile(ctx, staged.blobId)), 'the blob whose commit was in flight is kept');
  t.equal((await collectBlobs(gcOf(ctx))).collected, 0, 'a later pass (no leftoversBefore) goes by the grace alone');
  t.ok(existsSync(blobFile(ctx, young.blobId)));
});

t.test('a row written after the pass read its snapshot keeps its blob; an orphan in the same pass goes', async (t) => {
  const ctx = await context(t);
  const bucket = await ctx.repos.buckets.insert({ name: 'b', ownerId: (await ctx.repos.users.create('u')).id, region: 'us-east-1' });
  const late = await stage(ctx);
  await late.commit();
  age(ctx, late.blobId);
  const orphan = await stage(ctx);
  await orphan.commit();
  age(ctx, orphan.blobId);
  // The real disk listing, after a commit that lands once the pass has read its references.
  const storage = Object.create(ctx.storage) as typeof ctx.storage;
  storage.list = async function* () {
    await ctx.objects.put(objectRecord(bucket.id, 'late', late));
    yield* ctx.storage.list();
  };
  const run = await collectBlobs(gcOf(ctx, storage));
  t.equal(run.collected, 1, 'exactly one collected');
  t.ok(existsSync(blobFile(ctx, late.blobId)), 'the blob whose row came late stays');
  t.notOk(existsSync(blobFile(ctx, orphan.blobId)), 'the orphan is gone');
});

t.test('a file that is not a blob of ours is left alone and stops nothing', async (t) => {
  const ctx = await context(t);
  const orphan = await stage(ctx);
  await orphan.commit();
  age(ctx, orphan.blobId);
  const dir = join(ctx.config.dataDir, 'storage', 'blobs', 'zz');
  mkdirSync(dir, { recursive: true });
  const stray = join(dir, 'NOTES.txt');
  writeFileSync(stray, 'an operator left this here');
  utimesSync(stray, new Date(Date.now() - DAY_MS), new Date(Date.now() - DAY_MS));
  const run = await collectBlobs(gcOf(ctx));
  t.match(run, { collected: 1, failed: 0 });
  t.ok(existsSync(stray), 'the stray file stays');
  t.notOk(existsSync(blobFile(ctx, orphan.blobId)), 'the orphan went');
});

t.test('a scrub pass stops in the middle of a blob when asked', async (t) => {
  const ctx = await context(t);
  const bucket = await ctx.repos.buckets.insert({ name: 'b', ownerId: (await ctx.repos.users.create('u')).id, region: 'us-east-1' });
  const size = 8 * 1024 * 1024;
  const staged = await stage(ctx, size);
  await commitStaged(ctx, staged, () => ctx.objects.put(objectRecord(bucket.id, 'big', staged)));
  const stopping = new AbortController();
  // At 1 MiB/s the pass would need 8 s; it is stopped after its first reads.
  setTimeout(() => stopping.abort(), 200);
  const run = await scrubBlobs(
    { storage: ctx.storage, integrity: ctx.repos.integrity, blobRefs: ctx.repos.blobRefs, objects: ctx.objects, corruption: ctx.corruption, log: ctx.log },
    { bytesPerSecond: 1024 * 1024, signal: stopping.signal },
  );
  t.ok(run.bytes > 0 && run.bytes < size, `stopped inside the blob (${run.bytes} of ${size} bytes read)`);
  t.match(run, { checked: 0, corrupt: [], missing: [] }, 'and judged nothing');
});
