// The multipart repository against a real SQLite database: parts, trash, completion, listing.
import t from 'tap';
import { openDatabase, type Db } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { ObjectsRepo, type ObjectRecord } from '../../src/db/repos/objects.js';
import { MultipartRepo, newUploadId, type CompletionPlan, type MultipartUpload, type UploadPart } from '../../src/db/repos/multipart.js';
import { userRow } from '../helpers/users.js';

interface Setup {
  db: Db;
  objects: ObjectsRepo;
  multipart: MultipartRepo;
  bucketId: string;
  deleteBucket(): void;
}

function setup(): Setup {
  const db = openDatabase(':memory:');
  const repos = createRepos(db);
  const user = userRow(db, 'u');
  const bucket = repos.buckets.insert({ name: 'b', ownerId: user.id, region: 'us-east-1' });
  const objects = new ObjectsRepo(db);
  return { db, objects, multipart: new MultipartRepo(db, objects), bucketId: bucket.id, deleteBucket: () => void repos.buckets.delete(bucket.id) };
}

let clock = 1_700_000_000_000;

function upload(bucketId: string, key: string, extra: Partial<MultipartUpload> = {}): MultipartUpload {
  const initiated = clock++;
  return {
    uploadId: newUploadId(initiated), bucketId, key, ownerId: 'owner', initiated, checksumAlgorithm: null, checksumType: null,
    contentType: 'text/plain', contentEncoding: null, contentDisposition: null, contentLanguage: null, cacheControl: null,
    expires: null, userMetadata: { a: 'b' }, ...extra,
  };
}

function part(uploadId: string, partNumber: number, blobId: string, size = 10): UploadPart {
  return { uploadId, partNumber, blobId, size, etag: `"${blobId}"`, crc32c: null, checksumAlgorithm: null, checksumValue: null, lastModified: 1000 };
}

function plan(u: MultipartUpload, parts: UploadPart[], take: number[]): CompletionPlan {
  const chosen = parts.filter((p) => take.includes(p.partNumber));
  const record: ObjectRecord = {
    bucketId: u.bucketId, key: u.key, blobId: '', size: chosen.reduce((s, p) => s + p.size, 0), etag: '"x-2"', sha256: '',
    checksumAlgorithm: null, checksumValue: null, checksumType: null, contentType: u.contentType, contentEncoding: null,
    contentDisposition: null, contentLanguage: null, cacheControl: null, expires: null, userMetadata: u.userMetadata,
    lastModified: 2000, parts: chosen.map((p) => ({ blobId: p.blobId, size: p.size, etag: p.etag })),
  };
  return {
    record,
    claimed: chosen.map((p) => p.partNumber),
    completed: { uploadId: u.uploadId, bucketId: u.bucketId, key: u.key, etag: record.etag, checksumAlgorithm: null, checksumValue: null, checksumType: null, completedAt: 3000 },
  };
}

t.test('upload ids: time-ordered, URL-safe, no leading dash', async (t) => {
  const a = newUploadId(1_700_000_000_000);
  const b = newUploadId(1_700_000_000_001);
  t.match(a, /^[0-9a-f]{12}[A-Za-z0-9]{32}$/);
  t.ok(a < b, 'a later upload sorts after');
  t.not(newUploadId(5), newUploadId(5), 'random');
});

t.test('parts: add, replace (old blob to the trash), list in pages', async (t) => {
  const { multipart, bucketId } = setup();
  const u = upload(bucketId, 'k');
  multipart.create(u);
  t.same(multipart.get(u.uploadId), u);
  t.equal(multipart.putPart(part(u.uploadId, 2, 'blob2')), 'added');
  t.equal(multipart.putPart(part(u.uploadId, 1, 'blob1')), 'added');
  t.equal(multipart.putPart(part(u.uploadId, 1, 'blob1b')), 'replaced');
  t.same(multipart.trash(10), ['blob1'], 'the replaced blob is trash');
  multipart.untrash('blob1');
  t.same(multipart.trash(10), []);
  t.same(multipart.parts(u.uploadId).map((p) => p.blobId), ['blob1b', 'blob2']);
  t.same(multipart.listParts(u.uploadId, 0, 1).map((p) => p.partNumber), [1]);
  t.same(multipart.listParts(u.uploadId, 1, 5).map((p) => p.partNumber), [2]);
  t.equal(multipart.putPart(part('no-such-upload', 1, 'orphan')), 'missing');
});

t.test('abort: the upload goes, all its blobs to the trash', async (t) => {
  const { multipart, bucketId } = setup();
  const u = upload(bucketId, 'k');
  multipart.create(u);
  multipart.putPart(part(u.uploadId, 1, 'p1'));
  multipart.putPart(part(u.uploadId, 2, 'p2'));
  t.equal(multipart.abort(u.uploadId), true);
  t.equal(multipart.abort(u.uploadId), false);
  t.equal(multipart.get(u.uploadId), undefined);
  t.same(multipart.trash(10).sort(), ['p1', 'p2']);
});

t.test('complete: object with a manifest, listed parts kept, others trashed, one transaction', async (t) => {
  const { multipart, objects, bucketId } = setup();
  objects.put({ ...plan(upload(bucketId, 'k'), [], []).record, blobId: 'oldblob', parts: undefined });
  const u = upload(bucketId, 'k');
  multipart.create(u);
  for (const n of [1, 2, 3]) multipart.putPart(part(u.uploadId, n, `p${n}`));

  t.throws(() => multipart.complete(u.uploadId, () => { throw new Error('refused'); }), /refused/);
  t.ok(multipart.get(u.uploadId), 'a refused plan changes nothing');
  t.throws(() => multipart.complete(u.uploadId, (x, parts) => plan(x, parts, [1, 3]), () => { throw new Error('guard'); }), /guard/);
  t.ok(multipart.get(u.uploadId), 'a refused guard changes nothing');
  t.equal(objects.get(bucketId, 'k')?.blobId, 'oldblob');
  t.same(multipart.trash(10), []);

  const done = multipart.complete(u.uploadId, (x, parts) => plan(x, parts, [1, 3]));
  t.ok(done);
  t.same(done?.replaced, ['oldblob'], 'the replaced version is reported');
  const rec = objects.get(bucketId, 'k');
  t.same(rec?.parts?.map((p) => p.blobId), ['p1', 'p3']);
  t.equal(rec?.blobId, '');
  t.equal(rec?.contentType, 'text/plain');
  t.equal(multipart.get(u.uploadId), undefined, 'the upload is gone');
  t.same(multipart.trash(10), ['p2'], 'only the unlisted part is trash');
  t.match(multipart.getCompleted(u.uploadId), { key: 'k', etag: '"x-2"' });
  t.equal(multipart.complete(u.uploadId, (x, parts) => plan(x, parts, [1])), undefined, 'a second completion finds no upload');
  t.same(objects.delete(bucketId, 'k'), { existed: true, blobIds: ['p1', 'p3'] }, 'deleting the object reports every part blob');
  t.equal(multipart.pruneCompleted(3001), 1);
  t.equal(multipart.getCompleted(u.uploadId), undefined);
});

t.test('a deleted bucket takes its uploads along; their blobs go to the trash', async (t) => {
  const { multipart, bucketId, deleteBucket } = setup();
  const u = upload(bucketId, 'k');
  multipart.create(u);
  multipart.putPart(part(u.uploadId, 1, 'p1'));
  deleteBucket();
  t.equal(multipart.get(u.uploadId), undefined);
  t.same(multipart.trash(10), ['p1']);
});

t.test('expired uploads, oldest first', async (t) => {
  const { multipart, bucketId } = setup();
  const a = upload(bucketId, 'a', { initiated: 100 });
  const b = upload(bucketId, 'b', { initiated: 50 });
  const c = upload(bucketId, 'c', { initiated: 500 });
  for (const u of [a, b, c]) multipart.create(u);
  t.same(multipart.expired(200, 10), [b.uploadId, a.uploadId]);
  t.same(multipart.expired(200, 1), [b.uploadId]);
  t.equal(multipart.count(bucketId), 3);
});

t.test('listing uploads: key then age, prefix, delimiter, markers, pages', async (t) => {
  const { multipart, bucketId } = setup();
  const made: MultipartUpload[] = [];
  for (const key of ['a/1', 'a/2', 'b', 'b', 'c/x/y', 'd']) {
    const u = upload(bucketId, key);
    multipart.create(u);
    made.push(u);
  }
  const ids = made.map((u) => u.uploadId);
  const all = multipart.listUploads(bucketId, { prefix: '', delimiter: '', keyMarker: '', uploadIdMarker: '', maxUploads: 1000 });
  t.same(all.uploads.map((u) => u.uploadId), ids, 'by key, then oldest first');
  t.equal(all.isTruncated, false);

  const rolled = multipart.listUploads(bucketId, { prefix: '', delimiter: '/', keyMarker: '', uploadIdMarker: '', maxUploads: 1000 });
  t.same(rolled.commonPrefixes, ['a/', 'c/']);
  t.same(rolled.uploads.map((u) => u.key), ['b', 'b', 'd']);

  const under = multipart.listUploads(bucketId, { prefix: 'c/', delimiter: '/', keyMarker: '', uploadIdMarker: '', maxUploads: 1000 });
  t.same(under.commonPrefixes, ['c/x/']);

  // Walk in pages of 1 the way a client does.
  const seen: string[] = [];
  let keyMarker = '';
  let uploadIdMarker = '';
  for (let i = 0; i < 20; i++) {
    const page = multipart.listUploads(bucketId, { prefix: '', delimiter: '/', keyMarker, uploadIdMarker, maxUploads: 1 });
    seen.push(...page.uploads.map((u) => `${u.key}#${u.uploadId}`), ...page.commonPrefixes);
    if (!page.isTruncated) break;
    keyMarker = page.nextKeyMarker ?? '';
    uploadIdMarker = page.nextUploadIdMarker ?? '';
  }
  t.same(seen, ['a/', `b#${ids[2]}`, `b#${ids[3]}`, 'c/', `d#${ids[5]}`]);

  const afterKey = multipart.listUploads(bucketId, { prefix: '', delimiter: '', keyMarker: 'b', uploadIdMarker: '', maxUploads: 1000 });
  t.same(afterKey.uploads.map((u) => u.key), ['c/x/y', 'd'], 'a key marker alone skips that key');
  const afterUpload = multipart.listUploads(bucketId, { prefix: '', delimiter: '', keyMarker: 'b', uploadIdMarker: ids[2] as string, maxUploads: 1000 });
  t.same(afterUpload.uploads.map((u) => u.uploadId), ids.slice(3), 'key and upload id markers resume inside the key');
});
