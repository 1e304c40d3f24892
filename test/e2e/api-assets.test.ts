// /api/v3/cdn/assets end to end: the compiled server on a real socket, driven by the typed client
// (S3EdgeClient); raw requests only where the client cannot express the attack (handcrafted multipart
// bodies, chunked bodies, missing tokens). Checks what was stored in meta.db (opened read-only) and on
// disk, and ends with the leak scan over every response.
import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { openAsBlob, readdirSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { fetch } from 'undici';
import { ApiClientError, type Asset, type S3EdgeClient } from '../../src/client/index.js';
import { apiUser, eventually, PROVIDER_NAMES, query, ResponseRecorder } from '../helpers/api.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { startServer, type RunningServer } from '../helpers/server.js';

const MiB = 1024 * 1024;
const MAX_OBJECT_SIZE = 4 * MiB;
const recorder = new ResponseRecorder();

// ---------------------------------------------------------------------------------------------- helpers

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

function md5(b: Buffer): string {
  return createHash('md5').update(b).digest('hex');
}

/** A read-only look at the server's metadata database (WAL: sees every commit so far). */

function blobFiles(server: RunningServer): string[] {
  const root = join(server.dataDir, 'storage', 'blobs');
  return readdirSync(root).flatMap((d) => readdirSync(join(root, d)));
}

function tmpFiles(server: RunningServer): string[] {
  return readdirSync(join(server.dataDir, 'storage', 'tmp'));
}

/** Asset rows and blob files agree, and nothing is left half-written. */
function assertStoreConsistent(t: Test, server: RunningServer, what: string): void {
  const rows = query<{ blob_id: string }>(server, 'SELECT blob_id FROM assets').map((r) => r.blob_id).sort();
  t.same(blobFiles(server).sort(), rows, `${what}: one blob file per asset row, no orphan`);
  t.same(tmpFiles(server), [], `${what}: no staged upload left behind`);
}

async function apiError(t: Test, p: Promise<unknown>, status: number, code: string, what: string): Promise<ApiClientError | undefined> {
  try {
    await p;
    t.fail(`${what}: expected ${status} ${code}, got success`);
    return undefined;
  } catch (err) {
    if (!(err instanceof ApiClientError)) throw err;
    t.equal(err.status, status, `${what}: status ${status}`);
    t.equal(err.body.code, code, `${what}: code ${code}`);
    t.equal(err.body.success, false, `${what}: success false`);
    t.type(err.body.message, 'string', `${what}: a message`);
    return err;
  }
}

/** A multipart body by hand: parts in the given order, names and headers exactly as written. */
function multipart(parts: { headers: string[]; body: string | Buffer }[], boundary = `b${randomBytes(8).toString('hex')}`): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\n${p.headers.join('\r\n')}\r\n\r\n`, 'utf8'), Buffer.isBuffer(p.body) ? p.body : Buffer.from(p.body, 'utf8'));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

function filePart(body: string | Buffer, disposition = 'form-data; name="file"; filename="a.txt"', type = 'application/octet-stream') {
  return { headers: [`Content-Disposition: ${disposition}`, `Content-Type: ${type}`], body };
}

function fieldPart(name: string, value: string) {
  return { headers: [`Content-Disposition: form-data; name="${name}"`], body: value };
}

/** POST a handcrafted form over a raw socket with the user's token; the response is recorded. */
async function rawUpload(server: RunningServer, token: string | undefined, form: { body: Buffer; contentType: string }, opts: { chunked?: number } = {}): Promise<RawResponse> {
  const headers: [string, string][] = [['Host', new URL(server.url).host], ['Content-Type', form.contentType]];
  if (token) headers.push(['Authorization', `Bearer ${token}`]);
  if (opts.chunked === undefined) headers.push(['Content-Length', String(form.body.length)]);
  const res = await rawRequest({ url: server.url }, {
    method: 'POST', target: '/api/v3/cdn/assets', headers, body: form.body,
    ...(opts.chunked !== undefined ? { httpChunkSize: opts.chunked } : {}),
  });
  recorder.record({ method: 'POST', path: '/api/v3/cdn/assets (raw)', status: res.status, body: `${JSON.stringify(res.headers)}\n${res.text}` });
  return res;
}

function json(res: RawResponse): Record<string, unknown> {
  return JSON.parse(res.text) as Record<string, unknown>;
}

const ASSET_KEYS = ['contentType', 'createdAt', 'deploymentId', 'etag', 'fileName', 'id', 'key', 'kind', 'metadata', 'projectId',
  'publicUrl', 'sha256', 'size', 'storageName', 'updatedAt', 'userId', 'visibility'];
const LIST_ITEM_KEYS = ['contentType', 'createdAt', 'fileName', 'id', 'key', 'kind', 'publicUrl', 'size', 'storageName', 'updatedAt', 'visibility'];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

// ---------------------------------------------------------------------------------------------- setup

const server = await startServer({ env: { S3EDGE_MAX_OBJECT_SIZE: String(MAX_OBJECT_SIZE) } });
t.teardown(() => server.stop());
const port = new URL(server.url).port;
/** publicUrls name the CDN listener's port. */
const cdnPort = new URL(server.cdnUrl).port;

async function userIdOf(s: RunningServer, name: string): Promise<string> {
  const users = (await s.cli(['users', 'list'])).json as { id: string; name: string }[];
  const u = users.find((x) => x.name === name);
  if (!u) throw new Error(`no user ${name}`);
  return u.id;
}

const alice = await apiUser(server, ['assets:read', 'assets:write', 'projects:write'], { recorder });
const bob = await apiUser(server, ['assets:read', 'assets:write'], { recorder });
// An upload's projectId and deploymentId name one of the uploader's projects and a deployment of it.
const site = await alice.client.createProject('site');
const release = await alice.client.createDeployment(site.id, 'dep 42');
const aliceId = await userIdOf(server, alice.name);

// ---------------------------------------------------------------------------------------------- upload

t.test('upload: the stored asset, its bytes, its usage event', async (t) => {
  // A byte pattern, not random bytes: the leak scan reads downloaded bodies as text.
  const bytes = Buffer.from(Array.from({ length: 300 * 1024 }, (_, i) => (i * 7) & 0xff));
  const asset = await alice.client.upload({
    file: bytes, fileName: 'photo.bin', contentType: 'application/x-thing', visibility: 'public', kind: 'artifact',
    projectId: site.id, deploymentId: release.id,
  });
  t.same(Object.keys(asset).sort(), ASSET_KEYS, 'exactly the SPEC.md 2.1 fields');
  t.match(asset.id, /^[0-9a-f]{32}$/);
  t.equal(asset.userId, aliceId);
  t.equal(asset.projectId, site.id);
  t.equal(asset.deploymentId, release.id);
  t.equal(asset.storageName, 's3edge');
  t.equal(asset.key, `${asset.id}/photo.bin`);
  t.equal(asset.fileName, 'photo.bin');
  t.equal(asset.contentType, 'application/x-thing');
  t.equal(asset.size, bytes.length);
  t.equal(asset.sha256, sha256(bytes), 'SHA-256 computed while streaming');
  t.equal(asset.etag, `"${md5(bytes)}"`, 'ETag = quoted MD5, like S3');
  t.equal(asset.publicUrl, `http://cdn.localhost:${cdnPort}/${asset.id}/photo.bin`);
  t.equal(asset.visibility, 'public');
  t.equal(asset.kind, 'artifact');
  t.same(asset.metadata, { 'file-name': 'photo.bin', kind: 'artifact', sha256: asset.sha256, visibility: 'public' });
  t.match(asset.createdAt, ISO);
  t.equal(asset.updatedAt, asset.createdAt);
  const got = await alice.client.download(asset.id);
  t.ok(got.body.equals(bytes), 'the same bytes come back');

  const [event] = query<Record<string, unknown>>(server, "SELECT * FROM usage_events WHERE asset_id = ? AND event_type = 'upload'", asset.id);
  t.match(event, { user_id: aliceId, source: 'api', bytes: bytes.length, hostname: '127.0.0.1', country: '', status_code: 201, client_ip: /127\.0\.0\.1/ });
  t.same(JSON.parse(String(event?.['metadata'])), { key: asset.key }, 'the event carries the display key');
  const [row] = query<{ blob_id: string }>(server, 'SELECT blob_id FROM assets WHERE id = ?', asset.id);
  t.ok(row && blobFiles(server).includes(row.blob_id), 'the bytes are a blob file of the storage backend, not inline in SQLite');
});

t.test('upload: defaults, a 3 MiB streamed file, fields after the file', async (t) => {
  const small = await alice.client.upload({ file: Buffer.from('hello\n'), fileName: 'hello.txt', contentType: 'text/plain' });
  t.match(small, { visibility: 'public', kind: 'file', projectId: null, deploymentId: null, contentType: 'text/plain', size: 6 });

  const big = randomBytes(3 * MiB);
  const path = join(server.tmpRoot, 'big.bin');
  writeFileSync(path, big);
  const asset = await alice.client.upload({ file: await openAsBlob(path), fileName: 'big.bin' });
  t.equal(asset.size, big.length);
  t.equal(asset.sha256, sha256(big));
  t.equal(asset.contentType, 'application/octet-stream', 'an untyped Blob part');

  // SPEC.md 2.1: the type supplied on upload, or application/octet-stream when none (not RFC 7578's text/plain).
  const untyped = await rawUpload(server, alice.token, multipart([{ headers: ['Content-Disposition: form-data; name="file"; filename="notes"'], body: 'no type' }]));
  t.equal(untyped.status, 201);
  t.match(json(untyped)['asset'], { fileName: 'notes', contentType: 'application/octet-stream' }, 'a file part without Content-Type');
  const emptyType = await rawUpload(server, alice.token, multipart([filePart('empty type', 'form-data; name="file"; filename="e.txt"', '')]));
  t.match(json(emptyType)['asset'], { contentType: 'application/octet-stream' }, 'an empty Content-Type is none');

  // The form's order is the client's business: fields after the file part count the same.
  const form = multipart([filePart('late fields', 'form-data; name="file"; filename="late.txt"', 'text/plain'), fieldPart('visibility', 'private'),
    fieldPart('kind', 'artifact'), fieldPart('projectId', site.id), fieldPart('ignored', 'extra fields are ignored')]);
  const res = await rawUpload(server, alice.token, form);
  t.equal(res.status, 201);
  t.match(json(res)['asset'], { fileName: 'late.txt', visibility: 'private', kind: 'artifact', projectId: site.id, size: 11 });
  assertStoreConsistent(t, server, 'after uploads');
});

t.test('upload: file names and content types are sanitised', async (t) => {
  const cases: [string, string, string, string][] = [
    // [filename parameter as sent, part Content-Type, stored fileName, stored contentType]
    // The multipart parser hands over type/subtype only: parameters (charset) do not survive.
    ['../../etc/passwd', 'text/plain; charset=UTF-8', 'passwd', 'text/plain'],
    ['C:\\\\Users\\\\me\\\\report.pdf', 'application/pdf', 'report.pdf', 'application/pdf'],
    ['', 'image/png', 'file', 'image/png'],
    ['..', 'not a type', 'file', 'application/octet-stream'],
    ['tab\there.txt', 'text/plain\u0001', 'tabhere.txt', 'application/octet-stream'],
    [`${'n'.repeat(400)}.txt`, 'TEXT/CSV', `${'n'.repeat(251)}.txt`, 'text/csv'],
  ];
  for (const [sent, type, fileName, contentType] of cases) {
    const res = await rawUpload(server, alice.token, multipart([filePart('x', `form-data; name="file"; filename="${sent}"`, type)]));
    t.equal(res.status, 201, `${JSON.stringify(sent)}: stored`);
    t.match(json(res)['asset'], { fileName, contentType }, `${JSON.stringify(sent)} -> ${JSON.stringify(fileName)}, ${contentType}`);
  }
});

t.test('upload: bad forms get a clear 4xx JSON error and store nothing', async (t) => {
  const before = query<{ n: number }>(server, 'SELECT count(*) AS n FROM assets')[0]?.n;
  const bad: [string, { body: Buffer; contentType: string }, number, string][] = [
    ['no file part', multipart([fieldPart('visibility', 'public')]), 400, 'invalid_request'],
    ['two file parts', multipart([filePart('a'), filePart('b')]), 400, 'invalid_request'],
    ['the file under another name', multipart([filePart('a', 'form-data; name="upload"; filename="a.txt"')]), 400, 'invalid_request'],
    ['a text field named file', multipart([fieldPart('file', 'not a file')]), 400, 'invalid_request'],
    ['visibility neither public nor private', multipart([filePart('a'), fieldPart('visibility', 'secret')]), 400, 'invalid_request'],
    ['visibility before the file', multipart([fieldPart('visibility', 'PUBLIC'), filePart('a')]), 400, 'invalid_request'],
    ['kind unknown', multipart([filePart('a'), fieldPart('kind', 'folder')]), 400, 'invalid_request'],
    ['projectId too long', multipart([filePart('a'), fieldPart('projectId', 'p'.repeat(129))]), 400, 'invalid_request'],
    ['projectId far too long (truncated by the parser)', multipart([filePart('a'), fieldPart('projectId', 'p'.repeat(5000))]), 400, 'invalid_request'],
    ['deploymentId not printable', multipart([filePart('a'), fieldPart('deploymentId', 'd\u0007x')]), 400, 'invalid_request'],
    ['visibility twice', multipart([fieldPart('visibility', 'public'), fieldPart('visibility', 'private'), filePart('a')]), 400, 'invalid_request'],
    ['a CR/LF in filename* (the part is dropped: no file)', multipart([filePart('a', "form-data; name=\"file\"; filename*=UTF-8''evil%22.html%0D%0ASet-Cookie%3A%20a%3Db")]), 400, 'invalid_request'],
    ['no boundary', { body: Buffer.from('--x\r\n\r\n--x--\r\n'), contentType: 'multipart/form-data' }, 400, 'invalid_request'],
    ['JSON instead of a form', { body: Buffer.from('{"file":"x"}'), contentType: 'application/json' }, 415, 'unsupported_media_type'],
  ];
  for (const [what, form, status, code] of bad) {
    const res = await rawUpload(server, alice.token, form);
    t.equal(res.status, status, `${what}: ${status}`);
    const body = json(res);
    t.match(body, { success: false, code, message: String }, `${what}: ${code}`);
    t.same(Object.keys(body).sort(), ['code', 'message', 'success'], `${what}: just the envelope`);
  }
  // A body that ends inside the file part (the HTTP body is complete, the form is not).
  const whole = multipart([filePart(randomBytes(64 * 1024))]);
  const cut = { body: whole.body.subarray(0, 40 * 1024), contentType: whole.contentType };
  const res = await rawUpload(server, alice.token, cut);
  t.equal(res.status, 400, 'a truncated form: 400');
  t.match(json(res), { success: false, code: 'invalid_request' });
  t.equal(query<{ n: number }>(server, 'SELECT count(*) AS n FROM assets')[0]?.n, before, 'no asset row was added');
  assertStoreConsistent(t, server, 'after refused forms');
});


t.test('upload: a client that goes away mid-file leaves no staged bytes and no row', async (t) => {
  const rowsBefore = query<{ n: number }>(server, 'SELECT count(*) AS n FROM assets')[0]?.n;
  const form = multipart([filePart(Buffer.alloc(3 * MiB, 7))]);
  const socket = connect({ host: '127.0.0.1', port: Number(port) });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(`POST /api/v3/cdn/assets HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${alice.token}\r\n` +
    `Content-Type: ${form.contentType}\r\nContent-Length: ${form.body.length}\r\n\r\n`);
  socket.write(form.body.subarray(0, 2 * MiB));
  // The upload is staging (a temp file exists) when the client disappears.
  await eventually(() => tmpFiles(server).length > 0, 'the upload started staging');
  socket.destroy();
  await eventually(() => tmpFiles(server).length === 0, 'the staged bytes were discarded');
  t.pass('the staged temp file is gone');
  t.equal(query<{ n: number }>(server, 'SELECT count(*) AS n FROM assets')[0]?.n, rowsBefore, 'no asset row');
  assertStoreConsistent(t, server, 'after the abandoned upload');
});

t.test('upload: the size limit is 413, before the body when declared, while streaming otherwise', async (t) => {
  const before = blobFiles(server).length;
  await apiError(t, alice.client.upload({ file: Buffer.alloc(MAX_OBJECT_SIZE + 200 * 1024), fileName: 'huge.bin' }), 413, 'payload_too_large', 'declared too large');
  // Within the form-overhead allowance by its declared length, one byte over by its file.
  await apiError(t, alice.client.upload({ file: Buffer.alloc(MAX_OBJECT_SIZE + 1), fileName: 'over.bin' }), 413, 'payload_too_large', 'one byte over');
  const chunked = await rawUpload(server, alice.token, multipart([filePart(Buffer.alloc(MAX_OBJECT_SIZE + 10))]), { chunked: 256 * 1024 });
  t.equal(chunked.status, 413, 'no Content-Length: refused while streaming');
  t.match(json(chunked), { success: false, code: 'payload_too_large' });
  const exact = await alice.client.upload({ file: Buffer.alloc(MAX_OBJECT_SIZE, 1), fileName: 'exact.bin' });
  t.equal(exact.size, MAX_OBJECT_SIZE, 'exactly the limit is accepted');
  t.equal(blobFiles(server).length, before + 1, 'only the accepted upload left a blob');
  assertStoreConsistent(t, server, 'after 413s');
});

t.test('unsafe active content is forced private, whatever was asked', async (t) => {
  const svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>';
  const cases: [string, Parameters<S3EdgeClient['upload']>[0]][] = [
    ['an SVG declared as image/png named x.png', { file: Buffer.from(svg), fileName: 'x.png', contentType: 'image/png', visibility: 'public' }],
    ['declared text/html', { file: Buffer.from('hello'), fileName: 'notes.txt', contentType: 'text/html' }],
    ['declared image/svg+xml', { file: Buffer.from('x'), fileName: 'x.dat', contentType: 'image/svg+xml' }],
    ['named .js', { file: Buffer.from('alert(1)'), fileName: 'app.js', contentType: 'text/plain' }],
    ['named .xhtml', { file: Buffer.from('x'), fileName: 'page.XHTML', contentType: 'application/octet-stream' }],
    ['a BOM then <!DOCTYPE html>', { file: Buffer.from('\ufeff  <!DOCTYPE html><p>hi', 'utf8'), fileName: 'a.txt', contentType: 'text/plain' }],
    ['<?xml in a .json', { file: Buffer.from('<?xml version="1.0"?><x/>'), fileName: 'a.json', contentType: 'application/json' }],
    ['UTF-16 <html>', { file: Buffer.from('\ufeff<html><script>1</script>', 'utf16le'), fileName: 'a.bin', contentType: 'application/octet-stream' }],
  ];
  for (const [what, input] of cases) {
    const asset = await alice.client.upload(input);
    t.equal(asset.visibility, 'private', `${what}: private`);
    t.equal(asset.metadata.visibility, 'private', `${what}: metadata agrees`);
  }
  const png = await alice.client.upload({ file: Buffer.from('\x89PNG\r\n\x1a\n rest', 'latin1'), fileName: 'real.png', contentType: 'image/png' });
  t.equal(png.visibility, 'public', 'a real PNG stays public');
});

// ---------------------------------------------------------------------------------------------- list

t.test('list: only the caller\'s assets, pagination, search, kind, lenient defaults', async (t) => {
  const carol = await apiUser(server, ['assets:read', 'assets:write'], { recorder });
  const names = ['cat-1.txt', 'cat-2.txt', 'dog.txt', 'cat_%.txt', 'Catalog.pdf'];
  const uploaded: Asset[] = [];
  for (const fileName of names) uploaded.push(await carol.client.upload({ file: Buffer.from(fileName), fileName, contentType: 'text/plain' }));
  uploaded.push(await carol.client.upload({ file: Buffer.from('a1'), fileName: 'build-1.zip', kind: 'artifact' }));
  uploaded.push(await carol.client.upload({ file: Buffer.from('a2'), fileName: 'build-2.zip', kind: 'artifact' }));

  const raw = await carol.client.raw('GET', '/api/v3/cdn/assets');
  t.equal(raw.status, 200);
  const body = JSON.parse(raw.body.toString()) as { success: boolean; assets: Record<string, unknown>[]; pagination: unknown };
  t.same(Object.keys(body).sort(), ['assets', 'pagination', 'success'], 'exactly success, assets, pagination');
  t.equal(body.success, true);
  t.same(body.pagination, { page: 1, limit: 20, total: 7, pages: 1 }, 'defaults: page 1, limit 20');
  for (const item of body.assets) t.same(Object.keys(item).sort(), LIST_ITEM_KEYS, 'list items omit userId, projectId, deploymentId, sha256, etag, metadata');
  t.same(body.assets.map((a) => a['id']), uploaded.map((a) => a.id).reverse(), 'newest first, only carol\'s');

  const p2 = await carol.client.listAssets({ page: 2, limit: 3 });
  t.same(p2.pagination, { page: 2, limit: 3, total: 7, pages: 3 });
  t.same(p2.assets.map((a) => a.id), uploaded.slice().reverse().slice(3, 6).map((a) => a.id));
  const past = await carol.client.listAssets({ page: 9, limit: 3 });
  t.same(past, { assets: [], pagination: { page: 9, limit: 3, total: 7, pages: 3 } }, 'a page past the end is empty, not an error');
  t.same((await carol.client.listAssets({ limit: 1000 })).pagination, { page: 1, limit: 200, total: 7, pages: 1 }, 'limit capped at 200');

  for (const qs of ['page=abc&limit=-5', 'page=0&limit=0', 'page=1.5&limit=1e3', 'page=&limit=', 'page=99999999999999999999&limit=x', 'limit=20abc']) {
    const r = await carol.client.raw('GET', `/api/v3/cdn/assets?${qs}`);
    t.equal(r.status, 200, `${qs}: not an error`);
    t.same((JSON.parse(r.body.toString()) as { pagination: unknown }).pagination, { page: 1, limit: 20, total: 7, pages: 1 }, `${qs}: defaults`);
  }
  // A repeated key means its first value, on this route as on every other (src/api/query.ts).
  for (const [qs, pagination] of [
    ['page=2&page=3&limit=2&limit=3', { page: 2, limit: 2, total: 7, pages: 4 }],
    ['limit=3&limit=abc&page=x&page=2', { page: 1, limit: 3, total: 7, pages: 3 }],
  ] as const) {
    const r = await carol.client.raw('GET', `/api/v3/cdn/assets?${qs}`);
    t.same((JSON.parse(r.body.toString()) as { pagination: unknown }).pagination, pagination, `${qs}: the first value of each`);
  }
  const kinds = await carol.client.listAssets({ kind: 'artifact' });
  t.same(kinds.assets.map((a) => a.fileName).sort(), ['build-1.zip', 'build-2.zip'], 'kind=artifact');
  t.equal((await carol.client.listAssets({ kind: 'file' })).pagination.total, 5, 'kind=file');
  const bogusKind = await carol.client.raw('GET', '/api/v3/cdn/assets?kind=folder');
  t.equal((JSON.parse(bogusKind.body.toString()) as { pagination: { total: number } }).pagination.total, 7, 'an unknown kind is no filter');
  const cats = await carol.client.listAssets({ search: 'cat' });
  t.same(cats.assets.map((a) => a.fileName).sort(), ['Catalog.pdf', 'cat-1.txt', 'cat-2.txt', 'cat_%.txt'], 'search: substring, ASCII case-insensitive');
  t.same((await carol.client.listAssets({ search: '_%' })).assets.map((a) => a.fileName), ['cat_%.txt'], '% and _ match literally');
  t.equal((await carol.client.listAssets({ search: 'zzz' })).pagination.pages, 0, 'nothing found: 0 pages');
  const aliceList = await alice.client.listAssets({ search: 'cat' });
  t.equal(aliceList.pagination.total, 0, 'another user sees none of them');
});

// ---------------------------------------------------------------------------------------------- download

t.test('download: bytes, headers, one range, conditionals, HEAD, owner only', async (t) => {
  const bytes = Buffer.from('0123456789abcdefghij');
  const asset = await alice.client.upload({ file: bytes, fileName: 'digits.txt', contentType: 'text/plain' });
  const res = await alice.client.download(asset.id);
  t.equal(res.status, 200);
  t.ok(res.body.equals(bytes));
  const h = res.headers;
  recorder.record({ method: 'GET', path: 'download headers', status: res.status, body: JSON.stringify([...h.entries()]) });
  t.equal(h.get('content-type'), 'text/plain', 'the stored type');
  t.equal(h.get('content-disposition'), 'attachment; filename="digits.txt"');
  t.equal(h.get('x-content-type-options'), 'nosniff');
  t.equal(h.get('content-security-policy'), "default-src 'none'; sandbox");
  t.equal(h.get('etag'), asset.etag);
  t.equal(h.get('last-modified'), new Date(Math.floor(Date.parse(asset.updatedAt) / 1000) * 1000).toUTCString());
  t.equal(h.get('accept-ranges'), 'bytes');
  t.equal(h.get('content-length'), '20');
  t.equal(h.get('cache-control'), 'private, no-store');

  const part = await alice.client.download(asset.id, { range: 'bytes=5-9' });
  t.equal(part.status, 206);
  t.equal(part.body.toString(), '56789');
  t.equal(part.headers.get('content-range'), 'bytes 5-9/20');
  t.equal(part.headers.get('content-length'), '5');
  const suffix = await alice.client.download(asset.id, { range: 'bytes=-3' });
  t.equal(suffix.body.toString(), 'hij');
  const err = await apiError(t, alice.client.download(asset.id, { range: 'bytes=20-' }), 416, 'range_not_satisfiable', 'range past the end');
  t.ok(err, 'a JSON 416');
  const r416 = await alice.client.raw('GET', `/api/v3/cdn/assets/${asset.id}/download`, { headers: { range: 'bytes=50-60' } });
  t.equal(r416.headers.get('content-range'), 'bytes */20');

  const notModified = await alice.client.raw('GET', `/api/v3/cdn/assets/${asset.id}/download`, { headers: { 'if-none-match': asset.etag } });
  t.equal(notModified.status, 304);
  t.equal(notModified.body.length, 0);
  t.equal(notModified.headers.get('etag'), asset.etag);
  const failed = await alice.client.raw('GET', `/api/v3/cdn/assets/${asset.id}/download`, { headers: { 'if-match': '"nope"' } });
  t.equal(failed.status, 412);
  t.match(JSON.parse(failed.body.toString()), { success: false, code: 'precondition_failed' });
  const head = await alice.client.raw('HEAD', `/api/v3/cdn/assets/${asset.id}/download`);
  t.equal(head.status, 200);
  t.equal(head.headers.get('content-length'), '20');
  t.equal(head.body.length, 0);

  await apiError(t, bob.client.download(asset.id), 404, 'not_found', "another user's asset");
  await apiError(t, alice.client.download('0'.repeat(32)), 404, 'not_found', 'an unknown id');
  await apiError(t, alice.client.download('../../meta.db'), 404, 'not_found', 'a path as id');

  const downloads = (): { bytes: number; status_code: number; source: string; hostname: string }[] => query(server,
    "SELECT bytes, status_code, source, hostname FROM usage_events WHERE asset_id = ? AND event_type = 'download' ORDER BY seq", asset.id);
  await eventually(() => downloads().length >= 3, 'the download events');
  const events = downloads();
  // Recorded once each body is out, so two back-to-back downloads may be recorded in either order.
  const sent = events.map((e) => [e.bytes, e.status_code]).sort((a, b) => (b[0] as number) - (a[0] as number));
  t.same(sent, [[20, 200], [5, 206], [3, 206]], 'one download event per body sent, with the bytes sent');
  t.ok(events.every((e) => e.source === 'api' && e.hostname === '127.0.0.1'));
});

t.test('download: Content-Disposition cannot be split or injected, non-ASCII names survive', async (t) => {
  const SAFE = /^attachment; filename="[\x20\x21\x23-\x5b\x5d-\x7e]*"(; filename\*=UTF-8''[A-Za-z0-9!#$&+\-.^_`|~%]*)?$/;
  // Through the typed client: undici escapes the quote and CR/LF itself, as browsers do.
  const viaClient = await alice.client.upload({ file: Buffer.from('x'), fileName: 'evil".html\r\nSet-Cookie: a=b', contentType: 'text/plain' });
  t.notMatch(viaClient.fileName, /["\r\n]/, `stored as ${JSON.stringify(viaClient.fileName)}`);
  // By hand: a backslash-escaped quote and a tab reach the server as such.
  const raw = await rawUpload(server, alice.token, multipart([filePart('x', 'form-data; name="file"; filename="evil\\".html\tSet-Cookie: a=b"', 'text/plain')]));
  t.equal(raw.status, 201);
  const rawAsset = json(raw)['asset'] as Asset;
  t.equal(rawAsset.fileName, 'evil.htmlSet-Cookie: a=b', 'quote and tab removed');
  const viaStar = await rawUpload(server, alice.token, multipart([filePart('x', "form-data; name=\"file\"; filename*=UTF-8''a%22b%7F%09c%5Cd%22.txt", 'text/plain')]));
  t.equal(viaStar.status, 201);
  t.equal((json(viaStar)['asset'] as Asset).fileName, 'd.txt', 'RFC 5987 filename*: quotes, DEL and tab removed, the backslash is a path separator');
  const unicode = await alice.client.upload({ file: Buffer.from('%PDF-1.7'), fileName: 'résumé 📄.pdf', contentType: 'application/pdf' });
  t.equal(unicode.fileName, 'résumé 📄.pdf', 'the UTF-8 name is kept');
  t.equal(unicode.publicUrl, `http://cdn.localhost:${cdnPort}/${unicode.id}/r%C3%A9sum%C3%A9%20%F0%9F%93%84.pdf`);

  for (const a of [viaClient, rawAsset, json(viaStar)['asset'] as Asset, unicode]) {
    // A raw socket: see the header lines exactly as they were sent.
    const res = await rawRequest({ url: server.url }, {
      method: 'GET', target: `/api/v3/cdn/assets/${a.id}/download`,
      headers: [['Host', new URL(server.url).host], ['Authorization', `Bearer ${alice.token}`]],
    });
    recorder.record({ method: 'GET', path: `download ${a.id} (raw)`, status: res.status, body: JSON.stringify(res.headers) });
    t.equal(res.status, 200);
    t.equal(res.headers['set-cookie'], undefined, `${JSON.stringify(a.fileName)}: no injected header`);
    const cd = res.headers['content-disposition'] ?? '';
    t.match(cd, SAFE, `${JSON.stringify(a.fileName)}: one safe header: ${cd}`);
  }
  const res = await alice.client.download(unicode.id);
  t.equal(res.headers.get('content-disposition'), `attachment; filename="r_sum_ _.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%F0%9F%93%84.pdf`);
  const star = /filename\*=UTF-8''(.*)$/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? '';
  t.equal(decodeURIComponent(star), 'résumé 📄.pdf', 'filename* decodes to the exact name');
});

t.test('download: bytes that vanish mid-body cut the connection, never a short success', async (t) => {
  const bytes = Buffer.alloc(512 * 1024, 0x61);
  const asset = await alice.client.upload({ file: bytes, fileName: 'shrinking.bin' });
  const [row] = query<{ blob_id: string }>(server, 'SELECT blob_id FROM assets WHERE id = ?', asset.id);
  const blobId = row?.blob_id ?? '';
  // Storage failing under a reader: the blob file loses its second half behind the server's back.
  truncateSync(join(server.dataDir, 'storage', 'blobs', blobId.slice(-2), blobId), 256 * 1024);
  const res = await rawRequest({ url: server.url }, {
    method: 'GET', target: `/api/v3/cdn/assets/${asset.id}/download`,
    headers: [['Host', new URL(server.url).host], ['Authorization', `Bearer ${alice.token}`]],
  });
  recorder.record({ method: 'GET', path: 'download (truncated blob)', status: res.status, body: `${JSON.stringify(res.headers)}\n${res.text}` });
  t.equal(res.status, 200, 'the headers went out first');
  t.equal(res.headers['content-length'], String(bytes.length), 'announcing the full length');
  t.ok(res.body.length < bytes.length, `the socket was closed after ${res.body.length} bytes: a short read, visible as such`);
  // The event is written once the server has seen the response end, which may be just after we did.
  const events = (): { bytes: number }[] => query(server, "SELECT bytes FROM usage_events WHERE asset_id = ? AND event_type = 'download'", asset.id);
  await eventually(() => events().length > 0, 'the download event');
  t.ok((events()[0]?.bytes ?? Infinity) < bytes.length, 'the usage event counts the bytes actually sent');
  t.equal((await alice.client.listAssets()).pagination.page, 1, 'the server carries on');
  await alice.client.deleteAsset(asset.id);
});

// ---------------------------------------------------------------------------------------------- delete

t.test('delete: owner only, row and bytes gone, delete event recorded', async (t) => {
  const asset = await alice.client.upload({ file: Buffer.from('bye bye'), fileName: 'bye.txt' });
  const [row] = query<{ blob_id: string }>(server, 'SELECT blob_id FROM assets WHERE id = ?', asset.id);
  const blobId = row?.blob_id ?? '';
  t.ok(blobFiles(server).includes(blobId));
  await apiError(t, bob.client.deleteAsset(asset.id), 404, 'not_found', "deleting another user's asset");
  t.equal((await alice.client.download(asset.id)).status, 200, 'still there after the refused delete');
  t.type(await alice.client.deleteAsset(asset.id), 'string', 'success with a message');
  await apiError(t, alice.client.download(asset.id), 404, 'not_found', 'download after delete');
  await apiError(t, alice.client.deleteAsset(asset.id), 404, 'not_found', 'delete twice');
  // At once with one process; a cluster's supervisor removes it once no worker reads it, after a grace (docs/SCALE.md).
  await eventually(() => !blobFiles(server).includes(blobId), 'the blob file removed');
  t.notOk(blobFiles(server).includes(blobId), 'the blob file is removed');
  t.same(query(server, 'SELECT id FROM assets WHERE id = ?', asset.id), [], 'the row is gone');
  const events = query<{ event_type: string; bytes: number; status_code: number; metadata: string }>(server,
    "SELECT event_type, bytes, status_code, metadata FROM usage_events WHERE asset_id = ? AND event_type = 'delete'", asset.id);
  t.same(events.map((e) => [e.bytes, e.status_code, JSON.parse(e.metadata)]), [[7, 200, { key: asset.key }]], 'one delete event, bytes = size');
  assertStoreConsistent(t, server, 'after delete');
});

// ---------------------------------------------------------------------------------------------- signed URLs

t.test('signed URLs: format, default and custom expiry, range checks, owner only', async (t) => {
  const asset = await alice.client.upload({ file: Buffer.from('secret'), fileName: 'secret plan.txt', visibility: 'private' });
  const now = Math.floor(Date.now() / 1000);
  const def = await alice.client.signedUrl(asset.id);
  const m = /^http:\/\/cdn\.localhost:(\d+)\/([0-9a-f]{32})\/secret%20plan\.txt\?expires=(\d+)&signature=([A-Za-z0-9_-]{43})$/.exec(def.url);
  t.ok(m, `the URL is publicUrl?expires=&signature=: ${def.url}`);
  t.equal(m?.[1], cdnPort);
  t.equal(m?.[2], asset.id);
  const expires = Number(m?.[3]);
  t.equal(def.expiresAt, new Date(expires * 1000).toISOString(), 'expiresAt is the expires parameter');
  t.ok(expires - now >= 3600 - 5 && expires - now <= 3600 + 5, `default one hour (${expires - now} s)`);
  const short = await alice.client.signedUrl(asset.id, 60);
  const shortExpires = Number(/expires=(\d+)/.exec(short.url)?.[1]);
  t.ok(shortExpires - now >= 55 && shortExpires - now <= 65, 'expiresIn 60');
  t.ok(await alice.client.signedUrl(asset.id, 604800), 'seven days is the maximum');
  for (const bad of [0, -1, 604801, 1.5]) {
    await apiError(t, alice.client.signedUrl(asset.id, bad), 400, 'invalid_request', `expiresIn ${bad}`);
  }
  for (const body of ['{"expiresIn":"60"}', '{"expiresIn":null}', '[]', 'not json']) {
    const r = await alice.client.raw('POST', `/api/v3/cdn/assets/${asset.id}/signed-url`, { body, headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 400, `body ${body}: 400`);
    t.match(JSON.parse(r.body.toString()), { success: false, code: 'invalid_request' });
  }
  const noBody = await alice.client.raw('POST', `/api/v3/cdn/assets/${asset.id}/signed-url`);
  t.equal(noBody.status, 200, 'no body at all: the default expiry');
  await apiError(t, bob.client.signedUrl(asset.id), 404, 'not_found', "another user's asset");
  await apiError(t, alice.client.signedUrl('f'.repeat(32)), 404, 'not_found', 'an unknown asset');
});

// ---------------------------------------------------------------------------------------------- auth

t.test('auth: 401 without a token, 403 without the scope, before any body is read', async (t) => {
  const target = await alice.client.upload({ file: Buffer.from('x'), fileName: 'scoped.txt' });
  const routes: { method: string; path: string; scope: 'assets:read' | 'assets:write' }[] = [
    { method: 'POST', path: '/api/v3/cdn/assets', scope: 'assets:write' },
    { method: 'GET', path: '/api/v3/cdn/assets', scope: 'assets:read' },
    { method: 'GET', path: `/api/v3/cdn/assets/${target.id}/download`, scope: 'assets:read' },
    { method: 'DELETE', path: `/api/v3/cdn/assets/${target.id}`, scope: 'assets:write' },
    { method: 'POST', path: `/api/v3/cdn/assets/${target.id}/signed-url`, scope: 'assets:read' },
  ];
  const usageOnly = await apiUser(server, ['usage:read'], { recorder, name: alice.name });
  const readOnly = await apiUser(server, ['assets:read'], { recorder, name: alice.name });
  const writeOnly = await apiUser(server, ['assets:write'], { recorder, name: alice.name });
  const form = multipart([filePart('x')]);
  /** The route's call through the typed client. */
  const call = (c: S3EdgeClient, r: (typeof routes)[number]): Promise<unknown> => {
    if (r.method === 'POST' && r.path.endsWith('/assets')) return c.upload({ file: Buffer.from('x'), fileName: 'x.txt' });
    if (r.method === 'GET' && r.path.endsWith('/assets')) return c.listAssets();
    if (r.method === 'GET') return c.download(target.id);
    if (r.method === 'DELETE') return c.deleteAsset(target.id);
    return c.signedUrl(target.id);
  };
  for (const r of routes) {
    const init = r.method === 'POST' && r.path.endsWith('/assets')
      ? { body: form.body, headers: { 'content-type': form.contentType } }
      : r.method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : { headers: {} };
    // The typed client always sends its token: the missing and broken ones go by fetch.
    for (const [label, auth] of [['no token', undefined], ['a malformed token', 'Bearer nope'], ['a Basic header', 'Basic YTpi']] as const) {
      const res = await fetch(new URL(r.path, server.url), { method: r.method, body: init.body, headers: { ...init.headers, ...(auth ? { authorization: auth } : {}) } });
      const text = await res.text();
      recorder.record({ method: r.method, path: r.path, status: res.status, body: text });
      t.equal(res.status, 401, `${r.method} ${r.path} with ${label}: 401`);
      t.match(JSON.parse(text), { success: false, code: 'unauthorized' });
    }
    const other = r.scope === 'assets:read' ? (['assets:write only', writeOnly] as const) : (['assets:read only', readOnly] as const);
    for (const [label, u] of [['usage:read only', usageOnly], other] as const) {
      const err = await apiError(t, call(u.client, r), 403, 'forbidden', `${r.method} ${r.path} with ${label}`);
      t.match(err?.body.message, new RegExp(r.scope), 'the message names the missing scope');
    }
  }
  t.equal((await alice.client.download(target.id)).status, 200, 'the asset survived every refused delete');
});

t.test('a suspended space refuses uploads with 403 space_suspended; resumed, it accepts them', async (t) => {
  const dave = await apiUser(server, ['assets:read', 'assets:write'], { recorder });
  const kept = await dave.client.upload({ file: Buffer.from('before'), fileName: 'before.txt' });
  await server.admin(['spaces', 'suspend', '--user', dave.name]);
  const blobsBefore = blobFiles(server).length;
  const err = await apiError(t, dave.client.upload({ file: Buffer.from('during'), fileName: 'during.txt' }), 403, 'space_suspended', 'upload while suspended');
  t.match(err?.body.message, /suspended/i, 'the message says why');
  t.equal(blobFiles(server).length, blobsBefore, 'nothing stored');
  t.equal((await dave.client.download(kept.id)).status, 200, 'the owner still downloads existing assets');
  t.equal((await dave.client.listAssets()).pagination.total, 1, 'and lists them');
  await server.admin(['spaces', 'resume', '--user', dave.name]);
  t.ok(await dave.client.upload({ file: Buffer.from('after'), fileName: 'after.txt' }), 'resumed: uploads work again');
});

// ---------------------------------------------------------------------------------------------- credits

const creditServer = await startServer({
  env: { S3EDGE_CREDITS_ENABLED: 'true', S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '0', S3EDGE_MAX_OBJECT_SIZE: String(MAX_OBJECT_SIZE) },
});
t.teardown(() => creditServer.stop());

interface Account {
  balance_milli: number;
  used_milli: number;
}

t.test('credits: 20 concurrent uploads against a balance for exactly 10', async (t) => {
  const erin = await apiUser(creditServer, ['assets:read', 'assets:write'], { recorder });
  const erinId = await userIdOf(creditServer, erin.name);
  // One charging unit (1 MiB, 1 credit) per upload of 1000 bytes.
  const grant = await creditServer.admin(['credits', 'grant', '--user', erin.name, '--amount', '10']);
  t.equal(grant['balance'], 10);
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) => erin.client.upload({ file: randomBytes(1000), fileName: `race-${i}.bin` })),
  );
  const ok = results.filter((r): r is PromiseFulfilledResult<Asset> => r.status === 'fulfilled');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.equal(ok.length, 10, 'exactly 10 uploads succeed');
  t.equal(refused.length, 10, 'exactly 10 are refused');
  for (const r of refused) {
    const err = r.reason as unknown;
    if (!(err instanceof ApiClientError)) throw err;
    t.equal(err.status, 402);
    t.match(err.body, { success: false, code: 'insufficient_credits', message: String, requiredCredits: 1, balance: Number });
    t.ok((err.body.balance ?? -1) >= 0 && (err.body.balance ?? 99) <= 10, `balance in the 402 is within 0..10 (${String(err.body.balance)})`);
  }
  const ledger = query<{ event_type: string; credits_milli: number; balance_after_milli: number; asset_id: string; metadata: string }>(creditServer,
    'SELECT event_type, credits_milli, balance_after_milli, asset_id, metadata FROM credit_ledger WHERE user_id = ? ORDER BY seq', erinId);
  const charges = ledger.filter((e) => e.event_type === 'upload');
  t.equal(charges.length, 10, 'the ledger holds 10 charges');
  t.ok(charges.every((c) => c.credits_milli === 1000), 'one credit each');
  t.ok(ledger.every((e) => e.balance_after_milli >= 0), 'the balance never went negative');
  t.same(charges.map((c) => c.asset_id).sort(), ok.map((r) => r.value.id).sort(), 'one charge per stored asset');
  const keys = new Map(ok.map((r) => [r.value.id, r.value.key]));
  t.ok(charges.every((c) => (JSON.parse(c.metadata) as { key: string }).key === keys.get(c.asset_id)), 'each charge carries the display key');
  const [account] = query<Account>(creditServer, 'SELECT balance_milli, used_milli FROM credit_accounts WHERE user_id = ?', erinId);
  t.same(account, { balance_milli: 0, used_milli: 10_000 });
  t.equal(query<{ n: number }>(creditServer, 'SELECT count(*) AS n FROM assets WHERE user_id = ?', erinId)[0]?.n, 10, '10 asset rows');
  t.equal(query<{ n: number }>(creditServer, "SELECT count(*) AS n FROM usage_events WHERE user_id = ? AND event_type = 'upload'", erinId)[0]?.n, 10, '10 upload events');
  assertStoreConsistent(t, creditServer, 'after the race');
  const broke = await apiError(t, erin.client.upload({ file: Buffer.from('one more'), fileName: 'more.txt' }), 402, 'insufficient_credits', 'with a zero balance');
  t.match(broke?.body, { requiredCredits: 1, balance: 0 });
});

t.test('credits: an upload larger than the balance allows is refused with 402 and leaves nothing', async (t) => {
  const fay = await apiUser(creditServer, ['assets:read', 'assets:write'], { recorder });
  const fayId = await userIdOf(creditServer, fay.name);
  await creditServer.admin(['credits', 'grant', '--user', fay.name, '--amount', '2']);
  const blobsBefore = blobFiles(creditServer).length;

  // Declared length: refused before the body is read.
  const early = await apiError(t, fay.client.upload({ file: randomBytes(3 * MiB), fileName: 'three.bin' }), 402, 'insufficient_credits', '3 MiB on 2 credits');
  t.match(early?.body, { requiredCredits: 3, balance: 2 });
  // No declared length (chunked): refused the moment the file passes what 2 credits pay for.
  const streamed = await rawUpload(creditServer, fay.token, multipart([filePart(randomBytes(2 * MiB + 300 * 1024))]), { chunked: 128 * 1024 });
  t.equal(streamed.status, 402, 'chunked: 402 while streaming');
  t.match(json(streamed), { success: false, code: 'insufficient_credits', requiredCredits: 3, balance: 2 });

  t.equal(blobFiles(creditServer).length, blobsBefore, 'no blob stored');
  t.same(query(creditServer, 'SELECT id FROM assets WHERE user_id = ?', fayId), [], 'no asset row');
  t.same(query(creditServer, "SELECT id FROM credit_ledger WHERE user_id = ? AND event_type = 'upload'", fayId), [], 'no charge');
  assertStoreConsistent(t, creditServer, 'after refusals');

  const fits = await fay.client.upload({ file: randomBytes(MiB + 10), fileName: 'fits.bin' });
  t.equal(fits.size, MiB + 10, 'what the balance pays for is accepted');
  const [account] = query<Account>(creditServer, 'SELECT balance_milli, used_milli FROM credit_accounts WHERE user_id = ?', fayId);
  t.same(account, { balance_milli: 0, used_milli: 2000 }, 'charged ceil(size / 1 MiB) = 2 credits');
});

// ---------------------------------------------------------------------------------------------- leaks

t.test('no response carries a blob id, the data dir or a provider name', async (t) => {
  const blobIds = [server, creditServer].flatMap((s) => query<{ blob_id: string }>(s, 'SELECT blob_id FROM assets').map((r) => r.blob_id));
  t.ok(blobIds.length > 10, 'blob ids to look for');
  recorder.assertNoLeaks(t, [...PROVIDER_NAMES, server.dataDir, creditServer.dataDir, ...blobIds, 'storage/blobs', 'storage/tmp']);
});

t.test('the servers logged no error (no 500 path was taken)', async (t) => {
  for (const s of [server, creditServer]) {
    const errors = s.output().split('\n').filter((l) => /"level":(50|60)/.test(l));
    t.same(errors, [], 'no error-level log line');
  }
});
