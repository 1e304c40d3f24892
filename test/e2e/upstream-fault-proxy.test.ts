// Faults of the upstream S3 store, injected by a proxy of our own between the gateway and moto
// (test/helpers/fault-proxy.ts): bursts of 503 and 500, a connection reset in the middle of a body, a
// Content-Length its body does not match, a slow first byte, and an UploadPart acknowledged but never
// stored. What is idempotent is retried; what cannot succeed is answered 503 (S3 SlowDown or
// ServiceUnavailable, with Retry-After), never 500; a GET never ends as a whole-looking short body; a
// PUT is stored whole or not at all (and nothing of it is left upstream); the upload budget is back
// to zero after each.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { startFaultyUpstream } from '../helpers/fault-proxy.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';
import { parseS3Error } from '../helpers/xml.js';
import { S3Storage } from '../../src/storage/upstream/s3-storage.js';

const { moto, proxy, env } = await startFaultyUpstream(t, 'faults/');
const server = await startServer({
  upstream: false,
  // Parts of 5 MiB (S3's smallest): a 12 MiB body is an upstream multipart upload of three parts.
  env: { ...env, S3EDGE_STORAGE_S3_PART_BYTES: '5MiB' },
});
t.teardown(() => server.stop());
const s3 = new RawS3({ url: server.url }, server.rootKey);
// Setup checks throw: tap ends the file's root test at its first idle moment after an assertion.
const made = await s3.createBucket('faults');
if (made.status !== 200) throw new Error(`create bucket: ${made.status} ${made.text}`);

const SMALL = randomBytes(200 * 1024); // past the inline limit: one upstream PutObject
const LARGE = randomBytes(12 * 1024 * 1024); // an upstream multipart upload
const stored = await s3.putObject('faults', 'small.bin', SMALL);
if (stored.status !== 200) throw new Error(`the object stored before the faults: ${stored.status} ${stored.text}`);

/** Any upstream key of the gateway's blobs (their names are blob ids, not our keys). */
const anyBlob = (path: string): boolean => path.includes('/faults/blobs/');

async function uploadBufferBytes(): Promise<number> {
  const text = await (await request(`${server.url}/metrics`)).body.text();
  return Number(/^s3edge_upload_buffer_bytes (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** A GET through the gateway, read to the end: the status, the bytes, and whether the body ended as its length said. */
async function getWhole(key: string): Promise<{ status: number; body: Buffer; complete: boolean; code?: string; retryAfter?: string }> {
  const signed = await s3.sign({ method: 'GET', bucket: 'faults', key, payloadHash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' });
  const res = await request(`${server.url}${signed.target}`, { headers: Object.fromEntries(signed.headers) });
  const chunks: Buffer[] = [];
  let complete = true;
  try {
    for await (const c of res.body) chunks.push(c as Buffer);
  } catch {
    complete = false;
  }
  const body = Buffer.concat(chunks);
  const length = Number(res.headers['content-length']);
  if (Number.isFinite(length) && body.length !== length) complete = false;
  return {
    status: res.statusCode,
    body,
    complete,
    ...(res.statusCode >= 400 ? { code: parseS3Error(body.toString('utf8')).code } : {}),
    ...(typeof res.headers['retry-after'] === 'string' ? { retryAfter: res.headers['retry-after'] } : {}),
  };
}

t.test('a short burst of 503s on a read is retried: the GET is whole', async (t) => {
  proxy.inject({ method: 'GET', match: anyBlob, fault: { kind: 'status', status: 503 }, times: 2 });
  const r = await getWhole('small.bin');
  t.equal(r.status, 200);
  t.ok(r.complete && r.body.equals(SMALL), 'whole');
  t.equal(proxy.injected['status'], 2, 'both 503s were met');
});

t.test('a storm of 500s on a read: 503 SlowDown with Retry-After, never 500; then whole again', async (t) => {
  proxy.inject({ method: 'GET', match: anyBlob, fault: { kind: 'status', status: 500 }, times: 20 });
  const r = await getWhole('small.bin');
  t.equal(r.status, 503, `503 (got ${r.status} ${r.code ?? ''})`);
  t.equal(r.code, 'SlowDown');
  t.equal(r.retryAfter, '1');
  while (proxy.pending() > 0) await getWhole('small.bin'); // use up the storm
  const again = await getWhole('small.bin');
  t.ok(again.status === 200 && again.body.equals(SMALL), 'whole once the upstream answers');
});

for (const fault of [{ kind: 'reset-mid-body' }, { kind: 'short-body', missing: 1000 }] as const) {
  t.test(`${fault.kind} on a read: never a whole-looking short body; the next GET is whole`, async (t) => {
    proxy.inject({ method: 'GET', match: anyBlob, fault, times: 1 });
    const r = await getWhole('small.bin');
    if (r.status === 200 && r.complete) t.ok(r.body.equals(SMALL), 'if it looks whole, it is whole (read again)');
    else if (r.status === 200) t.pass(`the answer was cut (${r.body.length} of ${SMALL.length} bytes): the client sees the failure`);
    else t.equal(r.status, 503, `or refused with 503 (got ${r.status} ${r.code ?? ''})`);
    t.equal(proxy.injected[fault.kind], 1, 'the fault was met');
    const again = await getWhole('small.bin');
    t.ok(again.status === 200 && again.complete && again.body.equals(SMALL), 'the next GET is whole');
  });
}

t.test('a slow first byte (under the timeouts) only slows the GET', async (t) => {
  proxy.inject({ method: 'GET', match: anyBlob, fault: { kind: 'slow-first-byte', ms: 1500 }, times: 1 });
  const r = await getWhole('small.bin');
  t.ok(r.status === 200 && r.complete && r.body.equals(SMALL), 'whole');
});

t.test('a storm of 503s on an upload: 503 SlowDown, nothing stored, the budget back to zero; then it goes through', async (t) => {
  proxy.inject({ method: 'PUT', match: anyBlob, fault: { kind: 'status', status: 503 }, times: 20 });
  const r = await s3.putObject('faults', 'stormy.bin', SMALL);
  t.equal(r.status, 503, `503 (got ${r.status} ${parseS3Error(r.text).code})`);
  t.equal(parseS3Error(r.text).code, 'SlowDown');
  t.equal(r.headers['retry-after'], '1');
  t.equal((await s3.headObject('faults', 'stormy.bin')).status, 404, 'nothing stored');
  t.equal(await uploadBufferBytes(), 0, 'the upload budget is back to zero');
  while (proxy.pending() > 0) await s3.putObject('faults', 'spare.bin', SMALL).catch(() => undefined);
  t.equal((await s3.putObject('faults', 'stormy.bin', SMALL)).status, 200, 'stored once the upstream takes it');
  t.ok((await s3.getObject('faults', 'stormy.bin')).body.equals(SMALL));
});

t.test('an upload whose answer is reset mid-way is retried or refused, never half stored', async (t) => {
  proxy.inject({ method: 'PUT', match: anyBlob, fault: { kind: 'reset-mid-body' }, times: 1 });
  const r = await s3.putObject('faults', 'reset.bin', SMALL);
  t.ok(r.status === 200 || r.status === 503, `200 or 503 (got ${r.status} ${parseS3Error(r.text).code})`);
  const read = await s3.getObject('faults', 'reset.bin');
  if (r.status === 200) t.ok(read.body.equals(SMALL), 'acknowledged: whole');
  else t.equal(read.status, 404, 'refused: absent');
  t.equal(await uploadBufferBytes(), 0, 'the upload budget is back to zero');
});

t.test('a part acknowledged but lost by the store: the upload is refused with 503, nothing stored or left upstream', async (t) => {
  // What the gateway left upstream is seen through an S3Storage of the same prefix.
  const upstream = new S3Storage(moto.storageOptions('faults/'));
  t.teardown(() => upstream.close());
  const uploadsBefore = (await upstream.listUploads()).length;
  proxy.inject({ method: 'PUT', match: (p) => anyBlob(p) && p.includes('partNumber=2'), fault: { kind: 'lose-part' }, times: 1 });
  const r = await s3.putObject('faults', 'large.bin', LARGE);
  t.equal(r.status, 503, `503 (got ${r.status} ${parseS3Error(r.text).code})`);
  t.match(parseS3Error(r.text).code, /^(SlowDown|ServiceUnavailable)$/);
  t.equal(proxy.injected['lose-part'], 1, 'the part was lost');
  t.equal((await s3.headObject('faults', 'large.bin')).status, 404, 'nothing stored');
  t.equal(await uploadBufferBytes(), 0, 'the upload budget is back to zero');
  t.equal((await upstream.listUploads()).length, uploadsBefore, 'no upstream multipart upload left behind');
  t.equal((await s3.putObject('faults', 'large.bin', LARGE)).status, 200, 'the same upload goes through next time');
  t.ok((await s3.getObject('faults', 'large.bin')).body.equals(LARGE), 'whole');
});
