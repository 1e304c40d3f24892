// What the row cache's tests (test/contract/metadata-cache.test.ts on PostgreSQL, test/unit/sqlite-row-cache.test.ts
// on SQLite) share: small objects written and read through the repositories of two stores on one
// database (two nodes, or two workers), and the read-after-write checks both caches must pass.
import type { Test } from 'tap';
import type { Repos } from '../../src/db/repos/index.js';
import type { ObjectRecord } from '../../src/db/repos/objects.js';
import { newInlineBlobId } from '../../src/storage/blob-id.js';

/** A store's repositories: a node, or a worker. */
export interface Reader {
  repos: Repos;
}

/** A small object's record whose ETag is its body. */
export function inlineRec(bucketId: string, key: string, etag: string): ObjectRecord {
  return {
    bucketId, key, blobId: newInlineBlobId(), size: etag.length, etag, sha256: 's', checksumAlgorithm: null, checksumValue: null,
    checksumType: null, contentType: 'text/plain', contentEncoding: null, contentDisposition: null, contentLanguage: null,
    cacheControl: null, expires: null, userMetadata: {}, lastModified: 1000,
  };
}

export async function putInline(n: Reader, bucketId: string, key: string, body: string): Promise<void> {
  await n.repos.objects.put(inlineRec(bucketId, key, body), undefined, Buffer.from(body));
}

export async function inlineBody(n: Reader, bucketId: string, key: string): Promise<string | undefined> {
  return (await n.repos.objects.getWithInline(bucketId, key))?.inline?.toString();
}

/**
 * With both caches warm for the key each time: 50 overwrites alternating between `a` and `b`, each read
 * by the other at once (the row with its bytes, and the record alone, as the CDN reads it); 10 keys made
 * and deleted by `a`, gone for `b` at once; a cached "no such key" dropped when `a` makes the key.
 */
export async function readsAfterWrites(t: Test, a: Reader, b: Reader, bucketId: string): Promise<void> {
  for (let i = 1; i <= 50; i++) {
    const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
    // Both warm for the key: the reader's entry must go before the writer's put resolves.
    await inlineBody(reader, bucketId, 'k');
    await inlineBody(writer, bucketId, 'k');
    await putInline(writer, bucketId, 'k', `v${i}`);
    t.equal(await inlineBody(reader, bucketId, 'k'), `v${i}`, `write ${i} read on the other side at once`);
    t.equal(await inlineBody(writer, bucketId, 'k'), `v${i}`, 'and by the writer');
    t.equal((await reader.repos.objects.get(bucketId, 'k'))?.etag, `v${i}`, 'the record alone (the CDN read) too');
  }
  for (let i = 0; i < 10; i++) {
    await putInline(a, bucketId, `d${i}`, 'x');
    t.equal(await inlineBody(b, bucketId, `d${i}`), 'x');
    t.same(await a.repos.objects.delete(bucketId, `d${i}`), { existed: true, blobIds: [] });
    t.equal(await b.repos.objects.getWithInline(bucketId, `d${i}`), undefined, `delete ${i}: gone on the other side`);
  }
  t.equal(await inlineBody(b, bucketId, 'later'), undefined);
  await putInline(a, bucketId, 'later', 'now');
  t.equal(await inlineBody(b, bucketId, 'later'), 'now', 'a cached "no such key" goes when the key is made');
}

/**
 * The bucket named 'shared' (id `bucketId`) made public and versioned by `a`, and a bucket made and
 * deleted by `a`: each seen by `b` at once, though `b` reads buckets by name through its cache.
 */
export async function bucketChangesSeen(t: Test, a: Reader, b: Reader, bucketId: string): Promise<void> {
  t.equal((await b.repos.buckets.getByName('shared'))?.public, false);
  t.equal(b.repos.buckets.cachedReads, true);
  await a.repos.buckets.setPublic(bucketId, true);
  t.equal((await b.repos.buckets.getByName('shared'))?.public, true);
  await a.repos.buckets.setVersioning(bucketId, 'Enabled');
  t.equal((await b.repos.buckets.getByName('shared'))?.versioning, 'Enabled');
  t.equal(await b.repos.buckets.getByName('fresh'), undefined);
  const owner = (await a.repos.buckets.getByName('shared'))?.ownerId as string;
  const fresh = await a.repos.buckets.insert({ name: 'fresh', ownerId: owner, region: 'us-east-1' });
  t.equal((await b.repos.buckets.getByName('fresh'))?.id, fresh.id, 'a cached miss goes when the bucket is made');
  t.equal(await a.repos.buckets.delete(fresh.id), 'deleted');
  t.equal(await b.repos.buckets.getByName('fresh'), undefined, 'deleted by A: gone for B');
}
