// Listing semantics of the objects repository against a real SQLite database.
import t from 'tap';
import { openDatabase } from '../../src/db/open.js';
import { newInlineBlobId } from '../../src/storage/blob-id.js';
import { createRepos } from '../../src/db/repos/index.js';
import { ObjectsRepo, prefixUpperBound, type ObjectRecord } from '../../src/db/repos/objects.js';
import { userRow } from '../helpers/users.js';

function setup(keys: string[]): { objects: ObjectsRepo; bucketId: string } {
  const db = openDatabase(':memory:');
  const repos = createRepos(db);
  const user = userRow(db, 'u');
  const bucket = repos.buckets.insert({ name: 'b', ownerId: user.id, region: 'us-east-1' });
  const objects = new ObjectsRepo(db);
  for (const key of keys) objects.put(record(bucket.id, key));
  return { objects, bucketId: bucket.id };
}

function record(bucketId: string, key: string, blobId = `blob${key.length}`): ObjectRecord {
  return {
    bucketId, key, blobId, size: key.length, etag: '"e"', sha256: 's', checksumAlgorithm: null, checksumValue: null,
    checksumType: null, contentType: null, contentEncoding: null, contentDisposition: null, contentLanguage: null,
    cacheControl: null, expires: null, userMetadata: { a: 'b' }, lastModified: 1000,
  };
}

/** Pages through a listing the way a client does, collecting every key and common prefix. */
function walk(objects: ObjectsRepo, bucketId: string, prefix: string, delimiter: string, maxKeys: number): string[] {
  const out: string[] = [];
  let after = '';
  for (let pages = 0; pages < 1000; pages++) {
    const page = objects.list(bucketId, { prefix, delimiter, after, maxKeys });
    out.push(...page.contents.map((c) => c.key), ...page.commonPrefixes.map((p) => `CP:${p}`));
    if (!page.isTruncated) return out;
    after = page.last as string;
  }
  throw new Error('listing did not end');
}

const KEYS = ['a', 'a/1', 'a/2', 'a/b/1', 'a/b/2', 'b', 'c/1', 'c/2', 'c/3', 'd', 'é', 'z/ü', '\u{1F600}', 'Z'];

t.test('keys come back in UTF-8 byte order', async (t) => {
  const { objects, bucketId } = setup(KEYS);
  const keys = objects.list(bucketId, { prefix: '', delimiter: '', after: '', maxKeys: 1000 }).contents.map((c) => c.key);
  const byteOrder = [...KEYS].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  t.same(keys, byteOrder);
});

t.test('prefix, delimiter and paging give the same answer at every page size', async (t) => {
  const { objects, bucketId } = setup(KEYS);
  const whole = walk(objects, bucketId, '', '/', 1000);
  t.same(whole.filter((k) => !k.startsWith('CP:')), ['Z', 'a', 'b', 'd', 'é', '\u{1F600}']);
  t.same(whole.filter((k) => k.startsWith('CP:')), ['CP:a/', 'CP:c/', 'CP:z/']);
  for (const size of [1, 2, 3, 5]) {
    t.same(walk(objects, bucketId, '', '/', size).sort(), [...whole].sort(), `maxKeys ${size}`);
    t.same(walk(objects, bucketId, 'a/', '/', size).sort(), ['a/1', 'a/2', 'CP:a/b/'].sort(), `prefix a/ maxKeys ${size}`);
    t.same(walk(objects, bucketId, 'c', '', size), ['c/1', 'c/2', 'c/3'], `prefix c maxKeys ${size}`);
  }
});

t.test('a common prefix counts once toward max-keys and truncation is exact', async (t) => {
  const { objects, bucketId } = setup(KEYS);
  const p = objects.list(bucketId, { prefix: '', delimiter: '/', after: '', maxKeys: 3 });
  t.same(p.contents.map((c) => c.key), ['Z', 'a']);
  t.same(p.commonPrefixes, ['a/']);
  t.equal(p.isTruncated, true);
  t.equal(p.last, 'a/');
  const next = objects.list(bucketId, { prefix: '', delimiter: '/', after: 'a/', maxKeys: 3 });
  t.same(next.contents.map((c) => c.key), ['b', 'd']);
  t.same(next.commonPrefixes, ['c/']);
  const exact = objects.list(bucketId, { prefix: 'c/', delimiter: '', after: '', maxKeys: 3 });
  t.equal(exact.isTruncated, false, 'exactly maxKeys left is not truncated');
  t.same(objects.list(bucketId, { prefix: '', delimiter: '', after: '', maxKeys: 0 }).contents, []);
});

t.test('put replaces and reports the old blob; delete reports the blob', async (t) => {
  const { objects, bucketId } = setup([]);
  t.same(objects.put(record(bucketId, 'k', 'one')).replaced, []);
  t.same(objects.put(record(bucketId, 'k', 'two')).replaced, ['one']);
  t.equal(objects.get(bucketId, 'k')?.blobId, 'two');
  t.same(objects.get(bucketId, 'k')?.userMetadata, { a: 'b' });
  t.same(objects.delete(bucketId, 'k'), { existed: true, blobIds: ['two'] });
  t.same(objects.delete(bucketId, 'k'), { existed: false, blobIds: [] });
  t.equal(objects.count(bucketId), 0);
});

t.test('an inline body is stored with its row and goes with it, in the same transaction', async (t) => {
  const { objects, bucketId } = setup([]);
  const small = record(bucketId, 'k', newInlineBlobId());
  t.same(objects.put(small, undefined, Buffer.from('tiny')).replaced, []);
  t.equal(objects.inlineData(small.blobId)?.toString(), 'tiny');
  // Replacing an inline version by a file version: the inline bytes go now, nothing is left to remove.
  t.same(objects.put(record(bucketId, 'k', 'file1')).replaced, []);
  t.equal(objects.inlineData(small.blobId), undefined);
  // And back: the file blob is reported for removal.
  const again = record(bucketId, 'k', newInlineBlobId());
  t.same(objects.put(again, undefined, Buffer.from('again')).replaced, ['file1']);
  // A refused write keeps neither the row nor its inline bytes.
  const refused = record(bucketId, 'k', newInlineBlobId());
  t.throws(() => objects.put(refused, () => { throw new Error('no'); }, Buffer.from('x')), /no/);
  t.equal(objects.inlineData(refused.blobId), undefined);
  t.equal(objects.inlineData(again.blobId)?.toString(), 'again');
  t.same(objects.delete(bucketId, 'k'), { existed: true, blobIds: [] }, 'an inline object has no backend blob');
  t.equal(objects.inlineData(again.blobId), undefined);
});

t.test('prefixUpperBound is above every key with the prefix', async (t) => {
  t.equal(prefixUpperBound('a/'), 'a0');
  t.ok(Buffer.compare(Buffer.from('a/\u{10FFFF}zzz'), Buffer.from(prefixUpperBound('a/'))) < 0);
  t.equal(prefixUpperBound('x\uffff'), 'x\uffff\u{10FFFF}');
});
