// The S3 repositories on both metadata stores (SQLite and a real PostgreSQL): objects (put, get,
// listing with prefixes, delimiters and UTF-8 byte order, inline bodies, conditional writes),
// versions and delete markers (and the lifecycle job's guarded removals), the multipart lifecycle,
// buckets (delete only when empty), CORS, lifecycle rules and the job's progress, the
// blob references the collector keeps, the scrub's list and marks, assets (pages, search, stats),
// and the commit queue's batches. The same expectations on each store.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { Repos } from '../../src/db/repos/index.js';
import { AssetsRepo, type AssetRecord } from '../../src/db/repos/assets.js';
import { BlobRefsRepo } from '../../src/db/repos/blob-refs.js';
import { BucketCorsRepo } from '../../src/db/repos/bucket-cors.js';
import { BucketLifecycleRepo, type LifecycleRule } from '../../src/db/repos/bucket-lifecycle.js';
import { BucketsRepo } from '../../src/db/repos/buckets.js';
import { IntegrityRepo } from '../../src/db/repos/integrity.js';
import { MultipartRepo, newUploadId, type CompletionPlan, type MultipartUpload, type UploadPart } from '../../src/db/repos/multipart.js';
import { isVersionId } from '../../src/db/repos/object-versions.js';
import { ObjectsRepo, prefixUpperBound, type ObjectRecord } from '../../src/db/repos/objects.js';
import { CommitQueue } from '../../src/db/commit-queue.js';
import type { SqlExecutor, SqlStore } from '../../src/db/store/types.js';
import { newInlineBlobId } from '../../src/storage/blob-id.js';
import { storeMatrix } from '../helpers/stores.js';

interface S3Repos {
  buckets: BucketsRepo;
  bucketCors: BucketCorsRepo;
  objects: ObjectsRepo;
  multipart: MultipartRepo;
  blobRefs: BlobRefsRepo;
  integrity: IntegrityRepo;
  assets: AssetsRepo;
}

const CLOCK = () => 1_700_000_000_000;

function reposOn(db: SqlExecutor): S3Repos {
  return {
    buckets: new BucketsRepo(db, CLOCK),
    bucketCors: new BucketCorsRepo(db, CLOCK),
    objects: new ObjectsRepo(db),
    multipart: new MultipartRepo(db),
    blobRefs: new BlobRefsRepo(db),
    integrity: new IntegrityRepo(db),
    assets: new AssetsRepo(db),
  };
}

/** Users belong to another group of repositories: written here directly. */
async function user(db: SqlExecutor, name: string): Promise<string> {
  const id = randomUUID();
  await db.run('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)', [id, name, 0]);
  return id;
}

interface Fixture {
  store: SqlStore;
  repos: S3Repos;
  userId: string;
  bucketId: string;
}

async function fixture(store: SqlStore): Promise<Fixture> {
  const repos = reposOn(store);
  const userId = await user(store, 'u');
  const bucket = await repos.buckets.insert({ name: 'b', ownerId: userId, region: 'us-east-1' });
  return { store, repos, userId, bucketId: bucket.id };
}

function rec(bucketId: string, key: string, blobId: string, extra: Partial<ObjectRecord> = {}): ObjectRecord {
  return {
    bucketId, key, blobId, size: key.length, etag: `"${blobId}"`, sha256: 's', checksumAlgorithm: null, checksumValue: null, checksumType: null,
    contentType: null, contentEncoding: null, contentDisposition: null, contentLanguage: null, cacheControl: null, expires: null,
    userMetadata: { a: 'b' }, lastModified: 1000, blobCrc32c: 7, ...extra,
  };
}

const stores = storeMatrix(t);

// --- objects: listing ------------------------------------------------------------------------------

const KEYS = ['a', 'a/1', 'a/2', 'a/b/1', 'a/b/2', 'b', 'c/1', 'c/2', 'c/3', 'd', 'é', 'z/ü', '\u{1F600}', 'Z'];

/** Pages through a listing the way a client does, collecting every key and common prefix. */
async function walk(objects: ObjectsRepo, bucketId: string, prefix: string, delimiter: string, maxKeys: number): Promise<string[]> {
  const out: string[] = [];
  let after = '';
  for (let pages = 0; pages < 1000; pages++) {
    const page = await objects.list(bucketId, { prefix, delimiter, after, maxKeys });
    out.push(...page.contents.map((c) => c.key), ...page.commonPrefixes.map((p) => `CP:${p}`));
    if (!page.isTruncated) return out;
    after = page.last as string;
  }
  throw new Error('listing did not end');
}

stores.each('objects: listing in UTF-8 byte order, prefixes, delimiters, pages', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { objects } = repos;
  for (const key of KEYS) await objects.put(rec(bucketId, key, `blob${key.length}`));
  const keys = (await objects.list(bucketId, { prefix: '', delimiter: '', after: '', maxKeys: 1000 })).contents.map((c) => c.key);
  t.same(keys, [...KEYS].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))), 'UTF-8 byte order');

  const whole = await walk(objects, bucketId, '', '/', 1000);
  t.same(whole.filter((k) => !k.startsWith('CP:')), ['Z', 'a', 'b', 'd', 'é', '\u{1F600}']);
  t.same(whole.filter((k) => k.startsWith('CP:')), ['CP:a/', 'CP:c/', 'CP:z/']);
  for (const size of [1, 2, 3, 5]) {
    t.same((await walk(objects, bucketId, '', '/', size)).sort(), [...whole].sort(), `maxKeys ${size}`);
    t.same((await walk(objects, bucketId, 'a/', '/', size)).sort(), ['a/1', 'a/2', 'CP:a/b/'].sort(), `prefix a/ maxKeys ${size}`);
    t.same(await walk(objects, bucketId, 'c', '', size), ['c/1', 'c/2', 'c/3'], `prefix c maxKeys ${size}`);
  }

  const p = await objects.list(bucketId, { prefix: '', delimiter: '/', after: '', maxKeys: 3 });
  t.same([p.contents.map((c) => c.key), p.commonPrefixes, p.isTruncated, p.last], [['Z', 'a'], ['a/'], true, 'a/'], 'a common prefix counts once');
  const next = await objects.list(bucketId, { prefix: '', delimiter: '/', after: 'a/', maxKeys: 3 });
  t.same([next.contents.map((c) => c.key), next.commonPrefixes], [['b', 'd'], ['c/']]);
  t.equal((await objects.list(bucketId, { prefix: 'c/', delimiter: '', after: '', maxKeys: 3 })).isTruncated, false, 'exactly maxKeys left is not truncated');
  t.same((await objects.list(bucketId, { prefix: '', delimiter: '', after: '', maxKeys: 0 })).contents, []);
  t.same((await objects.list(bucketId, { prefix: '\u{1F600}', delimiter: '', after: '', maxKeys: 10 })).contents.map((c) => c.key), ['\u{1F600}'], 'a prefix past the BMP');
  t.same(
    (await objects.list(bucketId, { prefix: '', delimiter: '', after: 'é', maxKeys: 10 })).contents.map((c) => [c.key, c.size, c.etag, c.lastModified]),
    [['\u{1F600}', 2, '"blob2"', 1000]],
    'after a key, with the listed columns',
  );
  t.equal(await objects.count(bucketId), KEYS.length);
});

t.test('prefixUpperBound is above every key with the prefix', async (t) => {
  t.equal(prefixUpperBound('a/'), 'a0');
  t.ok(Buffer.compare(Buffer.from('a/\u{10FFFF}zzz'), Buffer.from(prefixUpperBound('a/'))) < 0);
  t.equal(prefixUpperBound('x\uffff'), 'x\uffff\u{10FFFF}');
});

// --- objects: writes ---------------------------------------------------------------------------------

stores.each('objects: put replaces and reports the old blob; get, delete, conditional writes', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { objects } = repos;
  t.same(await objects.put(rec(bucketId, 'k', 'one')), { replaced: [] });
  t.same(await objects.put(rec(bucketId, 'k', 'two', { tagging: [['t', '1']], parts: undefined, contentType: 'text/plain' })), { replaced: ['one'] });
  const got = await objects.get(bucketId, 'k');
  t.match(got, { blobId: 'two', userMetadata: { a: 'b' }, tagging: [['t', '1']], contentType: 'text/plain', blobCrc32c: 7, versionId: null, size: 1 });
  t.equal(await objects.get(bucketId, 'nope'), undefined);
  t.same(await objects.getWithInline(bucketId, 'k'), { rec: got }, 'no inline bytes for a file blob');

  // Conditional writes: the guard sees the current version inside the transaction and may refuse.
  const seen: Array<string | undefined> = [];
  await t.rejects(
    objects.put(rec(bucketId, 'k', 'three'), (current) => {
      seen.push(current?.blobId);
      throw new Error('precondition');
    }),
    /precondition/,
  );
  t.same(seen, ['two']);
  t.equal((await objects.get(bucketId, 'k'))?.blobId, 'two', 'a refused write changes nothing');
  await t.rejects(objects.put(rec('no-bucket', 'k', 'x'), (current) => t.equal(current, undefined)), 'a missing bucket refuses the write');

  t.same(await objects.delete(bucketId, 'k'), { existed: true, blobIds: ['two'] });
  t.same(await objects.delete(bucketId, 'k'), { existed: false, blobIds: [] });
  t.equal(await objects.count(bucketId), 0);
});

stores.each('objects: an inline body is stored with its row and goes with it, in the same transaction', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { objects } = repos;
  const small = rec(bucketId, 'k', newInlineBlobId());
  t.same((await objects.put(small, undefined, Buffer.from('tiny'))).replaced, []);
  t.equal((await objects.inlineData(small.blobId))?.toString(), 'tiny');
  const withInline = await objects.getWithInline(bucketId, 'k');
  t.equal(withInline?.inline?.toString(), 'tiny', 'read with its row');
  t.ok(Buffer.isBuffer(withInline?.inline), 'as a Buffer');
  t.same((await objects.put(rec(bucketId, 'k', 'file1'))).replaced, [], 'replaced by a file version: the inline bytes go now');
  t.equal(await objects.inlineData(small.blobId), undefined);
  const again = rec(bucketId, 'k', newInlineBlobId());
  t.same((await objects.put(again, undefined, Buffer.from('again'))).replaced, ['file1'], 'and back: the file blob is reported');
  const refused = rec(bucketId, 'k', newInlineBlobId());
  await t.rejects(objects.put(refused, () => { throw new Error('no'); }, Buffer.from('x')), /no/);
  t.equal(await objects.inlineData(refused.blobId), undefined, 'a refused write keeps no inline bytes');
  t.equal((await objects.inlineData(again.blobId))?.toString(), 'again');
  t.same(await objects.delete(bucketId, 'k'), { existed: true, blobIds: [] }, 'an inline object has no backend blob');
  t.equal(await objects.inlineData(again.blobId), undefined);
});

// --- versions ----------------------------------------------------------------------------------------

async function listed(objects: ObjectsRepo, bucketId: string): Promise<Array<[string, string, boolean, boolean]>> {
  return (await objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: '', maxKeys: 1000 })).entries.map((e) => [
    e.key,
    e.deleteMarker ? 'marker' : e.etag.replace(/"/g, ''),
    e.isLatest,
    e.versionId === null,
  ]);
}

stores.each('versions: never versioned, Enabled, deleting by id promotes the newest, the bucket held', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { objects, buckets } = repos;
  await objects.put(rec(bucketId, 'k', 'b0'));
  t.equal(await objects.versions.hasAny(bucketId), false, 'never versioned: nothing kept');
  t.equal(await buckets.setVersioning(bucketId, 'Enabled'), true);
  t.equal(await buckets.setVersioning('missing', 'Enabled'), false);
  const w1 = await objects.put(rec(bucketId, 'k', 'b1'));
  t.same(w1.replaced, [], 'nothing released: the null version is kept');
  t.ok(w1.versionId && isVersionId(w1.versionId), 'a new version id');
  t.equal(await objects.versions.hasAny(bucketId), true);
  const w2 = await objects.put(rec(bucketId, 'k', 'b2'));
  t.same(await listed(objects, bucketId), [['k', 'b2', true, false], ['k', 'b1', false, false], ['k', 'b0', false, true]]);
  t.same(await repos.blobRefs.referenced(), new Set(['b0', 'b1', 'b2']), "the collector sees every version's blob");
  const toCheck = (await repos.integrity.blobsToCheck()).sort((x, y) => x.blobId.localeCompare(y.blobId));
  t.same(toCheck.map((b) => b.blobId), ['b0', 'b1', 'b2'], 'the scrub checks noncurrent versions too');
  t.match(toCheck[0]?.owner, /^object b\/k version null$/, 'named by version');

  const del = await objects.delete(bucketId, 'k', 5000);
  t.match(del, { existed: true, blobIds: [], deleteMarker: true });
  t.equal(await objects.get(bucketId, 'k'), undefined, 'no current row under a delete marker');
  t.same(await objects.versions.latestDeleteMarker(bucketId, 'k'), { versionId: del.versionId, lastModified: 5000 });
  t.same(await objects.getVersion(bucketId, 'k', del.versionId ?? ''), { deleteMarker: true, versionId: del.versionId, lastModified: 5000 });
  t.match(await objects.getVersion(bucketId, 'k', w1.versionId ?? ''), { deleteMarker: false, rec: { blobId: 'b1', versionId: w1.versionId } });
  t.equal(await objects.getVersion(bucketId, 'k', 'Z'.repeat(32)), undefined);

  t.match(await objects.deleteVersion(bucketId, 'k', del.versionId ?? ''), { existed: true, blobIds: [], deleteMarker: true }, 'removing a marker frees nothing');
  t.equal(await objects.versions.latestDeleteMarker(bucketId, 'k'), undefined);
  t.equal((await objects.get(bucketId, 'k'))?.blobId, 'b2', 'the newest version is current again');
  t.equal((await objects.get(bucketId, 'k'))?.versionId, w2.versionId);
  t.same(await objects.deleteVersion(bucketId, 'k', w2.versionId ?? ''), { existed: true, blobIds: ['b2'], versionId: w2.versionId, deleteMarker: false }, 'the current version removed for good');
  t.equal((await objects.get(bucketId, 'k'))?.blobId, 'b1', 'the previous version promoted');
  t.same(await objects.deleteVersion(bucketId, 'k', null), { existed: true, blobIds: ['b0'], versionId: 'null', deleteMarker: false }, 'a noncurrent version removed');
  t.same(await objects.deleteVersion(bucketId, 'k', 'Z'.repeat(32)), { existed: false, blobIds: [], versionId: 'Z'.repeat(32) }, 'a missing version');
  t.same(await repos.blobRefs.referenced(), new Set(['b1']));

  t.equal(await buckets.delete(bucketId), 'not_empty');
  await objects.delete(bucketId, 'k');
  t.equal(await buckets.hasObjects(bucketId), false);
  t.equal(await buckets.delete(bucketId), 'not_empty', 'a delete marker and a noncurrent version still hold the bucket');
  for (const e of (await objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: '', maxKeys: 1000 })).entries) {
    await objects.deleteVersion(bucketId, e.key, e.versionId);
  }
  t.equal(await buckets.delete(bucketId), 'deleted');
});

stores.each('versions: Suspended replaces the null version wherever it is; inline blobs follow their rows', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { objects, buckets } = repos;
  await buckets.setVersioning(bucketId, 'Enabled');
  const inline0 = newInlineBlobId();
  await objects.put(rec(bucketId, 'k', inline0), undefined, Buffer.from('0'));
  await buckets.setVersioning(bucketId, 'Suspended');
  t.equal((await buckets.getById(bucketId))?.versioning, 'Suspended');
  const inline1 = newInlineBlobId();
  t.same(await objects.put(rec(bucketId, 'k', inline1), undefined, Buffer.from('1')), { replaced: [], versionId: 'null' }, 'the versioned one is kept');
  t.ok(await objects.inlineData(inline0), 'a noncurrent inline version keeps its bytes');
  t.match(await objects.getVersion(bucketId, 'k', null), { deleteMarker: false, inline: Buffer.from('1') }, 'the current null version by id, with its bytes');
  t.same(await objects.put(rec(bucketId, 'k', 'b2')), { replaced: [], versionId: 'null' }, 'the null version replaced in place');
  t.equal(await objects.inlineData(inline1), undefined, 'and its inline bytes went with it');
  t.same(await objects.delete(bucketId, 'k'), { existed: true, blobIds: ['b2'], versionId: 'null', deleteMarker: true }, 'DELETE: the null version goes, a null marker comes');
  t.same((await listed(objects, bucketId)).map((e) => [e[1], e[2], e[3]]), [['marker', true, true], [`${inline0}`, false, false]]);
  await buckets.setVersioning(bucketId, 'Enabled');
  await objects.put(rec(bucketId, 'k', 'b3'));
  await buckets.setVersioning(bucketId, 'Suspended');
  t.same((await objects.put(rec(bucketId, 'k', 'b4'))).replaced, [], 'the null marker dropped, nothing to release');
  t.same((await listed(objects, bucketId)).map((e) => [e[1], e[2], e[3]]), [['b4', true, true], ['b3', false, false], [`${inline0}`, false, false]]);
  const byId = await objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: '', maxKeys: 1000 });
  const read = await objects.getVersion(bucketId, 'k', byId.entries[2]?.versionId ?? null);
  t.equal(read && !read.deleteMarker ? read.inline?.toString() : undefined, '0', 'a noncurrent inline version read by id with its bytes');
});

stores.each('versions: setTagging one version by id, current or noncurrent; never a delete marker', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { objects, buckets } = repos;
  await objects.put(rec(bucketId, 'k', 'b0', { tagging: [['a', '1']] }));
  await buckets.setVersioning(bucketId, 'Enabled');
  const v1 = (await objects.put(rec(bucketId, 'k', 'b1'))).versionId ?? '';
  const before = await listed(objects, bucketId);
  const tagsOf = async (id: string | null): Promise<unknown> => {
    const found = await objects.getVersion(bucketId, 'k', id);
    return found && !found.deleteMarker ? (found.rec.tagging ?? []) : 'marker';
  };
  t.equal(await objects.setTagging(bucketId, 'k', null, [['n', 'x']]), true, 'the noncurrent "null" version');
  t.equal(await objects.setTagging(bucketId, 'k', v1, [['c', 'y']]), true, 'the current version');
  t.same([await tagsOf(null), await tagsOf(v1)], [[['n', 'x']], [['c', 'y']]], 'each version got its own tags');
  t.equal(await objects.setTagging(bucketId, 'k', null, undefined), true);
  t.same(await tagsOf(null), [], 'tags removed');
  t.same(await listed(objects, bucketId), before, 'no version moved');
  const marker = (await objects.delete(bucketId, 'k', 5000)).versionId ?? '';
  t.equal(await objects.setTagging(bucketId, 'k', marker, [['m', '1']]), false, 'a delete marker has no tags');
  t.equal(await objects.setTagging(bucketId, 'k', 'Z'.repeat(32), []), false, 'an unknown version');
  t.same(await tagsOf(v1), [['c', 'y']], 'a version behind the marker keeps its tags');
});

stores.each('versions: ListObjectVersions walk with markers, delimiter, truncation', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { objects } = repos;
  await repos.buckets.setVersioning(bucketId, 'Enabled');
  for (const key of ['a', 'a', 'd/x', 'd/y', 'e']) await objects.put(rec(bucketId, key, `${key}-${Math.random()}`));
  await objects.delete(bucketId, 'e');
  const all = await objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: '', maxKeys: 1000 });
  t.same(all.entries.map((e) => [e.key, e.deleteMarker, e.isLatest]), [['a', false, true], ['a', false, false], ['d/x', false, true], ['d/y', false, true], ['e', true, true], ['e', false, false]]);
  const rolled = await objects.versions.list(bucketId, { prefix: '', delimiter: '/', keyMarker: '', maxKeys: 2 });
  t.same([rolled.entries.map((e) => e.key), rolled.commonPrefixes, rolled.isTruncated], [['a', 'a'], [], true]);
  const next = await objects.versions.list(bucketId, { prefix: '', delimiter: '/', keyMarker: rolled.nextKeyMarker ?? '', versionIdMarker: rolled.nextVersionIdMarker, maxKeys: 2 });
  t.same([next.entries.map((e) => e.key), next.commonPrefixes, next.isTruncated, next.nextKeyMarker], [['e'], ['d/'], true, 'e']);
  const fromPrefix = await objects.versions.list(bucketId, { prefix: '', delimiter: '/', keyMarker: 'd/', maxKeys: 10 });
  t.same(fromPrefix.entries.map((e) => [e.key, e.deleteMarker]), [['e', true], ['e', false]], 'a key-marker that is a common prefix skips it');
  const afterFirst = await objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: 'a', versionIdMarker: all.entries[0]?.versionId, maxKeys: 1 });
  t.same(afterFirst.entries.map((e) => e.versionId), [all.entries[1]?.versionId], 'a version id marker resumes inside the key');
  const gone = await objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: 'a', versionIdMarker: 'Z'.repeat(32), maxKeys: 10 });
  t.same(gone.entries.map((e) => e.key), ['d/x', 'd/y', 'e', 'e'], 'a version gone since: resume after its key');
  const keyOnly = await objects.versions.list(bucketId, { prefix: 'd/', delimiter: '', keyMarker: 'd/x', maxKeys: 10 });
  t.same(keyOnly.entries.map((e) => e.key), ['d/y'], 'a key marker alone skips every version of that key');
});

// --- multipart ---------------------------------------------------------------------------------------

let uploadClock = 1_700_000_000_000;

function upload(bucketId: string, key: string, extra: Partial<MultipartUpload> = {}): MultipartUpload {
  const initiated = uploadClock++;
  return {
    uploadId: newUploadId(initiated), bucketId, key, ownerId: 'owner', initiated, checksumAlgorithm: null, checksumType: null,
    contentType: 'text/plain', contentEncoding: null, contentDisposition: null, contentLanguage: null, cacheControl: null,
    expires: null, userMetadata: { a: 'b' }, ...extra,
  };
}

function part(uploadId: string, partNumber: number, blobId: string, size = 10): UploadPart {
  return { uploadId, partNumber, blobId, size, etag: `"${blobId}"`, crc32c: 5, checksumAlgorithm: null, checksumValue: null, lastModified: 1000 };
}

function plan(u: MultipartUpload, parts: UploadPart[], take: number[]): CompletionPlan {
  const chosen = parts.filter((p) => take.includes(p.partNumber));
  const record: ObjectRecord = {
    bucketId: u.bucketId, key: u.key, blobId: '', size: chosen.reduce((s, p) => s + p.size, 0), etag: '"x-2"', sha256: '',
    checksumAlgorithm: null, checksumValue: null, checksumType: null, contentType: u.contentType, contentEncoding: null,
    contentDisposition: null, contentLanguage: null, cacheControl: null, expires: null, userMetadata: u.userMetadata,
    lastModified: 2000, parts: chosen.map((p) => ({ blobId: p.blobId, size: p.size, etag: p.etag, crc32c: 9 })),
  };
  return {
    record,
    claimed: chosen.map((p) => p.partNumber),
    completed: { uploadId: u.uploadId, bucketId: u.bucketId, key: u.key, etag: record.etag, checksumAlgorithm: null, checksumValue: null, checksumType: null, completedAt: 3000 },
  };
}

stores.each('multipart: parts added, replaced (old blob to the trash), listed in pages; abort', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { multipart } = repos;
  const u = upload(bucketId, 'k', { tagging: [['t', 'v']] });
  await multipart.create(u);
  t.same(await multipart.get(u.uploadId), u);
  t.equal(await multipart.get('nope'), undefined);
  t.equal(await multipart.putPart(part(u.uploadId, 2, 'blob2')), 'added');
  t.equal(await multipart.putPart(part(u.uploadId, 1, 'blob1')), 'added');
  t.equal(await multipart.putPart(part(u.uploadId, 1, 'blob1b')), 'replaced');
  t.same(await multipart.trash(10), ['blob1'], 'the replaced blob is trash');
  await multipart.untrash('blob1');
  t.same(await multipart.trash(10), []);
  t.same((await multipart.parts(u.uploadId)).map((p) => [p.blobId, p.crc32c]), [['blob1b', 5], ['blob2', 5]]);
  t.same((await multipart.listParts(u.uploadId, 0, 1)).map((p) => p.partNumber), [1]);
  t.same((await multipart.listParts(u.uploadId, 1, 5)).map((p) => p.partNumber), [2]);
  t.equal(await multipart.putPart(part('no-such-upload', 1, 'orphan')), 'missing');

  t.equal(await multipart.abort(u.uploadId), true);
  t.equal(await multipart.abort(u.uploadId), false);
  t.equal(await multipart.get(u.uploadId), undefined);
  t.same((await multipart.trash(10)).sort(), ['blob1b', 'blob2'], 'an abort trashes every part');
});

stores.each('multipart: complete makes the object in one transaction; refusals change nothing', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { multipart, objects } = repos;
  await objects.put({ ...plan(upload(bucketId, 'k'), [], []).record, blobId: 'oldblob', parts: undefined });
  const u = upload(bucketId, 'k');
  await multipart.create(u);
  for (const n of [1, 2, 3]) await multipart.putPart(part(u.uploadId, n, `p${n}`));

  await t.rejects(multipart.complete(u.uploadId, () => { throw new Error('refused'); }), /refused/);
  t.ok(await multipart.get(u.uploadId), 'a refused plan changes nothing');
  await t.rejects(multipart.complete(u.uploadId, (x, parts) => plan(x, parts, [1, 3]), () => { throw new Error('guard'); }), /guard/);
  t.ok(await multipart.get(u.uploadId), 'a refused guard changes nothing');
  t.equal((await objects.get(bucketId, 'k'))?.blobId, 'oldblob');
  t.same(await multipart.trash(10), []);

  const done = await multipart.complete(u.uploadId, (x, parts) => plan(x, parts, [1, 3]));
  t.same(done?.replaced, ['oldblob'], 'the replaced version is reported');
  const made = await objects.get(bucketId, 'k');
  t.same(made?.parts?.map((p) => p.blobId), ['p1', 'p3']);
  t.same([made?.blobId, made?.contentType], ['', 'text/plain']);
  t.equal(await multipart.get(u.uploadId), undefined, 'the upload is gone');
  t.same(await multipart.trash(10), ['p2'], 'only the unlisted part is trash');
  t.match(await multipart.getCompleted(u.uploadId), { key: 'k', etag: '"x-2"', completedAt: 3000 });
  t.equal(await multipart.complete(u.uploadId, (x, parts) => plan(x, parts, [1])), undefined, 'a second completion finds no upload');
  t.same(await repos.blobRefs.referenced(), new Set(['p1', 'p3', 'p2']), 'manifest parts and the trash are referenced');
  t.equal(await repos.blobRefs.isReferenced('p3'), true);
  t.equal(await repos.blobRefs.isReferenced('oldblob'), false);
  const checks = (await repos.integrity.blobsToCheck()).map((b) => [b.blobId, b.owner, b.expected]).sort((x, y) => String(x[0]).localeCompare(String(y[0])));
  t.same(checks, [['p1', 'part 1 of b/k', { kind: 'crc32c', value: 9 }], ['p3', 'part 2 of b/k', { kind: 'crc32c', value: 9 }]], 'manifest parts, numbered from 1');
  t.same(await objects.delete(bucketId, 'k'), { existed: true, blobIds: ['p1', 'p3'] }, 'deleting the object reports every part blob');
  t.equal(await multipart.pruneCompleted(3001), 1);
  t.equal(await multipart.getCompleted(u.uploadId), undefined);

  // On a versioned bucket the completion answers the new version's id.
  await repos.buckets.setVersioning(bucketId, 'Enabled');
  const v = upload(bucketId, 'k');
  await multipart.create(v);
  await multipart.putPart(part(v.uploadId, 1, 'q1'));
  const versioned = await multipart.complete(v.uploadId, (x, parts) => plan(x, parts, [1]));
  t.ok(isVersionId(versioned?.plan.completed.versionId ?? ''), 'the version id');
  t.equal((await multipart.getCompleted(v.uploadId))?.versionId, versioned?.plan.completed.versionId, 'kept with the completion');
});

stores.each('multipart: a deleted bucket takes its uploads along; expired uploads oldest first', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { multipart } = repos;
  const a = upload(bucketId, 'a', { initiated: 100 });
  const b = upload(bucketId, 'b', { initiated: 50 });
  const c = upload(bucketId, 'c', { initiated: 500 });
  for (const u of [a, b, c]) await multipart.create(u);
  await multipart.putPart(part(c.uploadId, 1, 'unclaimed'));
  t.same(await multipart.expired(200, 10), [b.uploadId, a.uploadId]);
  t.same(await multipart.expired(200, 1), [b.uploadId]);
  t.equal(await multipart.count(bucketId), 3);
  const checks = await repos.integrity.blobsToCheck();
  t.same(checks.map((x) => [x.blobId, x.owner]), [['unclaimed', `part 1 of upload ${c.uploadId}`]], "an upload's parts are checked too");
  t.equal(await repos.buckets.delete(bucketId), 'deleted', 'uploads do not hold a bucket');
  t.equal(await multipart.get(c.uploadId), undefined);
  t.same(await multipart.trash(10), ['unclaimed']);
});

stores.each('multipart: listing uploads by key then age, prefix, delimiter, markers, pages', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { multipart } = repos;
  const made: MultipartUpload[] = [];
  for (const key of ['a/1', 'a/2', 'b', 'b', 'c/x/y', 'd']) {
    const u = upload(bucketId, key);
    await multipart.create(u);
    made.push(u);
  }
  const ids = made.map((u) => u.uploadId);
  const list = (q: Partial<{ prefix: string; delimiter: string; keyMarker: string; uploadIdMarker: string; maxUploads: number }>) =>
    multipart.listUploads(bucketId, { prefix: '', delimiter: '', keyMarker: '', uploadIdMarker: '', maxUploads: 1000, ...q });
  const all = await list({});
  t.same([all.uploads.map((u) => u.uploadId), all.isTruncated], [ids, false], 'by key, then oldest first');
  const rolled = await list({ delimiter: '/' });
  t.same([rolled.commonPrefixes, rolled.uploads.map((u) => u.key)], [['a/', 'c/'], ['b', 'b', 'd']]);
  t.same((await list({ prefix: 'c/', delimiter: '/' })).commonPrefixes, ['c/x/']);
  const seen: string[] = [];
  let keyMarker = '';
  let uploadIdMarker = '';
  for (let i = 0; i < 20; i++) {
    const page = await list({ delimiter: '/', keyMarker, uploadIdMarker, maxUploads: 1 });
    seen.push(...page.uploads.map((u) => `${u.key}#${u.uploadId}`), ...page.commonPrefixes);
    if (!page.isTruncated) break;
    keyMarker = page.nextKeyMarker ?? '';
    uploadIdMarker = page.nextUploadIdMarker ?? '';
  }
  t.same(seen, ['a/', `b#${ids[2]}`, `b#${ids[3]}`, 'c/', `d#${ids[5]}`]);
  t.same((await list({ keyMarker: 'b' })).uploads.map((u) => u.key), ['c/x/y', 'd'], 'a key marker alone skips that key');
  t.same((await list({ keyMarker: 'b', uploadIdMarker: ids[2] as string })).uploads.map((u) => u.uploadId), ids.slice(3), 'key and upload id markers resume inside the key');
});

// --- buckets and CORS --------------------------------------------------------------------------------

stores.each('buckets: insert, lookups, owner filter, counts, public flag, delete only when empty', async (t, open) => {
  const store = await open(t);
  const { buckets, objects } = reposOn(store);
  const u1 = await user(store, 'one');
  const u2 = await user(store, 'two');
  const b = await buckets.insert({ name: 'beta', ownerId: u1, region: 'eu-west-1' });
  const a = await buckets.insert({ name: 'alpha', ownerId: u1, region: 'us-east-1' });
  const c = await buckets.insert({ name: 'gamma', ownerId: u2, region: 'us-east-1' });
  t.same(a, { id: a.id, name: 'alpha', ownerId: u1, region: 'us-east-1', createdAt: CLOCK(), public: false, versioning: null });
  t.same(await buckets.getByName('alpha'), a);
  t.same(await buckets.getById(c.id), c);
  t.equal(await buckets.getByName('nope'), undefined);
  t.same((await buckets.list()).map((x) => x.name), ['alpha', 'beta', 'gamma']);
  t.same((await buckets.list(u1)).map((x) => x.name), ['alpha', 'beta']);
  t.same(await buckets.list('nobody'), []);
  await t.rejects(buckets.insert({ name: 'alpha', ownerId: u2, region: 'x' }), { name: 'ConstraintError', reason: 'duplicate' });
  await t.rejects(buckets.insert({ name: 'orphan', ownerId: 'nobody', region: 'x' }), { name: 'ConstraintError', reason: 'in_use' });
  // In a transaction a refused insert is its own savepoint: the transaction goes on (PostgreSQL aborts a transaction on any failed statement).
  const inTx = await store.transaction(async (tx) => {
    await new BucketsRepo(tx, CLOCK).insert({ name: 'alpha', ownerId: u2, region: 'x' }).catch(() => undefined);
    return (await new BucketsRepo(tx, CLOCK).getByName('alpha'))?.id;
  });
  t.equal(inTx, a.id, 'the transaction survived the refused insert');

  t.equal(await buckets.countObjects(a.id), 0);
  t.equal(await buckets.hasObjects(a.id), false);
  await objects.put(rec(a.id, 'k1', 'x1'));
  await objects.put(rec(a.id, 'k2', 'x2'));
  t.equal(await buckets.countObjects(a.id), 2);
  t.equal(await buckets.hasObjects(a.id), true);
  t.equal(await buckets.hasObjects(b.id), false);

  t.equal(await buckets.setPublic(b.id, true), true, 'made public');
  t.equal((await buckets.getByName('beta'))?.public, true);
  t.equal((await buckets.getByName('alpha'))?.public, false, 'others untouched');
  t.equal(await buckets.setPublic(b.id, false), true, 'private again');
  t.equal((await buckets.getById(b.id))?.public, false);
  t.equal(await buckets.setPublic('missing', true), false, 'an unknown bucket');

  t.equal(await buckets.delete(a.id), 'not_empty');
  t.equal(await buckets.countObjects(a.id), 2, 'a refused delete cascades nothing');
  t.equal(await buckets.delete('missing'), 'not_found');
  await objects.delete(a.id, 'k1');
  await objects.delete(a.id, 'k2');
  t.equal(await buckets.delete(a.id), 'deleted');
  t.equal(await buckets.getById(a.id), undefined);
});

stores.each('bucket CORS: put (replace), get, delete; gone with the bucket', async (t, open) => {
  const { repos, bucketId } = await fixture(await open(t));
  const { bucketCors } = repos;
  const rules = [{ id: 'r1', allowedOrigins: ['https://a.example'], allowedMethods: ['GET'], allowedHeaders: ['*'], exposeHeaders: ['ETag'], maxAgeSeconds: 60 }];
  t.equal(await bucketCors.get(bucketId), undefined);
  await bucketCors.put(bucketId, rules);
  t.same(await bucketCors.get(bucketId), rules);
  const other = [{ allowedOrigins: ['*'], allowedMethods: ['PUT', 'GET'], allowedHeaders: [], exposeHeaders: [] }];
  await bucketCors.put(bucketId, other);
  t.same(await bucketCors.get(bucketId), other, 'the whole configuration replaced');
  t.equal(await bucketCors.delete(bucketId), true);
  t.equal(await bucketCors.delete(bucketId), false);
  await bucketCors.put(bucketId, rules);
  t.equal(await repos.buckets.delete(bucketId), 'deleted');
  t.equal(await bucketCors.get(bucketId), undefined, 'cascaded');
});

// --- integrity and blob references -------------------------------------------------------------------

stores.each('integrity: what the scrub checks, corrupt marks kept, listed, counted, forgotten', async (t, open) => {
  const { store, repos, bucketId, userId } = await fixture(await open(t));
  const { integrity } = repos;
  await repos.objects.put(rec(bucketId, 'with-crc', 'crc-blob'));
  await repos.objects.put(rec(bucketId, 'with-md5', 'md5-blob', { blobCrc32c: undefined, etag: '"0123456789abcdef0123456789abcdef"' }));
  await repos.objects.put(rec(bucketId, 'no-digest', 'bare-blob', { blobCrc32c: undefined, etag: '"abc-2"' }));
  await repos.assets.insert(asset(userId, 'as1', 'photo.png', { crc32c: 11 }));
  const checks = (await integrity.blobsToCheck()).sort((x, y) => x.blobId.localeCompare(y.blobId));
  t.same(checks, [
    { blobId: 'as1-blob', expected: { kind: 'crc32c', value: 11 }, owner: 'asset as1' },
    { blobId: 'crc-blob', expected: { kind: 'crc32c', value: 7 }, owner: 'object b/with-crc' },
    { blobId: 'md5-blob', expected: { kind: 'md5', hex: '0123456789abcdef0123456789abcdef' }, owner: 'object b/with-md5' },
  ], 'rows with a digest, owners named');
  t.same(await repos.blobRefs.referenced(), new Set(['crc-blob', 'md5-blob', 'bare-blob', 'as1-blob']));

  t.equal(await integrity.corruptCount(), 0);
  await integrity.markCorrupt({ blobId: 'crc-blob', owner: 'object b/with-crc', expected: 'crc32c:7', actual: 'crc32c:8', foundBy: 'read', detectedAt: 50 });
  await integrity.markCorrupt({ blobId: 'as1-blob', owner: 'asset as1', expected: 'crc32c:b', actual: 'missing', foundBy: 'scrub', detectedAt: 10 });
  await integrity.markCorrupt({ blobId: 'crc-blob', owner: 'object b/with-crc', expected: 'crc32c:7', actual: 'crc32c:9', foundBy: 'scrub', detectedAt: 99 });
  t.equal(await integrity.corruptCount(), 2);
  t.same(await integrity.corrupt(), [
    { blobId: 'as1-blob', owner: 'asset as1', expected: 'crc32c:b', actual: 'missing', foundBy: 'scrub', detectedAt: 10 },
    { blobId: 'crc-blob', owner: 'object b/with-crc', expected: 'crc32c:7', actual: 'crc32c:9', foundBy: 'scrub', detectedAt: 50 },
  ], 'oldest first; a blob marked again keeps the time it was first found');
  await integrity.forget('crc-blob');
  t.same((await integrity.corrupt()).map((c) => c.blobId), ['as1-blob']);
  t.equal(await store.get('SELECT 1 AS one FROM corrupt_blobs WHERE blob_id = ?', ['crc-blob']), undefined);
});

// --- assets ------------------------------------------------------------------------------------------

function asset(userId: string, id: string, fileName: string, extra: Partial<AssetRecord> = {}): AssetRecord {
  return {
    id, userId, projectId: null, deploymentId: null, blobId: `${id}-blob`, crc32c: null, fileName, contentType: 'image/png', size: 100,
    sha256: 's', etag: '"e"', visibility: 'public', kind: 'file', activeContent: false, createdAt: 1000, updatedAt: 1000, ...extra,
  };
}

stores.each('assets: insert, get, pages newest first, file-name search, kind and project filters, stats', async (t, open) => {
  const store = await open(t);
  const { assets } = reposOn(store);
  const ann = await user(store, 'ann');
  const bob = await user(store, 'bob');
  const a1 = asset(ann, 'a1', 'Holiday_Photo.PNG', { createdAt: 1000, size: 10, crc32c: 4_000_000_000, activeContent: true, visibility: 'private' });
  const a2 = asset(ann, 'a2', 'report 100%.pdf', { createdAt: 2000, size: 20, kind: 'artifact', projectId: 'p1', deploymentId: 'd1' });
  const a3 = asset(ann, 'a3', 'holidayXphoto.png', { createdAt: 3000, size: 30, projectId: 'p1' });
  const a4 = asset(ann, 'a4', 'été.txt', { createdAt: 3000, size: 40 });
  const b1 = asset(bob, 'b1', 'holiday_photo.png', { createdAt: 5000, size: 1000 });
  for (const a of [a1, a2, a3, a4, b1]) await assets.insert(a);
  t.same(await assets.get('a1'), a1, 'every column read back (a CRC32C above 2^31 too)');
  t.equal(await assets.get('nope'), undefined);

  const page = await assets.page({ userId: ann, limit: 2, offset: 0 });
  t.same([page.assets.map((a) => a.id), page.total], [['a3', 'a4'], 4], 'newest first, ties by id; the total of all pages');
  t.same((await assets.page({ userId: ann, limit: 2, offset: 2 })).assets.map((a) => a.id), ['a2', 'a1']);
  t.same((await assets.page({ userId: ann, limit: 10, offset: 0, search: 'holiday_photo' })).assets.map((a) => a.id), ['a1'], 'ASCII case ignored; _ is literal');
  t.same((await assets.page({ userId: ann, limit: 10, offset: 0, search: 'HOLIDAY' })).assets.map((a) => a.id), ['a3', 'a1']);
  t.same((await assets.page({ userId: ann, limit: 10, offset: 0, search: '100%' })).assets.map((a) => a.id), ['a2'], '% is literal');
  t.same((await assets.page({ userId: ann, limit: 10, offset: 0, search: 't\u00e9' })).assets.map((a) => a.id), ['a4'], 'non-ASCII matches as written');
  t.same(await assets.page({ userId: ann, limit: 10, offset: 0, search: 'nothing' }), { assets: [], total: 0 });
  t.same((await assets.page({ userId: ann, limit: 10, offset: 0, kind: 'artifact' })).assets.map((a) => a.id), ['a2']);
  const inProject = await assets.page({ userId: ann, limit: 10, offset: 0, projectId: 'p1', kind: 'file' });
  t.same([inProject.assets.map((a) => a.id), inProject.total], [['a3'], 1]);

  t.same(await assets.stats(ann), { totalFiles: 4, storageBytes: 100 });
  t.same(await assets.stats(ann, 'p1'), { totalFiles: 2, storageBytes: 50 });
  t.same(await assets.stats('nobody'), { totalFiles: 0, storageBytes: 0 });
  t.equal(await assets.countCreatedSince(ann, 2000), 3);
  t.equal(await assets.countCreatedSince(ann, 2000, 'p1'), 2);

  t.equal(await assets.unlinkProject('p1'), 2);
  t.match(await assets.get('a2'), { projectId: null, deploymentId: null });
  t.equal(await assets.delete('a2'), true);
  t.equal(await assets.delete('a2'), false);
  t.equal((await assets.page({ userId: ann, limit: 10, offset: 0 })).total, 3);
});

// --- the commit queue --------------------------------------------------------------------------------

/** The transact of Repos, over these repositories only (the commit queue needs no other). */
function transactor(store: SqlStore): Pick<Repos, 'transact'> {
  const bound = (exec: SqlExecutor): Repos =>
    ({ ...reposOn(exec), store: exec, transact: <T>(fn: (r: Repos) => Promise<T>) => exec.transaction((tx) => fn(bound(tx))) }) as unknown as Repos;
  return { transact: (fn) => store.transaction((tx) => fn(bound(tx))) };
}

stores.each('commit queue: writes of one tick share a transaction; a failing write undoes only itself', async (t, open) => {
  const { store, repos, bucketId } = await fixture(await open(t));
  const queue = new CommitQueue(transactor(store));
  const inline = newInlineBlobId();
  const results = await Promise.allSettled([
    queue.run((r) => r.objects.put(rec(bucketId, 'k1', 'one'))),
    queue.run(async (r) => {
      await r.objects.put(rec(bucketId, 'k2', 'two'));
      throw new Error('refused');
    }),
    queue.run((r) => r.objects.put(rec(bucketId, 'k3', inline), undefined, Buffer.from('x'))),
    // The same inline blob id again: a constraint error on the database, this write only.
    queue.run((r) => r.objects.put(rec(bucketId, 'k4', inline), undefined, Buffer.from('y'))),
    queue.run((r) => r.objects.delete(bucketId, 'k1')),
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
  t.match((results[1] as PromiseRejectedResult).reason, /refused/);
  t.same((results[4] as PromiseFulfilledResult<unknown>).value, { existed: true, blobIds: ['one'] }, 'a later write of the batch sees an earlier one');
  t.same((await repos.objects.list(bucketId, { prefix: '', delimiter: '', after: '', maxKeys: 10 })).contents.map((c) => c.key), ['k3'], 'the refused writes left nothing');
  t.equal((await repos.objects.inlineData(inline))?.toString(), 'x');
  t.equal(queue.batches, 1, 'five writes, one transaction');
  await queue.run((r) => r.objects.delete(bucketId, 'k3'));
  t.equal(queue.batches, 2, 'a later tick gets its own transaction');
  t.equal(await repos.objects.count(bucketId), 0);
});

// --- lifecycle ---------------------------------------------------------------------------------------

stores.each("lifecycle: rules and the job's progress per bucket; removals only while still due", async (t, open) => {
  const store = await open(t);
  const { repos, bucketId } = await fixture(store);
  const { objects, buckets } = repos;
  const lifecycle = new BucketLifecycleRepo(store, CLOCK);
  const rule: LifecycleRule = {
    id: 'r', enabled: true, filter: { prefix: 'logs/', tags: [['k', 'v']], sizeGreaterThan: 1, sizeLessThan: null, form: 'filter' },
    expiration: { days: 3 }, noncurrentExpiration: null, abortIncompleteMultipartDays: null,
  };
  t.equal(await lifecycle.get(bucketId), undefined);
  await lifecycle.put(bucketId, [rule]);
  t.same(await lifecycle.get(bucketId), [rule], 'the rules as put');
  t.same([await lifecycle.bucketIds('', 10), await lifecycle.bucketIds(bucketId, 10)], [[bucketId], []], 'buckets with rules, after an id');
  await lifecycle.saveProgress({ bucketId, phase: 'uploads', keyMarker: 'k', idMarker: 'u', startedAt: 5 });
  await lifecycle.saveProgress({ bucketId, phase: 'versions', keyMarker: 'logs/\u{1F600}', idMarker: null, startedAt: 6 });
  t.same(await lifecycle.progress(bucketId), { bucketId, phase: 'versions', keyMarker: 'logs/\u{1F600}', idMarker: null, startedAt: 6 }, 'one row, replaced');
  await lifecycle.put(bucketId, [rule]);
  t.equal(await lifecycle.progress(bucketId), undefined, 'new rules forget the walk');
  await lifecycle.saveProgress({ bucketId, phase: 'done', keyMarker: '', idMarker: null, startedAt: 7 });
  t.equal(await lifecycle.delete(bucketId), true);
  t.same([await lifecycle.get(bucketId), await lifecycle.progress(bucketId), await lifecycle.delete(bucketId)], [undefined, undefined, false], 'both gone');

  await buckets.setVersioning(bucketId, 'Enabled');
  const v1 = await objects.put(rec(bucketId, 'k', 'b1'));
  const v2 = await objects.put(rec(bucketId, 'k', 'b2'));
  t.same(await objects.delete(bucketId, 'k', 9000, (current) => current?.blobId === 'other'), { existed: false, blobIds: [] }, 'a guard that says no: no marker');
  t.same(await listed(objects, bucketId), [['k', 'b2', true, false], ['k', 'b1', false, false]]);
  t.match(await objects.deleteVersion(bucketId, 'k', v2.versionId ?? '', 'noncurrent'), { existed: false }, 'the current version is not noncurrent');
  t.equal(await objects.versions.count(bucketId, 'k'), 1);
  const marker = await objects.delete(bucketId, 'k', 9000, (current) => current?.blobId === 'b2');
  t.match(marker, { existed: true, deleteMarker: true }, 'a guard that says yes: the marker');
  t.equal(await objects.versions.newestOrd(bucketId, 'k') !== undefined, true);
  t.match(await objects.deleteVersion(bucketId, 'k', marker.versionId ?? '', 'noncurrent'), { existed: false }, 'the latest marker is not noncurrent');
  t.match(await objects.deleteVersion(bucketId, 'k', marker.versionId ?? '', 'lone-delete-marker'), { existed: false }, 'versions behind it');
  t.same(await objects.deleteVersion(bucketId, 'k', v1.versionId ?? '', 'noncurrent'), { existed: true, blobIds: ['b1'], versionId: v1.versionId, deleteMarker: false });
  t.same(await objects.deleteVersion(bucketId, 'k', v2.versionId ?? '', 'noncurrent'), { existed: true, blobIds: ['b2'], versionId: v2.versionId, deleteMarker: false });
  t.match(await objects.deleteVersion(bucketId, 'k', marker.versionId ?? '', 'lone-delete-marker'), { existed: true, deleteMarker: true }, 'alone now: removed');
  t.same([await listed(objects, bucketId), await objects.versions.count(bucketId, 'k'), await objects.versions.newestOrd(bucketId, 'k')], [[], 0, undefined]);
});

