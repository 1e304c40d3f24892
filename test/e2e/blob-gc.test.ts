// The unreferenced-blob collector (src/storage/blob-gc.ts) on real servers:
//  - disk: blob files a crash left behind (renamed into place, never committed) are removed by the
//    pass at start-up, however young: every one from before the process started; an orphan written
//    since (it may be another worker's commit in flight) waits out the grace; every object (single,
//    multipart manifest) and asset still reads back; the metrics count what was removed;
//  - disk: kill -9 of the server during uploads (their bytes half-written in tmp/), then a start:
//    nothing of them is left, and every object written before reads back;
//  - upstream S3 (moto): an orphan object under <prefix>blobs/ is removed by a periodic pass, the
//    gateway's own blobs stay.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
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

t.test('disk: crash leftovers from before the start are collected at start-up; nothing referenced is, nor a younger orphan', async (t) => {
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
  // Written after the server started: to the collector it may be a worker's commit in flight.
  const since = orphanFile(dataDir, 0);
  const token = alice.token;
  await eventually(async () => (await metricValue(second, token, 's3edge_blob_gc_runs_total')) >= 1, 'the start-up pass ran');
  t.notOk(existsSync(old.path), 'an orphan two hours old is gone');
  t.notOk(existsSync(older.path), 'a month-old orphan is gone');
  t.notOk(existsSync(fresh.path), 'an orphan a minute old, from before the start, is gone too (no writer of this server is that old)');
  t.ok(existsSync(since.path), 'an orphan written since the start, within the grace period, stays');
  t.equal(await metricValue(second, token, 's3edge_blob_gc_collected_total'), 3, 'counted');
  t.equal(await metricValue(second, token, 's3edge_blob_gc_collected_bytes_total'), old.size + older.size + fresh.size, 'bytes counted');
  const s3b = new RawS3({ url: second.url }, second.rootKey);
  t.ok((await s3b.getObject('keep', 'single.bin')).body.equals(single), 'the single-blob object reads back');
  t.ok((await s3b.getObject('keep', 'multi.bin')).body.equals(part), 'the multipart object reads back');
  const again = await fetch(`${second.url}/api/v3/cdn/assets/${asset.id}/download`, { headers: { authorization: `Bearer ${token}` } });
  t.ok(Buffer.from(await again.arrayBuffer()).equals(assetBytes), 'the asset downloads');
});

t.test('disk: kill -9 during uploads, then a start: nothing of them is left', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const first = await startServer({ dataDir });
  const s3 = new RawS3({ url: first.url }, first.rootKey);
  t.equal((await s3.createBucket('crash')).status, 200);
  const kept = randomBytes(BIG);
  t.equal((await s3.putObject('crash', 'kept.bin', kept)).status, 200);
  const blobsBefore = blobFiles(dataDir);
  // Three uploads of 8 MiB, each cut after its first 1 MiB reached the server: their bytes are in tmp/.
  const SIZE = 8 * 1024 * 1024;
  const sockets: Socket[] = [];
  for (let i = 0; i < 3; i++) {
    const signed = await s3.sign({ method: 'PUT', bucket: 'crash', key: `cut-${i}.bin`, headers: { 'content-length': String(SIZE) }, payloadHash: 'UNSIGNED-PAYLOAD' });
    const url = new URL(first.url);
    const socket = connect(Number(url.port), url.hostname);
    socket.on('error', () => undefined);
    sockets.push(socket);
    const head = `PUT ${signed.target} HTTP/1.1\r\n${signed.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
    socket.write(head);
    socket.write(randomBytes(1024 * 1024));
  }
  await eventually(() => tmpFiles(dataDir) >= 3, 'the uploads are being written', 10_000);
  first.kill('SIGKILL');
  await first.exited;
  for (const s of sockets) s.destroy();
  t.ok(tmpFiles(dataDir) >= 3, 'the killed server left its half-written uploads');

  const second = await startServer({ dataDir });
  t.teardown(() => second.stop());
  await eventually(() => tmpFiles(dataDir) === 0, 'the half-written uploads are removed at start', 10_000);
  await eventually(() => blobFiles(dataDir) === blobsBefore, 'no blob beyond the ones rows name', 10_000);
  const s3b = new RawS3({ url: second.url }, second.rootKey);
  t.ok((await s3b.getObject('crash', 'kept.bin')).body.equals(kept), 'the object written before reads back');
  for (let i = 0; i < 3; i++) t.equal((await s3b.getObject('crash', `cut-${i}.bin`)).status, 404, `cut-${i}.bin was never stored`);
  t.equal((await s3b.putObject('crash', 'after.bin', kept)).status, 200, 'a new upload goes through');
});

function tmpFiles(dataDir: string): number {
  return readdirSync(join(dataDir, 'storage', 'tmp')).length;
}

function blobFiles(dataDir: string): number {
  const dir = join(dataDir, 'storage', 'blobs');
  let n = 0;
  for (const sub of readdirSync(dir)) n += readdirSync(join(dir, sub)).length;
  return n;
}

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
