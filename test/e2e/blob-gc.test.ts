// The unreferenced-blob collector (src/storage/blob-gc.ts) on real servers:
//  - disk: blob files a crash left behind (renamed into place, never committed) are removed by the
//    pass at start-up once older than the grace period; a younger one stays; every object (single,
//    multipart manifest) and asset still reads back; the metrics count what was removed;
//  - upstream S3 (moto): an orphan object under <prefix>blobs/ is removed by a periodic pass, the
//    gateway's own blobs stay.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { apiUser, eventually, metricValue } from '../helpers/api.js';
import { listKeys } from '../helpers/moto.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';
import { newBlobId } from '../../src/storage/blob-id.js';
import { S3Storage } from '../../src/storage/upstream/s3-storage.js';

const BIG = 100 * 1024; // past the 64 KiB inline limit: the bytes are a blob of the backend

function orphanFile(dataDir: string, ageMs: number): { path: string; size: number } {
  const id = newBlobId();
  const dir = join(dataDir, 'storage', 'blobs', id.slice(-2));
  mkdirSync(dir, { recursive: true });
  const path = join(dir, id);
  const size = 4096 + Math.floor(Math.random() * 1000);
  writeFileSync(path, randomBytes(size));
  const when = new Date(Date.now() - ageMs);
  utimesSync(path, when, when);
  return { path, size };
}

t.test('disk: crash leftovers older than the grace period are collected at start-up; nothing referenced is', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const first = await startServer({ dataDir });
  const s3 = new RawS3({ url: first.url }, first.rootKey);
  t.equal((await s3.createBucket('keep')).status, 200);
  const single = randomBytes(BIG);
  t.equal((await s3.putObject('keep', 'single.bin', single)).status, 200);
  const created = await s3.send({ method: 'POST', bucket: 'keep', key: 'multi.bin', query: { uploads: '' } });
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)?.[1] ?? '';
  const part = randomBytes(BIG);
  const uploaded = await s3.send({ method: 'PUT', bucket: 'keep', key: 'multi.bin', query: { partNumber: '1', uploadId }, body: part });
  const etag = uploaded.headers['etag'] ?? '';
  const done = Buffer.from(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${etag}</ETag></Part></CompleteMultipartUpload>`);
  t.equal((await s3.send({ method: 'POST', bucket: 'keep', key: 'multi.bin', query: { uploadId }, body: done })).status, 200, 'a multipart object');
  const alice = await apiUser(first, ['assets:read', 'assets:write', 'metrics:read']);
  const assetBytes = randomBytes(BIG);
  const asset = await alice.client.upload({ file: assetBytes, fileName: 'a.bin' });
  await first.stop();

  const old = orphanFile(dataDir, 2 * 3600 * 1000);
  const older = orphanFile(dataDir, 30 * 24 * 3600 * 1000);
  const fresh = orphanFile(dataDir, 60 * 1000);

  const second = await startServer({ dataDir });
  t.teardown(() => second.stop());
  const token = alice.token;
  await eventually(async () => (await metricValue(second, token, 's3edge_blob_gc_runs_total')) >= 1, 'the start-up pass ran');
  t.notOk(existsSync(old.path), 'an orphan two hours old is gone');
  t.notOk(existsSync(older.path), 'a month-old orphan is gone');
  t.ok(existsSync(fresh.path), 'an orphan within the grace period (a commit that may be in flight) stays');
  t.equal(await metricValue(second, token, 's3edge_blob_gc_collected_total'), 2, 'counted');
  t.equal(await metricValue(second, token, 's3edge_blob_gc_collected_bytes_total'), old.size + older.size, 'bytes counted');
  const s3b = new RawS3({ url: second.url }, second.rootKey);
  t.ok((await s3b.getObject('keep', 'single.bin')).body.equals(single), 'the single-blob object reads back');
  t.ok((await s3b.getObject('keep', 'multi.bin')).body.equals(part), 'the multipart object reads back');
  const again = await fetch(`${second.url}/api/v3/cdn/assets/${asset.id}/download`, { headers: { authorization: `Bearer ${token}` } });
  t.ok(Buffer.from(await again.arrayBuffer()).equals(assetBytes), 'the asset downloads');
});

t.test('upstream S3: an orphan object under the prefix is collected by a periodic pass', async (t) => {
  const server = await startServer({ upstream: true, env: { S3EDGE_INTEGRITY_GC_GRACE_SECONDS: '1', S3EDGE_INTEGRITY_GC_INTERVAL_SECONDS: '1' } });
  t.teardown(() => server.stop());
  const moto = server.moto;
  if (!moto) throw new Error('no upstream');
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  t.equal((await s3.createBucket('upstream-gc')).status, 200);
  const body = randomBytes(BIG);
  t.equal((await s3.putObject('upstream-gc', 'kept.bin', body)).status, 200);
  const kept = await listKeys(moto);
  t.equal(kept.length, 1, 'the object is one upstream blob');

  // A crash after the upstream PUT and before the metadata commit: a blob nobody references.
  const side = new S3Storage(moto.storageOptions('gw/'));
  const staged = await side.stage(Readable.from([randomBytes(2048)]));
  await staged.commit();
  await side.close();
  t.equal((await listKeys(moto)).length, 2, 'the orphan is there');
  await eventually(async () => (await listKeys(moto)).length === 1, 'the orphan was collected', 20_000);
  t.same(await listKeys(moto), kept, 'the gateway\'s own blob stays');
  t.ok((await s3.getObject('upstream-gc', 'kept.bin')).body.equals(body), 'and still reads back');
});
