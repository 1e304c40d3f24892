// The version bookkeeping of ObjectsRepo and ObjectVersionsRepo on a real database: which row is
// current, what moves to object_versions, which blobs a write or delete releases, and that the blob
// collector's and the scrub's reference sets see noncurrent versions.
import t from 'tap';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import type { ObjectRecord } from '../../src/db/repos/objects.js';
import { isVersionId } from '../../src/db/repos/object-versions.js';
import { newInlineBlobId } from '../../src/storage/blob-id.js';
import { tempDir } from '../helpers/temp-data.js';
import { userRow } from '../helpers/users.js';

function fresh(t: { teardown(fn: () => void): void }): { repos: Repos; bucketId: string } {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const repos = createRepos(db);
  const user = userRow(db, 'u');
  return { repos, bucketId: repos.buckets.insert({ name: 'b', ownerId: user.id, region: 'us-east-1' }).id };
}

function rec(bucketId: string, key: string, blobId: string, extra: Partial<ObjectRecord> = {}): ObjectRecord {
  return {
    bucketId, key, blobId, size: 1, etag: `"${blobId}"`, sha256: '', checksumAlgorithm: null, checksumValue: null, checksumType: null,
    contentType: null, contentEncoding: null, contentDisposition: null, contentLanguage: null, cacheControl: null, expires: null,
    userMetadata: {}, lastModified: 1000, blobCrc32c: 7, ...extra,
  };
}

function listed(repos: Repos, bucketId: string): Array<[string, string, boolean, boolean]> {
  return repos.objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: '', maxKeys: 1000 }).entries
    .map((e) => [e.key, e.deleteMarker ? 'marker' : e.etag.replace(/"/g, ''), e.isLatest, e.versionId === null]);
}

t.test('never versioned: writes replace in place, release the old blob, no version ids', async (t) => {
  const { repos, bucketId } = fresh(t);
  t.same(repos.objects.put(rec(bucketId, 'k', 'b1')), { replaced: [] });
  t.same(repos.objects.put(rec(bucketId, 'k', 'b2')), { replaced: ['b1'] }, 'the replaced blob goes');
  t.same(repos.objects.delete(bucketId, 'k'), { existed: true, blobIds: ['b2'] });
  t.equal(repos.objects.versions.hasAny(bucketId), false, 'nothing kept');
});

t.test('Enabled: overwrites and deletes keep versions; deleting by id promotes the newest', async (t) => {
  const { repos, bucketId } = fresh(t);
  repos.objects.put(rec(bucketId, 'k', 'b0'));
  repos.buckets.setVersioning(bucketId, 'Enabled');
  const w1 = repos.objects.put(rec(bucketId, 'k', 'b1'));
  t.same(w1.replaced, [], 'nothing released: the null version is kept');
  t.ok(w1.versionId && isVersionId(w1.versionId), 'a new version id');
  const w2 = repos.objects.put(rec(bucketId, 'k', 'b2'));
  t.same(listed(repos, bucketId), [['k', 'b2', true, false], ['k', 'b1', false, false], ['k', 'b0', false, true]]);
  t.same(repos.blobRefs.referenced(), new Set(['b0', 'b1', 'b2']), 'the collector sees every version\'s blob');
  const toCheck = repos.integrity.blobsToCheck().sort((x, y) => x.blobId.localeCompare(y.blobId));
  t.same(toCheck.map((b) => b.blobId), ['b0', 'b1', 'b2'], 'the scrub checks noncurrent versions too');
  t.match(toCheck[0]?.owner, /^object b\/k version null$/, 'named by version');

  const del = repos.objects.delete(bucketId, 'k', 5000);
  t.match(del, { existed: true, blobIds: [], deleteMarker: true });
  t.equal(repos.objects.get(bucketId, 'k'), undefined, 'no current row under a delete marker');
  t.same(repos.objects.versions.latestDeleteMarker(bucketId, 'k'), { versionId: del.versionId, lastModified: 5000 });
  t.same(repos.objects.getVersion(bucketId, 'k', del.versionId ?? ''), { deleteMarker: true, versionId: del.versionId, lastModified: 5000 });

  const removed = repos.objects.deleteVersion(bucketId, 'k', del.versionId ?? '');
  t.match(removed, { existed: true, blobIds: [], deleteMarker: true }, 'removing a marker frees nothing');
  t.equal(repos.objects.get(bucketId, 'k')?.blobId, 'b2', 'the newest version is current again');
  t.equal(repos.objects.get(bucketId, 'k')?.versionId, w2.versionId);

  t.same(repos.objects.deleteVersion(bucketId, 'k', w2.versionId ?? ''), { existed: true, blobIds: ['b2'], versionId: w2.versionId, deleteMarker: false }, 'the current version removed for good');
  t.equal(repos.objects.get(bucketId, 'k')?.blobId, 'b1', 'the previous version promoted');
  t.same(repos.objects.deleteVersion(bucketId, 'k', null), { existed: true, blobIds: ['b0'], versionId: 'null', deleteMarker: false }, 'a noncurrent version removed');
  t.same(repos.objects.deleteVersion(bucketId, 'k', 'Z'.repeat(32)), { existed: false, blobIds: [], versionId: 'Z'.repeat(32) }, 'a missing version');
  t.same(repos.blobRefs.referenced(), new Set(['b1']));

  t.equal(repos.buckets.delete(bucketId), 'not_empty');
  repos.objects.delete(bucketId, 'k');
  t.equal(repos.buckets.delete(bucketId), 'not_empty', 'a delete marker and a noncurrent version still hold the bucket');
  for (const e of repos.objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: '', maxKeys: 1000 }).entries) {
    repos.objects.deleteVersion(bucketId, e.key, e.versionId);
  }
  t.equal(repos.buckets.delete(bucketId), 'deleted');
});

t.test('Suspended: the null version is replaced wherever it is; inline blobs follow their rows', async (t) => {
  const { repos, bucketId } = fresh(t);
  repos.buckets.setVersioning(bucketId, 'Enabled');
  const inline0 = newInlineBlobId();
  repos.objects.put(rec(bucketId, 'k', inline0), undefined, Buffer.from('0'));
  repos.buckets.setVersioning(bucketId, 'Suspended');
  const inline1 = newInlineBlobId();
  t.same(repos.objects.put(rec(bucketId, 'k', inline1), undefined, Buffer.from('1')), { replaced: [], versionId: 'null' }, 'the versioned one is kept');
  t.ok(repos.objects.inlineData(inline0), 'a noncurrent inline version keeps its bytes');
  t.same(repos.objects.put(rec(bucketId, 'k', 'b2')), { replaced: [], versionId: 'null' }, 'the null version replaced in place');
  t.equal(repos.objects.inlineData(inline1), undefined, 'and its inline bytes went with it');
  const del = repos.objects.delete(bucketId, 'k');
  t.same(del, { existed: true, blobIds: ['b2'], versionId: 'null', deleteMarker: true }, 'DELETE: the null version goes, a null marker comes');
  t.same(listed(repos, bucketId).map((e) => [e[1], e[2], e[3]]), [['marker', true, true], [`${inline0}`, false, false]]);
  repos.buckets.setVersioning(bucketId, 'Enabled');
  repos.objects.put(rec(bucketId, 'k', 'b3'));
  repos.buckets.setVersioning(bucketId, 'Suspended');
  t.same(repos.objects.put(rec(bucketId, 'k', 'b4')).replaced, [], 'the null marker dropped, nothing to release');
  t.same(listed(repos, bucketId).map((e) => [e[1], e[2], e[3]]), [['b4', true, true], ['b3', false, false], [`${inline0}`, false, false]]);
});

t.test('setTagging: one version by id, current or noncurrent; never a delete marker; nothing moves', async (t) => {
  const { repos, bucketId } = fresh(t);
  repos.objects.put(rec(bucketId, 'k', 'b0', { tagging: [['a', '1']] }));
  repos.buckets.setVersioning(bucketId, 'Enabled');
  const v1 = repos.objects.put(rec(bucketId, 'k', 'b1')).versionId ?? '';
  const before = listed(repos, bucketId);
  const tagsOf = (id: string | null): unknown => {
    const found = repos.objects.getVersion(bucketId, 'k', id);
    return found && !found.deleteMarker ? (found.rec.tagging ?? []) : 'marker';
  };
  t.equal(repos.objects.setTagging(bucketId, 'k', null, [['n', 'x']]), true, 'the noncurrent "null" version');
  t.equal(repos.objects.setTagging(bucketId, 'k', v1, [['c', 'y']]), true, 'the current version');
  t.same([tagsOf(null), tagsOf(v1)], [[['n', 'x']], [['c', 'y']]], 'each version got its own tags');
  t.equal(repos.objects.setTagging(bucketId, 'k', null, undefined), true);
  t.same(tagsOf(null), [], 'tags removed');
  t.same(listed(repos, bucketId), before, 'no version moved');
  const marker = repos.objects.delete(bucketId, 'k', 5000).versionId ?? '';
  t.equal(repos.objects.setTagging(bucketId, 'k', marker, [['m', '1']]), false, 'a delete marker has no tags');
  t.equal(repos.objects.setTagging(bucketId, 'k', 'Z'.repeat(32), []), false, 'an unknown version');
  t.same(tagsOf(v1), [['c', 'y']], 'a version behind the marker keeps its tags');
});

t.test('ListObjectVersions walk: markers, delimiter, truncation', async (t) => {
  const { repos, bucketId } = fresh(t);
  repos.buckets.setVersioning(bucketId, 'Enabled');
  for (const key of ['a', 'a', 'd/x', 'd/y', 'e']) repos.objects.put(rec(bucketId, key, `${key}-${Math.random()}`));
  repos.objects.delete(bucketId, 'e');
  const all = repos.objects.versions.list(bucketId, { prefix: '', delimiter: '', keyMarker: '', maxKeys: 1000 });
  t.same(all.entries.map((e) => [e.key, e.deleteMarker, e.isLatest]), [['a', false, true], ['a', false, false], ['d/x', false, true], ['d/y', false, true], ['e', true, true], ['e', false, false]]);
  const rolled = repos.objects.versions.list(bucketId, { prefix: '', delimiter: '/', keyMarker: '', maxKeys: 2 });
  t.same([rolled.entries.map((e) => e.key), rolled.commonPrefixes, rolled.isTruncated], [['a', 'a'], [], true]);
  const next = repos.objects.versions.list(bucketId, { prefix: '', delimiter: '/', keyMarker: rolled.nextKeyMarker ?? '', versionIdMarker: rolled.nextVersionIdMarker, maxKeys: 2 });
  t.same([next.entries.map((e) => e.key), next.commonPrefixes, next.isTruncated, next.nextKeyMarker], [['e'], ['d/'], true, 'e']);
  const fromPrefix = repos.objects.versions.list(bucketId, { prefix: '', delimiter: '/', keyMarker: 'd/', maxKeys: 10 });
  t.same(fromPrefix.entries.map((e) => [e.key, e.deleteMarker]), [['e', true], ['e', false]], 'a key-marker that is a common prefix skips it');
});
