// The lifecycle job's walks (src/lifecycle/run.ts, job.ts) over a real context on a real disk, with a
// clock the test moves: what is due goes and its bytes with it, what is not stays; a versioned bucket
// gets delete markers, loses noncurrent versions and lone markers; incomplete uploads are aborted; a
// walk goes in batches, records where it stands, and a new job (a restarted server) resumes it there;
// a bucket is walked again only an interval later; removals check again in their transaction.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createContext, type AppContext } from '../../src/context.js';
import type { Bucket } from '../../src/db/repos/index.js';
import { newUploadId } from '../../src/db/repos/multipart.js';
import { listBlobFiles } from '../../src/storage/disk.js';
import { LifecycleJob } from '../../src/lifecycle/job.js';
import { runLifecycle } from '../../src/lifecycle/run.js';
import { parseLifecycleConfiguration } from '../../src/s3/lifecycle.js';
import { tempDir, testConfig } from '../helpers/temp-data.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];
const DAY = 86_400_000;
const T0 = Date.parse('2030-03-01T10:00:00Z');

interface World {
  ctx: AppContext;
  bucket: Bucket;
  setNow(ms: number): void;
  put(key: string, tagging?: [string, string][]): Promise<string>;
  keys(): Promise<string[]>;
  blobs(): Promise<string[]>;
}

async function world(t: TapTest, rulesXml: string, versioning?: 'Enabled'): Promise<World> {
  let now = T0;
  const dataDir = tempDir(t);
  // Objects on disk (no inline bytes), and no background job: the test runs the walks.
  const ctx = await createContext(testConfig({ dataDir, logLevel: 'silent', inlineObjectMaxBytes: '0', lifecycleIntervalSeconds: '0', 'integrity.scrubBytesPerSecond': '0' }), {
    clock: () => new Date(now),
  });
  t.teardown(() => ctx.close());
  const user = await ctx.repos.users.create('owner');
  const bucket = await ctx.repos.buckets.insert({ name: 'b', ownerId: user.id, region: 'us-east-1' });
  if (versioning) await ctx.repos.buckets.setVersioning(bucket.id, versioning);
  await ctx.repos.bucketLifecycle.put(bucket.id, parseLifecycleConfiguration(Buffer.from(`<LifecycleConfiguration>${rulesXml}</LifecycleConfiguration>`), () => 'id'));
  return {
    ctx,
    bucket,
    setNow: (ms) => (now = ms),
    async put(key, tagging) {
      const data = randomBytes(64);
      const staged = await ctx.storage.stage(Readable.from([data]));
      await staged.commit();
      await ctx.repos.objects.put({
        bucketId: bucket.id, key, blobId: staged.blobId, size: data.length, etag: '"e"', sha256: '', checksumAlgorithm: null, checksumValue: null,
        checksumType: null, contentType: null, contentEncoding: null, contentDisposition: null, contentLanguage: null, cacheControl: null,
        expires: null, userMetadata: {}, lastModified: Math.floor(now / 1000) * 1000, ...(tagging ? { tagging } : {}),
      });
      return staged.blobId;
    },
    async keys() {
      return (await ctx.repos.objects.list(bucket.id, { prefix: '', delimiter: '', after: '', maxKeys: 1000 })).contents.map((c) => c.key);
    },
    async blobs() {
      // Removals are under way once the walk returns; they finish within a few ticks.
      await ctx.durability.sync();
      await new Promise((resolve) => setTimeout(resolve, 50));
      return listBlobFiles(join(dataDir, 'storage'));
    },
  };
}

async function versionsOf(w: World, key: string): Promise<{ id: string | null; marker: boolean; latest: boolean }[]> {
  const page = await w.ctx.repos.objects.versions.list(w.bucket.id, { prefix: key, delimiter: '', keyMarker: '', maxKeys: 100 });
  return page.entries.filter((e) => e.key === key).map((e) => ({ id: e.versionId, marker: e.deleteMarker, latest: e.isLatest }));
}

t.test('Expiration by prefix and by tag: what is due goes with its bytes, the rest stays', async (t) => {
  const w = await world(t, `
    <Rule><ID>logs</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>
    <Rule><ID>temp</ID><Filter><Tag><Key>temp</Key><Value>yes</Value></Tag></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`);
  const logBlobs = [await w.put('logs/a'), await w.put('logs/b'), await w.put('logs/c')];
  const tagged = await w.put('keep/tmp', [['temp', 'yes']]);
  await w.put('keep/a');
  w.setNow(T0 + 2 * DAY);
  t.same(await runLifecycle(w.ctx, { now: T0 + 2 * DAY, batch: 2 }), [{ bucket: 'b', expired: 1, noncurrentRemoved: 0, deleteMarkersRemoved: 0, uploadsAborted: 0 }],
    'day 2: only the tagged one (1 day, rounded to midnight) is due');
  t.same(await w.keys(), ['keep/a', 'logs/a', 'logs/b', 'logs/c']);
  t.notOk((await w.blobs()).includes(tagged), 'its bytes are gone');
  t.same(await runLifecycle(w.ctx, { now: T0 + 3 * DAY, batch: 2 }), [{ bucket: 'b', expired: 3, noncurrentRemoved: 0, deleteMarkersRemoved: 0, uploadsAborted: 0 }],
    'day 3: logs/, walked two keys at a time');
  t.same(await w.keys(), ['keep/a']);
  const left = await w.blobs();
  t.ok(logBlobs.every((b) => !left.includes(b)), "the expired objects' bytes are gone");
  t.equal(left.length, 1, 'keep/a keeps its bytes');
});

t.test('a walk records where it stands after each batch; a new job resumes it there, and waits an interval for the next', async (t) => {
  const w = await world(t, '<Rule><ID>all</ID><Filter></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>');
  for (const k of ['a', 'b', 'c', 'd', 'e', 'f']) await w.put(k);
  w.setNow(T0 + 5 * DAY);
  const deps = { ...w.ctx, log: { info: () => undefined, warn: () => undefined } };
  // Stopped after its second batch, as a shutdown stops it: asked before the bucket, then after each batch.
  let asked = 0;
  await new LifecycleJob(deps, { intervalMs: DAY, batch: 2 }).round(() => ++asked >= 3);
  t.same(await w.keys(), ['e', 'f'], 'two batches of two keys');
  t.match(await w.ctx.repos.bucketLifecycle.progress(w.bucket.id), { phase: 'versions', keyMarker: 'd', startedAt: T0 + 5 * DAY }, 'recorded: after d');
  await w.put('a');
  w.setNow(T0 + 5 * DAY + 1000);
  await new LifecycleJob(deps, { intervalMs: DAY, batch: 2 }).round();
  t.same(await w.keys(), ['a'], 'resumed after d: e and f went; a (written since) is before the resume point, and not due anyway');
  t.match(await w.ctx.repos.bucketLifecycle.progress(w.bucket.id), { phase: 'done', startedAt: T0 + 5 * DAY }, 'done, when it began kept');
  w.setNow(T0 + 7 * DAY);
  await new LifecycleJob(deps, { intervalMs: 3 * DAY, batch: 2 }).round();
  t.same(await w.keys(), ['a'], 'a due, but the bucket was walked less than an interval ago');
  await new LifecycleJob(deps, { intervalMs: DAY, batch: 2 }).round();
  t.same(await w.keys(), [], 'an interval on: walked again');
  t.match(await w.ctx.repos.bucketLifecycle.progress(w.bucket.id), { phase: 'done', startedAt: T0 + 7 * DAY });
  await w.ctx.repos.bucketLifecycle.put(w.bucket.id, []);
  t.equal(await w.ctx.repos.bucketLifecycle.progress(w.bucket.id), undefined, 'new rules: the walk starts again at the next round');
});

t.test('a versioned bucket: delete markers, noncurrent versions, lone delete markers', async (t) => {
  const w = await world(t, `
    <Rule><ID>expire</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>10</Days></Expiration></Rule>
    <Rule><ID>history</ID><Filter></Filter><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>
    <Rule><ID>markers</ID><Filter></Filter><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`, 'Enabled');
  const v1 = await w.put('doc');
  w.setNow(T0 + DAY);
  const v2 = await w.put('doc');
  w.setNow(T0 + 2 * DAY);
  await w.put('doc');
  await w.put('logs/x');
  w.setNow(T0 + 4 * DAY);
  t.same(await runLifecycle(w.ctx, { now: T0 + 4 * DAY }), [{ bucket: 'b', expired: 0, noncurrentRemoved: 1, deleteMarkersRemoved: 0, uploadsAborted: 0 }],
    'the oldest noncurrent version of doc goes; the newest noncurrent one is kept');
  const doc = await versionsOf(w, 'doc');
  t.equal(doc.length, 2);
  const blobs = await w.blobs();
  t.notOk(blobs.includes(v1), "v1's bytes are gone");
  t.ok(blobs.includes(v2), "v2's are not");
  w.setNow(T0 + 20 * DAY);
  t.same(await runLifecycle(w.ctx, { now: T0 + 20 * DAY }), [{ bucket: 'b', expired: 1, noncurrentRemoved: 0, deleteMarkersRemoved: 0, uploadsAborted: 0 }],
    'logs/x expired: a delete marker hides it');
  t.match(await versionsOf(w, 'logs/x'), [{ marker: true, latest: true }, { marker: false, latest: false }]);
  t.same(await w.keys(), ['doc']);
  w.setNow(T0 + 22 * DAY);
  t.same(await runLifecycle(w.ctx, { now: T0 + 22 * DAY }), [{ bucket: 'b', expired: 0, noncurrentRemoved: 0, deleteMarkersRemoved: 0, uploadsAborted: 0 }],
    'the newest noncurrent version is kept: the marker is not alone');
  await w.ctx.repos.bucketLifecycle.put(w.bucket.id, parseLifecycleConfiguration(Buffer.from(`<LifecycleConfiguration>
    <Rule><ID>history</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>
    <Rule><ID>markers</ID><Filter></Filter><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>
    </LifecycleConfiguration>`), () => 'id'));
  t.same(await runLifecycle(w.ctx, { now: T0 + 22 * DAY }), [{ bucket: 'b', expired: 0, noncurrentRemoved: 1, deleteMarkersRemoved: 1, uploadsAborted: 0 }],
    'without NewerNoncurrentVersions the version behind the marker goes, and then the marker');
  t.same(await versionsOf(w, 'logs/x'), [], 'nothing of logs/x is left');
  t.equal((await versionsOf(w, 'doc')).length, 2, 'doc is outside logs/');
});

t.test('incomplete multipart uploads under the prefix are aborted once due, their parts removed', async (t) => {
  const w = await world(t, '<Rule><ID>mp</ID><Filter><Prefix>up/</Prefix></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>');
  const user = w.bucket.ownerId;
  const upload = async (key: string, initiated: number): Promise<string> => {
    const uploadId = newUploadId(initiated);
    await w.ctx.multipart.create({
      uploadId, bucketId: w.bucket.id, key, ownerId: user, initiated, checksumAlgorithm: null, checksumType: null, contentType: null,
      contentEncoding: null, contentDisposition: null, contentLanguage: null, cacheControl: null, expires: null, userMetadata: {},
    });
    return uploadId;
  };
  const old = await upload('up/big', T0);
  const other = await upload('other/big', T0);
  const fresh = await upload('up/new', T0 + 2 * DAY);
  const staged = await w.ctx.storage.stage(Readable.from([randomBytes(100)]));
  await staged.commit();
  await w.ctx.multipart.putPart({ uploadId: old, partNumber: 1, blobId: staged.blobId, size: 100, etag: '"p"', crc32c: null, checksumAlgorithm: null, checksumValue: null, lastModified: T0 });
  t.same(await runLifecycle(w.ctx, { now: T0 + 2 * DAY + 1 }), [{ bucket: 'b', expired: 0, noncurrentRemoved: 0, deleteMarkersRemoved: 0, uploadsAborted: 1 }]);
  t.equal(await w.ctx.multipart.get(old), undefined, 'the old upload under up/ is aborted');
  t.ok(await w.ctx.multipart.get(other), 'outside the prefix: kept');
  t.ok(await w.ctx.multipart.get(fresh), 'a younger one: kept');
  t.notOk((await w.blobs()).includes(staged.blobId), "its part's bytes are gone");
});

t.test('removals check again in their transaction: a key written meanwhile, a version that became current, a marker no longer alone', async (t) => {
  const w = await world(t, '<Rule><ID>r</ID><Filter></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>', 'Enabled');
  const { objects } = w.ctx.repos;
  await w.put('k');
  const r = await objects.delete(w.bucket.id, 'k', T0, () => false);
  t.same(r, { existed: false, blobIds: [] }, 'the guard said no: nothing done');
  t.match(await versionsOf(w, 'k'), [{ marker: false, latest: true }], 'no delete marker made');
  const current = (await objects.get(w.bucket.id, 'k'))?.versionId ?? null;
  t.match(await objects.deleteVersion(w.bucket.id, 'k', current, 'noncurrent'), { existed: false }, 'the current version is not noncurrent');
  t.match(await objects.deleteVersion(w.bucket.id, 'k', current, 'lone-delete-marker'), { existed: false }, 'nor a delete marker');
  await objects.delete(w.bucket.id, 'k', T0 + 1000);
  const [marker, hidden] = await versionsOf(w, 'k');
  t.match(await objects.deleteVersion(w.bucket.id, 'k', marker?.id ?? null, 'noncurrent'), { existed: false }, 'the latest delete marker is not noncurrent');
  t.match(await objects.deleteVersion(w.bucket.id, 'k', marker?.id ?? null, 'lone-delete-marker'), { existed: false }, 'a version is behind it');
  t.match(await objects.deleteVersion(w.bucket.id, 'k', hidden?.id ?? null, 'noncurrent'), { existed: true }, 'the version behind it is noncurrent');
  t.match(await objects.deleteVersion(w.bucket.id, 'k', marker?.id ?? null, 'lone-delete-marker'), { existed: true, deleteMarker: true }, 'now it is alone');
  t.same(await versionsOf(w, 'k'), []);
});
