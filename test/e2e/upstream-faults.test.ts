// The upstream S3 (moto) is killed while one client downloads a large object and another uploads
// one: the download ends in a broken connection (never a short success), the upload fails with an
// error (503 SlowDown or a reset), no partial object becomes visible, and the gateway keeps serving
// what does not need the upstream (listings, small inline objects) and answers 503 SlowDown with
// Retry-After, without upstream details, for what does (S3, the management API and the CDN alike);
// once the upstream is back it serves again.
import t from 'tap';
import { request as httpRequest, type IncomingMessage, type ClientRequest } from 'node:http';
import { startServer } from '../helpers/server.js';
import { startMoto } from '../helpers/moto.js';
import { RawS3, randomData, errorCode } from '../helpers/s3-client.js';
import { UNSIGNED_PAYLOAD } from '../helpers/signer.js';
import { apiUser, PROVIDER_NAMES, ResponseRecorder } from '../helpers/api.js';
import { CdnClient } from '../helpers/cdn.js';
import type { Asset } from '../../src/client/index.js';
import { FormData } from 'undici';

const MiB = 1024 * 1024;
const server = await startServer({ upstream: true });
t.teardown(() => server.stop());
if (!server.moto) throw new Error('no upstream');
const moto = server.moto;
const s3 = new RawS3({ url: server.url }, server.rootKey);
const url = new URL(server.url);

/** Sends a signed request by hand so the test controls when body bytes flow. */
async function open(method: string, key: string, headers: Record<string, string>): Promise<ClientRequest> {
  const signed = await s3.sign({ method, bucket: 'faults', key, payloadHash: UNSIGNED_PAYLOAD, headers });
  const req = httpRequest({ host: url.hostname, port: url.port, method, path: signed.target, headers: Object.fromEntries(signed.headers) });
  return req;
}

function leaks(text: string, headers: Record<string, string | string[] | undefined>): string[] {
  const all = text + JSON.stringify(headers);
  return [moto.endpoint, `127.0.0.1:${moto.port}`, moto.bucket, 'gw/', 'moto', 'blobs/'].filter((s) => all.includes(s));
}

const big = randomData(64 * MiB);
const small = randomData(1000);
// API and CDN responses, scanned for upstream details at the end.
const recorder = new ResponseRecorder();
const cdn = new CdnClient(server, recorder);
const user = await apiUser(server, ['assets:read', 'assets:write'], { recorder });
let asset: Asset | undefined;
// Asset bytes the CDN sends back are scanned too: a filler byte cannot spell an internal name by chance.
const assetBytes = (n: number): Buffer => Buffer.alloc(n, 0x2a);
let cached: Asset | undefined;

t.test('setup: a large object upstream, a small inline one, two public assets (one in the edge cache)', async (t) => {
  t.equal((await s3.send({ method: 'PUT', bucket: 'faults' })).status, 200, 'bucket');
  t.equal((await s3.send({ method: 'PUT', bucket: 'faults', key: 'big.bin', body: big })).status, 200, 'large object stored upstream');
  t.equal((await s3.send({ method: 'PUT', bucket: 'faults', key: 'small.bin', body: small })).status, 200, 'small object (inline)');
  // Above inlineObjectMaxBytes, so its bytes are upstream; never fetched through the CDN, so not cached.
  asset = await user.client.upload({ file: assetBytes(300 * 1024), fileName: 'report.bin', visibility: 'public' });
  t.ok(asset.publicUrl, 'a public asset stored upstream');
  cached = await user.client.upload({ file: assetBytes(200 * 1024), fileName: 'logo.bin', visibility: 'public' });
  if (!cached.publicUrl) throw new Error('no publicUrl');
  const fill = await cdn.request(cdn.targetOf(cached.publicUrl));
  t.equal(fill.status, 200, 'a second public asset, fetched once through the CDN (now in its edge cache)');
});

t.test('upstream killed mid-download and mid-upload', async (t) => {
  // The download: read the first bytes, then stop reading so the rest is still upstream.
  const get = await open('GET', 'big.bin', {});
  const response = new Promise<IncomingMessage>((resolve, reject) => get.once('response', resolve).once('error', reject));
  get.end();
  const res = await response;
  t.equal(res.statusCode, 200);
  let received = 0;
  const first = new Promise<void>((resolve) => res.once('data', (c: Buffer) => ((received += c.length), resolve())));
  await first;
  res.pause();

  // The upload: 20 MiB sent of a declared 40 MiB, so its first upstream part is already stored.
  const put = await open('PUT', 'partial.bin', { 'content-length': String(40 * MiB) });
  const putOutcome = new Promise<{ status?: number; body: string; headers: IncomingMessage['headers']; error?: string }>((resolve) => {
    put.once('response', (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (body += c));
      r.on('end', () => resolve({ status: r.statusCode, body, headers: r.headers }));
      r.on('error', (e) => resolve({ status: r.statusCode, body, headers: r.headers, error: e.message }));
    });
    put.once('error', (e) => resolve({ body: '', headers: {}, error: e.message }));
  });
  const chunk = randomData(MiB);
  for (let i = 0; i < 20; i++) {
    if (!put.write(chunk)) await new Promise((r) => put.once('drain', r));
  }

  moto.kill();
  await moto.stop();

  // The rest of the upload: the gateway may answer (and stop reading) before it is all sent.
  put.on('error', () => undefined);
  for (let i = 0; i < 20 && !put.destroyed; i++) {
    if (!put.write(chunk)) await new Promise((r) => put.once('drain', r).once('close', r));
  }
  put.end();

  const downloadEnd = new Promise<'ended' | 'broken'>((resolve) => {
    res.on('data', (c: Buffer) => (received += c.length));
    res.once('end', () => resolve('ended'));
    res.once('aborted', () => resolve('broken'));
    res.once('error', () => resolve('broken'));
    res.once('close', () => resolve(res.complete ? 'ended' : 'broken'));
  });
  res.resume();
  t.equal(await downloadEnd, 'broken', 'the download connection is destroyed, not ended');
  t.ok(received < big.length, `short read (${received} of ${big.length} bytes)`);

  const up = await putOutcome;
  t.not(up.status, 200, `the upload failed (${up.status ?? up.error})`);
  if (up.status !== undefined) {
    t.equal(up.status, 503, 'upload answered 503');
    t.match(up.body, /<Code>SlowDown<\/Code>/);
    t.ok(up.headers['retry-after'], 'Retry-After');
    t.same(leaks(up.body, up.headers), [], 'no upstream detail in the error');
  }
});

t.test('after the upstream died the gateway keeps serving and no partial object is visible', async (t) => {
  const head = await s3.send({ method: 'HEAD', bucket: 'faults', key: 'partial.bin' });
  t.equal(head.status, 404, 'the failed upload is not an object');
  t.same((await s3.listAllKeys('faults')).sort(), ['big.bin', 'small.bin'], 'listing served from metadata');
  const got = await s3.send({ method: 'GET', bucket: 'faults', key: 'small.bin' });
  t.equal(got.status, 200, 'inline object served');
  t.ok(got.body.equals(small));
  const down = await s3.send({ method: 'GET', bucket: 'faults', key: 'big.bin' });
  t.equal(down.status, 503);
  t.equal(errorCode(down), 'SlowDown');
  t.ok(down.headers['retry-after'], 'Retry-After');
  t.same(leaks(down.text, down.headers), [], 'no upstream detail in the error');
  const put = await s3.send({ method: 'PUT', bucket: 'faults', key: 'later.bin', body: randomData(300 * 1024) });
  t.equal(put.status, 503, 'a new upload is refused with 503');
  t.equal(errorCode(put), 'SlowDown');
  t.equal((await s3.send({ method: 'GET', bucket: '' , path: '/' })).status, 200, 'ListBuckets');
});

t.test('with the upstream down, the API and the CDN answer 503 with Retry-After, never 500', async (t) => {
  if (!asset?.publicUrl) throw new Error('setup did not store the asset');
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(randomData(300 * 1024))]), 'later.bin');
  const upload = await user.client.raw('POST', '/api/v3/cdn/assets', { body: form });
  t.equal(upload.status, 503, 'upload refused');
  t.match(JSON.parse(upload.body.toString('utf8')), { success: false, code: 'storage_unavailable' });
  t.ok(upload.headers.get('retry-after'), 'Retry-After on the upload');
  const listed = (await user.client.listAssets()).assets.map((a) => a.id).sort();
  t.same(listed, [asset.id, cached?.id].sort(), 'no partial asset listed');
  const download = await user.client.raw('GET', `/api/v3/cdn/assets/${asset.id}/download`);
  t.equal(download.status, 503, 'download refused');
  t.match(JSON.parse(download.body.toString('utf8')), { success: false, code: 'storage_unavailable' });
  t.ok(download.headers.get('retry-after'), 'Retry-After on the download');
  const edge = await cdn.request(cdn.targetOf(asset.publicUrl));
  t.equal(edge.status, 503, 'CDN miss refused');
  t.ok(edge.headers['retry-after'], 'Retry-After from the CDN');
  if (!cached?.publicUrl) throw new Error('setup did not store the cached asset');
  const hit = await cdn.request(cdn.targetOf(cached.publicUrl));
  t.equal(hit.status, 200, 'the edge cache still serves what it holds');
  t.equal(hit.headers['x-cache'], 'HIT');
  t.equal(hit.body.length, 200 * 1024);
  recorder.assertNoLeaks(t, [moto.endpoint, `127.0.0.1:${moto.port}`, moto.bucket, 'gw/', 'blobs/', ...PROVIDER_NAMES]);
});

t.test('the upstream comes back on the same address: large objects are stored and served again', async (t) => {
  // moto keeps nothing across a restart, so only new objects can be read; the gateway is not restarted.
  const again = await startMoto({ port: moto.port, bucket: moto.bucket });
  t.teardown(() => again.stop());
  const body = randomData(3 * MiB);
  const put = await s3.send({ method: 'PUT', bucket: 'faults', key: 'after.bin', body });
  t.equal(put.status, 200, 'upload accepted');
  const got = await s3.send({ method: 'GET', bucket: 'faults', key: 'after.bin' });
  t.equal(got.status, 200, 'download served');
  t.ok(got.body.equals(body), 'byte-identical');
});
