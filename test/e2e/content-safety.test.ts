// User bytes are inert on every door (docs/COMPATIBILITY.md "Active content"): the S3 door answers with
// nosniff and a sandbox CSP (an HTML object through an aws cli presigned URL, response-content-type
// overrides, errors); PDF, wasm and Content-Encoded uploads are private and attachments through the
// API and the CDN; public-bucket objects of those kinds are attachments on the CDN.
import t, { type Test } from 'tap';
import { gzipSync } from 'node:zlib';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch } from 'undici';
import { apiUser, ResponseRecorder } from '../helpers/api.js';
import { writeAwsConfig, runAws } from '../helpers/aws-cli.js';
import { CdnClient } from '../helpers/cdn.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';

const CSP = "default-src 'none'; sandbox";
const server = await startServer();
t.teardown(() => server.stop());
const recorder = new ResponseRecorder();
const cdn = new CdnClient(server, recorder);
const s3 = new RawS3({ url: server.url }, server.rootKey);
const BUCKET = 'inert';
t.equal((await s3.createBucket(BUCKET)).status, 200);

function inert(t: Test, headers: Record<string, string>, what: string): void {
  t.equal(headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  t.equal(headers['content-security-policy'], CSP, `${what}: sandbox CSP`);
}

function attachment(t: Test, res: { headers: Record<string, string> }, what: string): void {
  t.match(res.headers['content-disposition'] ?? '', /^attachment;/, `${what}: an attachment`);
}

const HTML = Buffer.from('<!doctype html><script>document.title="ran"</script>');

t.test('the S3 door: HTML through an aws cli presigned URL, response-content-type, errors', async (t) => {
  t.equal((await s3.putObject(BUCKET, 'page.html', HTML, { 'content-type': 'text/html' })).status, 200);
  t.equal((await s3.putObject(BUCKET, 'notes.txt', Buffer.from('plain'), { 'content-type': 'text/plain' })).status, 200);
  const dir = await mkdtemp(join(tmpdir(), 's3edge-safety-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const presign = await runAws({ endpoint: server.url, credentials: server.rootKey, files: await writeAwsConfig(dir) }, ['s3', 'presign', `s3://${BUCKET}/page.html`]);
  t.equal(presign.code, 0, presign.stderr);
  const res = await fetch(presign.stdout.trim());
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/html', 'S3 semantics: the stored type');
  t.ok(Buffer.from(await res.arrayBuffer()).equals(HTML), 'and the stored bytes');
  inert(t, Object.fromEntries(res.headers), 'presigned GET of text/html');

  const override = await s3.send({ method: 'GET', bucket: BUCKET, key: 'notes.txt', query: { 'response-content-type': 'text/html' } });
  t.equal(override.headers['content-type'], 'text/html', 'the requested type');
  inert(t, override.headers, 'response-content-type=text/html');
  inert(t, (await s3.headObject(BUCKET, 'page.html')).headers, 'HEAD');
  const missing = await s3.getObject(BUCKET, 'nope.html');
  t.equal(missing.status, 404);
  inert(t, missing.headers, 'an error');
});

t.test('PDF, wasm and encoded uploads through the API: private, attachments on every door', async (t) => {
  const alice = await apiUser(server, ['assets:read', 'assets:write'], { recorder });
  const cases = [
    { fileName: 'report.pdf', contentType: 'application/pdf', file: Buffer.from('%PDF-1.7\n1 0 obj << /JS (app.alert(1)) >>') },
    { fileName: 'disguised.png', contentType: 'image/png', file: Buffer.from('%PDF-1.4\n% a PDF named .png') },
    { fileName: 'module.wasm', contentType: 'application/wasm', file: Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]) },
    { fileName: 'blob.bin', contentType: 'application/octet-stream', file: Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]) },
  ];
  for (const c of cases) {
    const asset = await alice.client.upload({ ...c, visibility: 'public' });
    t.equal(asset.visibility, 'private', `${c.fileName}: forced private`);
    const download = await alice.client.raw('GET', `/api/v3/cdn/assets/${asset.id}/download`);
    const downloadHeaders = Object.fromEntries(download.headers);
    attachment(t, { headers: downloadHeaders }, `${c.fileName} API download`);
    inert(t, downloadHeaders, `${c.fileName} API download`);
    const signed = await alice.client.signedUrl(asset.id);
    const viaCdn = await cdn.request(cdn.targetOf(signed.url));
    t.equal(viaCdn.status, 200, `${c.fileName}: the signed CDN URL serves it`);
    attachment(t, viaCdn, `${c.fileName} signed CDN URL`);
    inert(t, viaCdn.headers, `${c.fileName} signed CDN URL`);
  }
  const png = await alice.client.upload({ fileName: 'real.png', contentType: 'image/png', file: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), visibility: 'public' });
  t.equal(png.visibility, 'public', 'a real PNG stays public');
  t.match((await cdn.request(cdn.targetOf(png.publicUrl))).headers['content-disposition'] ?? '', /^inline/, 'and inline');
});

t.test('public-bucket objects on the CDN: PDF, wasm and Content-Encoded bytes are attachments', async (t) => {
  await server.admin(['buckets', 'public', BUCKET]);
  const objects: [string, Buffer, Record<string, string>][] = [
    ['doc.pdf', Buffer.from('%PDF-1.7'), { 'content-type': 'application/pdf' }],
    ['code.wasm', Buffer.from([0x00, 0x61, 0x73, 0x6d]), { 'content-type': 'application/wasm' }],
    ['pixel.png', gzipSync(Buffer.from('<svg onload=alert(1)>')), { 'content-type': 'image/png', 'content-encoding': 'gzip' }],
  ];
  for (const [key, body, headers] of objects) {
    t.equal((await s3.putObject(BUCKET, key, body, headers)).status, 200);
    const res = await cdn.request(`/b/${BUCKET}/${key}`);
    t.equal(res.status, 200, `${key}: served`);
    attachment(t, res, `${key} on the CDN`);
    inert(t, res.headers, `${key} on the CDN`);
  }
  t.equal((await s3.putObject(BUCKET, 'plain.png', Buffer.from([0x89, 0x50, 0x4e, 0x47]), { 'content-type': 'image/png' })).status, 200);
  t.notMatch((await cdn.request(`/b/${BUCKET}/plain.png`)).headers['content-disposition'] ?? '', /^attachment/, 'an unencoded PNG is not an attachment');
});
