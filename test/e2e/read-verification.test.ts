// Reads check stored bytes against the digest recorded at write time (src/storage/blob-digest.ts): a
// flipped byte on disk (or inside meta.db, for a small object) never completes a response. The S3 door
// cuts the body short (raw GET, aws cli) or, when nothing was sent yet, answers InternalError; a copy
// refuses the source; the CDN neither serves nor caches it; the API download fails. The blob is marked
// (`s3edge scrub list`, found by 'read'), logged and counted; ranges inside a blob are not checked, and a
// rewritten object reads back whole. The upstream backend's reads are checked the same way.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiUser, eventually, metricValue, query, ResponseRecorder } from '../helpers/api.js';
import { runAws, writeAwsConfig } from '../helpers/aws-cli.js';
import { CdnClient } from '../helpers/cdn.js';
import { flipBlobByte, flipInlineByte } from '../helpers/integrity.js';
import { listKeys } from '../helpers/moto.js';
import { errorCode, RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';

const MiB = 1024 * 1024;
const BUCKET = 'checked';
// The scrub would find the damage too; these tests are about reads, so it stays off.
const server = await startServer({ env: { S3EDGE_INTEGRITY_SCRUB_BYTES_PER_SECOND: '0' } });
t.teardown(() => server.stop());
const s3 = new RawS3({ url: server.url }, server.rootKey);
const alice = await apiUser(server, ['assets:read', 'assets:write', 'metrics:read']);
t.equal((await s3.createBucket(BUCKET)).status, 200);

function blobOf(key: string): string {
  return query<{ blob_id: string }>(server, 'SELECT blob_id FROM objects WHERE key = ?', key)[0]?.blob_id ?? '';
}

async function marks(): Promise<{ owner: string; expected: string; actual: string; foundBy: string }[]> {
  return (await server.cli(['scrub', 'list'])).json as { owner: string; expected: string; actual: string; foundBy: string }[];
}

t.test('one flipped byte: the GET is cut short, the object marked and counted', async (t) => {
  const data = randomBytes(3 * MiB + 5);
  t.equal((await s3.putObject(BUCKET, 'big.bin', data)).status, 200);
  t.ok((await s3.getObject(BUCKET, 'big.bin')).body.equals(data), 'intact, it reads back whole');
  flipBlobByte(server, blobOf('big.bin'), MiB + 7);

  const res = await s3.getObject(BUCKET, 'big.bin');
  t.equal(res.status, 200, 'the headers went out before the end was read');
  t.equal(res.headers['content-length'], String(data.length));
  t.ok(res.body.length < data.length, `the body stops short (${res.body.length} of ${data.length} bytes): never a complete wrong answer`);

  const dir = await mkdtemp(join(tmpdir(), 's3edge-verify-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const aws = { endpoint: server.url, credentials: server.rootKey, files: await writeAwsConfig(dir) };
  const cp = await runAws(aws, ['s3', 'cp', `s3://${BUCKET}/big.bin`, join(dir, 'big.bin')]);
  t.not(cp.code, 0, 'aws s3 cp fails');
  t.notOk(existsSync(join(dir, 'big.bin')), 'and leaves no file behind');

  const list = await marks();
  t.match(list, [{ owner: `object ${BUCKET}/big.bin`, expected: /^crc32c:[0-9a-f]{8}$/, actual: /^crc32c:[0-9a-f]{8}$/, foundBy: 'read' }], 'marked for the operator');
  t.not(list[0]?.expected, list[0]?.actual);
  t.ok((await metricValue(server, alice.token, 's3edge_read_corrupt_total')) >= 2, 'counted');
  t.equal(await metricValue(server, alice.token, 's3edge_corrupt_blobs'), 1, 'one blob marked');
  t.match(server.output(), /stored bytes do not match their digest/, 'logged');

  const inside = await s3.getObject(BUCKET, 'big.bin', { range: 'bytes=0-99' });
  t.equal(inside.status, 206, 'a range inside the blob is not checked (the scrub covers it)');
  t.ok(inside.body.equals(data.subarray(0, 100)));
  t.equal((await s3.headObject(BUCKET, 'big.bin')).status, 200, 'HEAD reads no bytes');

  t.equal((await s3.putObject(BUCKET, 'big.bin', data)).status, 200, 'rewritten');
  t.ok((await s3.getObject(BUCKET, 'big.bin')).body.equals(data), 'reads back whole again');
});

t.test('a copy refuses a corrupt source instead of hashing its wrong bytes afresh', async (t) => {
  const data = randomBytes(200 * 1024);
  t.equal((await s3.putObject(BUCKET, 'source.bin', data)).status, 200);
  flipBlobByte(server, blobOf('source.bin'), 0);
  const copy = await s3.send({ method: 'PUT', bucket: BUCKET, key: 'copy.bin', headers: { 'x-amz-copy-source': `/${BUCKET}/source.bin` } });
  t.equal(copy.status, 500);
  t.equal(errorCode(copy), 'InternalError');
  t.equal((await s3.headObject(BUCKET, 'copy.bin')).status, 404, 'no copy was made');
});

t.test('multipart: a corrupt part fails the whole GET; an intact part reads alone', async (t) => {
  const created = await s3.send({ method: 'POST', bucket: BUCKET, key: 'multi.bin', query: { uploads: '' } });
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)?.[1] ?? '';
  const parts = [randomBytes(5 * MiB), randomBytes(300 * 1024)];
  const etags: string[] = [];
  for (const [i, body] of parts.entries()) {
    const res = await s3.send({ method: 'PUT', bucket: BUCKET, key: 'multi.bin', query: { partNumber: String(i + 1), uploadId }, body });
    etags.push(res.headers['etag'] ?? '');
  }
  const xml = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
  t.equal((await s3.send({ method: 'POST', bucket: BUCKET, key: 'multi.bin', query: { uploadId }, body: Buffer.from(xml) })).status, 200);
  const manifest = JSON.parse(query<{ parts: string }>(server, "SELECT parts FROM objects WHERE key = 'multi.bin'")[0]?.parts ?? '[]') as { blobId: string; crc32c?: number }[];
  t.ok(manifest.every((p) => typeof p.crc32c === 'number'), "the manifest carries each part's CRC32C");
  flipBlobByte(server, manifest[0]?.blobId ?? '', 10);

  const whole = await s3.getObject(BUCKET, 'multi.bin');
  t.ok(whole.body.length < 5 * MiB, `cut short inside the damaged first part (${whole.body.length} bytes)`);
  const second = await s3.send({ method: 'GET', bucket: BUCKET, key: 'multi.bin', query: { partNumber: '2' } });
  t.equal(second.status, 206);
  t.ok(second.body.equals(parts[1] as Buffer), 'part 2, checked whole, is intact');
  t.ok((await marks()).some((m) => m.owner === `part 1 of ${BUCKET}/multi.bin` && m.foundBy === 'read'), 'the part is marked');
});

t.test('small objects inside meta.db are checked too: InternalError, no byte sent', async (t) => {
  const data = randomBytes(1000);
  t.equal((await s3.putObject(BUCKET, 'small.bin', data)).status, 200);
  const blobId = blobOf('small.bin');
  t.match(blobId, /^inline-/, 'kept in the database');
  flipInlineByte(server, blobId, 500);
  const res = await s3.getObject(BUCKET, 'small.bin');
  t.equal(res.status, 500);
  t.equal(errorCode(res), 'InternalError');
  t.notOk(res.body.includes(data.subarray(0, 64)), 'none of the bytes');
  await eventually(async () => (await marks()).some((m) => m.owner === `object ${BUCKET}/small.bin`), 'the small object is marked');
});

t.test('the CDN and the API download: never served whole, never cached', async (t) => {
  const recorder = new ResponseRecorder();
  const cdn = new CdnClient(server, recorder, 0);
  const data = randomBytes(2 * MiB + 3);
  const asset = await alice.client.upload({ file: data, fileName: 'photo.jpg', contentType: 'image/jpeg', visibility: 'public' });
  const blobId = query<{ blob_id: string }>(server, 'SELECT blob_id FROM assets WHERE id = ?', asset.id)[0]?.blob_id ?? '';
  flipBlobByte(server, blobId, 3);
  for (const attempt of ['first', 'second']) {
    const res = await cdn.request(cdn.targetOf(asset.publicUrl));
    t.ok(res.status !== 200 || res.body.length < data.length, `${attempt} CDN GET: not served whole (status ${res.status}, ${res.body.length} bytes)`);
  }
  await t.rejects(alice.client.download(asset.id), 'the API download fails instead of completing');
  t.ok((await marks()).some((m) => m.owner === `asset ${asset.id}` && m.foundBy === 'read'), 'the asset is marked');

  await server.admin(['buckets', 'public', BUCKET]);
  const obj = randomBytes(300 * 1024);
  t.equal((await s3.putObject(BUCKET, 'public.bin', obj)).status, 200);
  flipBlobByte(server, blobOf('public.bin'), obj.length - 1);
  for (const attempt of ['first', 'second']) {
    const res = await cdn.request(`/b/${BUCKET}/public.bin`);
    t.ok(res.status !== 200 || res.body.length < obj.length, `${attempt} public-bucket GET: not served whole (status ${res.status}, ${res.body.length} bytes)`);
  }
  t.equal((await cdn.request(`/b/${BUCKET}/small.bin`)).status, 500, 'the damaged small object: 500 on the CDN too');
});

t.test('upstream S3: bytes changed behind the gateway fail the GET the same way', async (t) => {
  const gateway = await startServer({ upstream: true, env: { S3EDGE_INTEGRITY_SCRUB_BYTES_PER_SECOND: '0' } });
  t.teardown(() => gateway.stop());
  const moto = gateway.moto;
  if (!moto) throw new Error('no upstream');
  const s3up = new RawS3({ url: gateway.url }, gateway.rootKey);
  t.equal((await s3up.createBucket('remote')).status, 200);
  const data = randomBytes(3 * MiB);
  t.equal((await s3up.putObject('remote', 'far.bin', data)).status, 200);
  const [key] = await listKeys(moto);
  // The upstream's copy changes (a faulty store, someone writing under our prefix).
  const changed = Buffer.from(data);
  changed[MiB] = (changed[MiB] ?? 0) ^ 0x01;
  const direct = new RawS3({ url: moto.endpoint }, { accessKeyId: 'test', secretAccessKey: 'test' });
  t.equal((await direct.putObject(moto.bucket, key ?? '', changed)).status, 200, 'changed upstream');
  const res = await s3up.getObject('remote', 'far.bin');
  t.ok(res.body.length < data.length, `cut short (${res.body.length} of ${data.length} bytes)`);
});
