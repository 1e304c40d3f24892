// A full disk, for real: the server's data directory on a small tmpfs (mounted here, so this file needs
// root, as CI has). Writes that hit ENOSPC (or SQLITE_FULL) answer 507 storage full on the S3 port and
// the management API, leave no temp file and no row behind, reads go on, and freeing space recovers.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ApiClientError } from '../../src/client/index.js';
import { apiUser, query, ResponseRecorder } from '../helpers/api.js';
import { CdnClient } from '../helpers/cdn.js';
import { RawS3, errorCode, randomData } from '../helpers/s3-client.js';
import { createMultipartUpload, uploadPart } from '../helpers/s3-ops.js';
import type { RawResponse } from '../helpers/raw-http.js';
import { startServer } from '../helpers/server.js';

const MiB = 1024 * 1024;
const BUCKET = 'full-disk';
// A fresh data dir takes well under 1 MiB (meta.db, its WAL and -shm); the rest is for objects.
const TMPFS_SIZE = '24m';

/** Mounts a tmpfs of `size`; without root (or where mounting is refused) the file fails saying so. */
function mountTmpfs(size: string): string {
  const dir = mkdtempSync(join(tmpdir(), 's3edge-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const uid = process.getuid?.();
    throw new Error(
      `storage-full.test needs root to mount a tmpfs (mount -t tmpfs -o size=${size} tmpfs DIR); running as uid ${uid ?? '?'}: ${(err as Error).message}`,
    );
  }
  return dir;
}

const mnt = mountTmpfs(TMPFS_SIZE);
const dataDir = join(mnt, 'data');
const server = await startServer({ dataDir, upstream: false }).catch((err: unknown) => {
  execFileSync('umount', [mnt]);
  throw err;
});
t.teardown(async () => {
  // The server first: its open files would keep the mount busy.
  await server.stop();
  execFileSync('umount', [mnt]);
  rmSync(mnt, { recursive: true, force: true });
});
const s3 = new RawS3({ url: server.url }, server.rootKey);

function tmpFiles(): string[] {
  return readdirSync(join(dataDir, 'storage', 'tmp'));
}

function assertStorageFull(t: Test, res: RawResponse, what: string): void {
  t.equal(res.status, 507, `${what}: 507 Insufficient Storage`);
  t.equal(errorCode(res), 'XS3edgeStorageFull', `${what}: code XS3edgeStorageFull`);
  t.match(res.text, /<Message>The storage backend is full\./, `${what}: the message says so`);
}

async function assertApiStorageFull(t: Test, p: Promise<unknown>, what: string): Promise<void> {
  try {
    await p;
    t.fail(`${what}: expected 507 storage_full, got success`);
  } catch (err) {
    if (!(err instanceof ApiClientError)) throw err;
    t.equal(err.status, 507, `${what}: 507`);
    t.match(err.body, { success: false, code: 'storage_full', message: String }, `${what}: JSON envelope with storage_full`);
  }
}

/** Fills what is left of the tmpfs with a file of our own, so even the metadata database cannot grow. */
function fillTheRest(file: string): number {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  let written = 0;
  try {
    for (;;) written += writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  return written;
}

const first = randomData(200 * 1024);
const small = randomData(1000);
const user = await apiUser(server, ['assets:read', 'assets:write']);
const cdn = new CdnClient(server, new ResponseRecorder(), 0);
// Public assets the CDN serves while the disk is full: one past the memory tier's entry limit (1 MiB),
// followed on disk by its fill, and one the memory tier keeps as well as the disk.
const bigAsset = randomData(MiB + MiB / 2);
const smallAsset = randomData(200 * 1024);
const cdnUrls = await Promise.all([bigAsset, smallAsset].map(async (file, i) => (await user.client.upload({ file, fileName: `cdn-${i}.bin` })).publicUrl));

t.test('the disk fills: uploads answer 507 storage full, nothing is left behind', async (t) => {
  t.equal((await s3.createBucket(BUCKET)).status, 200, 'bucket');
  t.equal((await s3.putObject(BUCKET, 'first', first)).status, 200, 'an object on disk before the disk fills');
  t.equal((await s3.putObject(BUCKET, 'small', small)).status, 200, 'and a small (inline) one');

  // Room kept for the metadata database, given back once the disk is full to the last byte: what a refused
  // 1 MiB upload happens to leave free (from nothing to almost 1 MiB) is not what the next steps rely on.
  const headroom = join(mnt, 'headroom');
  writeFileSync(headroom, Buffer.alloc(512 * 1024, 1));
  let full: RawResponse | undefined;
  let stored = 0;
  for (let i = 0; i < 40 && !full; i++) {
    const res = await s3.putObject(BUCKET, `filler-${i}`, randomData(MiB));
    if (res.status === 200) stored++;
    else full = res;
  }
  t.ok(stored > 10, `${stored} MiB stored before the disk was full`);
  if (!full) throw new Error('the disk never filled up');
  assertStorageFull(t, full, 'PutObject on a full disk');
  t.same(tmpFiles(), [], 'no temp file left in storage/tmp');
  const keys = await s3.listAllKeys(BUCKET);
  t.equal(keys.length, stored + 2, 'no object row for the refused upload');

  // Exactly half a MiB free: a row fits, a 1 MiB part or upload does not.
  fillTheRest(join(mnt, 'leftover'));
  rmSync(headroom);
  const mpu = await createMultipartUpload(s3, BUCKET, 'multi');
  t.equal(mpu.res.status, 200, 'CreateMultipartUpload still fits (a row, no bytes)');
  assertStorageFull(t, await uploadPart(s3, BUCKET, 'multi', mpu.uploadId ?? '', 1, randomData(MiB)), 'UploadPart on a full disk');
  t.same(tmpFiles(), [], 'no temp file left by the part');
  t.same(query(server, 'SELECT part_number FROM multipart_parts'), [], 'no part row');

  await assertApiStorageFull(t, user.client.upload({ file: randomData(MiB), fileName: 'big.bin' }), 'asset upload on a full disk');
  t.same(tmpFiles(), [], 'no temp file left by the asset upload');
  t.equal(query(server, 'SELECT id FROM assets').length, 2, 'no asset row for it');
});

t.test('nothing left at all: the metadata database cannot grow either', async (t) => {
  const written = fillTheRest(join(mnt, 'filler'));
  t.comment(`filler: ${written} bytes`);
  // Small objects go into the metadata database (inline): its WAL reuses the room it has, but the
  // checkpoints cannot grow meta.db, so the WAL must grow, and SQLite answers SQLITE_FULL.
  let full: RawResponse | undefined;
  let stored = 0;
  for (let i = 0; i < 60 && !full; i++) {
    const res = await s3.putObject(BUCKET, `inline-${i}`, randomData(60 * 1024));
    if (res.status === 200) stored++;
    else full = res;
  }
  t.comment(`${stored} inline objects stored with no byte free`);
  if (!full) throw new Error('the metadata database never filled up');
  assertStorageFull(t, full, 'inline PutObject when the metadata database is full');
  t.notOk((await s3.listAllKeys(BUCKET)).includes(`inline-${stored}`), 'no row for it');
  await assertApiStorageFull(t, user.client.upload({ file: randomData(100 * 1024), fileName: 'small.bin' }), 'asset upload with no byte free');
  t.same(tmpFiles(), [], 'no temp file left');
});

t.test('reads keep working while the disk is full', async (t) => {
  const got = await s3.getObject(BUCKET, 'first');
  t.equal(got.status, 200, 'GET of the earlier object');
  t.ok(got.body.equals(first), 'whole and byte-identical');
  const inline = await s3.getObject(BUCKET, 'small');
  t.ok(inline.status === 200 && inline.body.equals(small), 'the small object too');
  t.equal((await s3.headObject(BUCKET, 'filler-0')).status, 200, 'HEAD');
  // The CDN's disk tier (data/cdn-cache) cannot store them: answered whole all the same, just not cached.
  for (const [i, want] of [bigAsset, smallAsset].entries()) {
    for (const round of [1, 2]) {
      const res = await cdn.request(cdn.targetOf(cdnUrls[i] ?? ''));
      t.equal(res.status, 200, `CDN asset ${i}, request ${round}: 200`);
      t.ok(res.body.equals(want), `CDN asset ${i}, request ${round}: whole and byte-identical`);
    }
  }
});

t.test('freeing space: uploads succeed again', async (t) => {
  rmSync(join(mnt, 'filler'));
  rmSync(join(mnt, 'leftover'));
  t.equal((await s3.deleteObject(BUCKET, 'filler-0')).status, 204, 'DELETE an object');
  t.equal((await s3.deleteObject(BUCKET, 'filler-1')).status, 204, 'and another');
  const again = randomData(MiB);
  t.equal((await s3.putObject(BUCKET, 'after', again)).status, 200, 'a new 1 MiB PUT succeeds');
  t.ok((await s3.getObject(BUCKET, 'after')).body.equals(again), 'and reads back');
  const asset = await user.client.upload({ file: randomData(100 * 1024), fileName: 'after.bin' });
  t.ok(asset.id, 'an asset upload succeeds');

  const log = server.output();
  t.ok(/storage full: write refused/.test(log), 'the operator sees the S3 refusals in the log');
  t.ok(/management API: storage full/.test(log), 'and the API ones');
  t.notOk(/"msg":"internal error"/.test(log), 'no internal error was logged');
  t.notOk(s3.log.some((r) => r.status === 500), 'no 500 answered');
});
