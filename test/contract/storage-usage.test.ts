// Stored bytes counted by migration 027's triggers, on both metadata stores: objects, overwrites,
// noncurrent versions and delete markers, parts (overwritten, completed into an object, aborted, and
// cascaded away with their bucket in either order), assets; and what the counters read equals a sum of
// the rows themselves after all of it.
import t from 'tap';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import type { SqlExecutor } from '../../src/db/store/types.js';
import { storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);

async function bucket(db: SqlExecutor, id: string, owner: string): Promise<void> {
  await db.run('INSERT INTO buckets (id, name, owner_id, region, created_at) VALUES (?, ?, ?, ?, 0)', [id, `b-${id}`, owner, 'us-east-1']);
}
async function putObject(db: SqlExecutor, bucketId: string, key: string, size: number): Promise<void> {
  await db.run(
    `INSERT INTO objects (bucket_id, key, blob_id, size, etag, sha256, last_modified) VALUES (?, ?, 'blob', ?, 'e', 's', 0)
     ON CONFLICT (bucket_id, key) DO UPDATE SET size = excluded.size`,
    [bucketId, key, size],
  );
}
async function version(db: SqlExecutor, bucketId: string, key: string, ord: number, size: number): Promise<void> {
  await db.run('INSERT INTO object_versions (bucket_id, key, ord, blob_id, size, etag, sha256, last_modified) VALUES (?, ?, ?, ?, ?, ?, ?, 0)', [
    bucketId, key, ord, size === 0 ? '' : 'blob', size, size === 0 ? '' : 'e', '',
  ]);
}
async function upload(db: SqlExecutor, id: string, bucketId: string): Promise<void> {
  await db.run('INSERT INTO multipart_uploads (upload_id, bucket_id, key, owner_id, initiated) VALUES (?, ?, ?, ?, 0)', [id, bucketId, `k-${id}`, 'x']);
}
async function part(db: SqlExecutor, uploadId: string, n: number, size: number): Promise<void> {
  await db.run(
    `INSERT INTO multipart_parts (upload_id, part_number, blob_id, size, etag, last_modified) VALUES (?, ?, ?, ?, 'e', 0)
     ON CONFLICT (upload_id, part_number) DO UPDATE SET size = excluded.size`,
    [uploadId, n, `p-${uploadId}-${n}`, size],
  );
}
async function asset(db: SqlExecutor, id: string, userId: string, size: number): Promise<void> {
  await db.run(
    `INSERT INTO assets (id, user_id, blob_id, file_name, content_type, size, sha256, etag, visibility, kind, created_at, updated_at)
     VALUES (?, ?, 'blob', 'f', 'text/plain', ?, 's', 'e', 'public', 'file', 0, 0)`,
    [id, userId, size],
  );
}

/** The bucket's bytes summed from its rows, to hold the counter against. */
async function summed(db: SqlExecutor, bucketId: string): Promise<number> {
  const row = await db.get<{ n: number }>(
    `SELECT (SELECT COALESCE(SUM(size), 0) FROM objects WHERE bucket_id = ?) + (SELECT COALESCE(SUM(size), 0) FROM object_versions WHERE bucket_id = ?)
      + (SELECT COALESCE(SUM(p.size), 0) FROM multipart_parts p JOIN multipart_uploads u ON u.upload_id = p.upload_id WHERE u.bucket_id = ?) AS n`,
    [bucketId, bucketId, bucketId],
  );
  return Number(row?.n ?? 0);
}

stores.each('every change to what a bucket stores moves its counter, and nothing else does', async (t, open) => {
  const db = await open(t);
  const repos: Repos = createRepos(db as never);
  const alice = (await repos.users.create('alice')).id;
  const bob = (await repos.users.create('bob')).id;
  await bucket(db, 'b1', alice);
  await bucket(db, 'b2', alice);
  await bucket(db, 'b3', bob);
  t.equal(await repos.storageUsage.bucketBytes('b1'), 0, 'a new bucket stores nothing');

  await putObject(db, 'b1', 'a', 100);
  await putObject(db, 'b1', 'b', 50);
  await putObject(db, 'b1', 'a', 70);
  t.equal(await repos.storageUsage.bucketBytes('b1'), 120, 'an overwrite counts its new size only');
  await db.run("UPDATE objects SET content_type = 'x' WHERE bucket_id = 'b1'");
  t.equal(await repos.storageUsage.bucketBytes('b1'), 120, 'a metadata change moves nothing');

  await version(db, 'b1', 'a', -1, 30);
  await version(db, 'b1', 'a', -2, 0);
  t.equal(await repos.storageUsage.bucketBytes('b1'), 150, 'a noncurrent version counts; a delete marker is 0');
  await db.run("DELETE FROM object_versions WHERE bucket_id = 'b1' AND ord = -1");
  await db.run("DELETE FROM objects WHERE bucket_id = 'b1' AND key = 'b'");
  t.equal(await repos.storageUsage.bucketBytes('b1'), 70);

  await upload(db, 'u1', 'b1');
  await part(db, 'u1', 1, 10);
  await part(db, 'u1', 2, 20);
  await part(db, 'u1', 2, 25);
  t.equal(await repos.storageUsage.bucketBytes('b1'), 105, 'parts count, a part uploaded again its new size');
  // A completion: parts claimed and deleted, the upload deleted, the object in.
  await db.run("UPDATE multipart_parts SET claimed = 1 WHERE upload_id = 'u1'");
  await db.run("DELETE FROM multipart_parts WHERE upload_id = 'u1'");
  await db.run("DELETE FROM multipart_uploads WHERE upload_id = 'u1'");
  await putObject(db, 'b1', 'big', 35);
  t.equal(await repos.storageUsage.bucketBytes('b1'), 105, 'completed: the parts became the object');

  // An abort that deletes the upload row and lets its parts cascade.
  await upload(db, 'u2', 'b1');
  await part(db, 'u2', 1, 7);
  await part(db, 'u2', 2, 8);
  await db.run("DELETE FROM multipart_uploads WHERE upload_id = 'u2'");
  t.equal(await repos.storageUsage.bucketBytes('b1'), 105, 'an upload deleted with its parts cascading takes its bytes once');
  // One part deleted first, then the upload.
  await upload(db, 'u3', 'b1');
  await part(db, 'u3', 1, 7);
  await part(db, 'u3', 2, 8);
  await db.run("DELETE FROM multipart_parts WHERE upload_id = 'u3' AND part_number = 1");
  t.equal(await repos.storageUsage.bucketBytes('b1'), 113);
  await db.run("DELETE FROM multipart_uploads WHERE upload_id = 'u3'");
  t.equal(await repos.storageUsage.bucketBytes('b1'), 105, 'parts first, then the upload: the same');
  t.equal(await repos.storageUsage.bucketBytes('b1'), await summed(db, 'b1'), 'the counter is the sum of the rows');

  await putObject(db, 'b2', 'x', 1000);
  await putObject(db, 'b3', 'y', 5);
  await asset(db, 'as1', alice, 400);
  await asset(db, 'as2', alice, 600);
  await asset(db, 'as3', bob, 1);
  t.equal(await repos.storageUsage.assetBytes(alice), 1000);
  t.equal(await repos.storageUsage.ownerBytes(alice), 105 + 1000 + 1000, 'a user stores their buckets and their assets');
  await db.run("DELETE FROM assets WHERE id = 'as1'");
  t.equal(await repos.storageUsage.ownerBytes(alice), 105 + 1000 + 600);
  t.same(await repos.storageUsage.allOwners(), [
    { ownerId: alice, bytes: 1705 },
    { ownerId: bob, bytes: 6 },
  ].sort((a, b) => (a.ownerId < b.ownerId ? -1 : 1)), 'every owner at once');

  // A bucket that goes takes its counter (and what cascades with it changes no other bucket).
  await upload(db, 'u4', 'b2');
  await part(db, 'u4', 1, 9);
  await db.run("DELETE FROM objects WHERE bucket_id = 'b2'");
  await db.run("DELETE FROM buckets WHERE id = 'b2'");
  t.equal(await repos.storageUsage.ownerBytes(alice), 105 + 600, 'a deleted bucket stores nothing');
  t.equal(await repos.storageUsage.bucketBytes('b1'), 105);
});
