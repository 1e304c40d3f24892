// The CDN host end to end: the compiled server on a real socket, requests to the CDN listener on
// 127.0.0.1 carrying `Host: cdn.localhost:<port>` (asset.publicUrl rewritten, the Host kept), written
// byte for byte by the raw HTTP helper so paths reach the server unnormalised. Assets are made with the
// typed client. The main port serves the same requests, routed by Host.
import t, { type Test } from 'tap';
import { apiUser, eventually, PROVIDER_NAMES, query, ResponseRecorder } from '../helpers/api.js';
import { CdnClient, type CdnRequestOptions } from '../helpers/cdn.js';
import type { RawResponse } from '../helpers/raw-http.js';
import { startServer } from '../helpers/server.js';

const recorder = new ResponseRecorder();
const server = await startServer();
t.teardown(() => server.stop());
const cdnClient = new CdnClient(server, recorder);
const port = new URL(server.cdnUrl).port;
const targetOf = (url: string): string => cdnClient.targetOf(url);
const cdn = (target: string, opts: CdnRequestOptions = {}): Promise<RawResponse> => cdnClient.request(target, opts);

const SAFETY = { 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'none'; sandbox" };

function assertBareNotFound(t: Test, res: RawResponse, what: string): void {
  t.equal(res.status, 404, `${what}: 404`);
  t.equal(res.text, 'Not Found\n', `${what}: no detail`);
  t.match(res.headers, { 'content-type': 'text/plain; charset=utf-8', ...SAFETY }, `${what}: plain text, nosniff`);
}

const alice = await apiUser(server, ['assets:read', 'assets:write'], { recorder });
const bob = await apiUser(server, ['assets:read', 'assets:write'], { recorder });
// A byte pattern, not random bytes: the leak scan reads bodies as text.
const content = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 7) & 0xff));
const pub = await alice.client.upload({ file: content, fileName: 'pattern.bin', contentType: 'application/octet-stream' });
const text = await alice.client.upload({ file: Buffer.from('hello, edge\n'), fileName: 'hello.txt', contentType: 'text/plain' });
const priv = await alice.client.upload({ file: Buffer.from('for your eyes only'), fileName: 'secret.txt', contentType: 'text/plain', visibility: 'private' });

t.test('a public asset: bytes and every header', async (t) => {
  t.equal(pub.visibility, 'public');
  const res = await cdn(targetOf(pub.publicUrl));
  t.equal(res.status, 200);
  t.ok(res.body.equals(content), 'the bytes');
  t.match(res.headers, {
    'content-type': 'application/octet-stream',
    ...SAFETY,
    'content-disposition': 'inline; filename="pattern.bin"',
    etag: pub.etag,
    'last-modified': new Date(Math.floor(Date.parse(pub.updatedAt) / 1000) * 1000).toUTCString(),
    'accept-ranges': 'bytes',
    'cache-control': 'public, max-age=3600',
    'content-length': String(content.length),
  });
  const head = await cdn(targetOf(pub.publicUrl), { method: 'HEAD' });
  t.equal(head.status, 200, 'HEAD');
  t.equal(head.body.length, 0, 'HEAD: no body');
  t.equal(head.headers['content-length'], String(content.length));
  const loud = await cdn(targetOf(pub.publicUrl), { host: `CDN.LOCALHOST:${port}` });
  t.equal(loud.status, 200, 'the host name is case-insensitive');
  const mainPort = new URL(server.url).port;
  const routed = await cdn(targetOf(pub.publicUrl), { url: server.url, host: `cdn.localhost:${mainPort}` });
  t.equal(routed.status, 200, 'the main port serves the CDN host too');
  t.ok(routed.body.equals(content));
  assertBareNotFound(t, await cdn(targetOf(pub.publicUrl), { host: `127.0.0.1:${port}` }), 'the CDN listener with another Host');
  const extra = await cdn(`${targetOf(pub.publicUrl)}?utm_source=mail&v=2&expires=&x`);
  t.equal(extra.status, 200, 'unrelated query parameters are ignored');
  t.match(extra.headers, { 'cache-control': 'public, max-age=3600' });
});

t.test('ranges and conditional requests', async (t) => {
  const target = targetOf(text.publicUrl);
  const part = await cdn(target, { headers: [['Range', 'bytes=7-10']] });
  t.equal(part.status, 206);
  t.equal(part.text, 'edge');
  t.match(part.headers, { 'content-range': 'bytes 7-10/12', 'content-length': '4' });
  const bad = await cdn(target, { headers: [['Range', 'bytes=12-']] });
  t.equal(bad.status, 416);
  t.equal(bad.headers['content-range'], 'bytes */12');
  const nm = await cdn(target, { headers: [['If-None-Match', text.etag]] });
  t.equal(nm.status, 304, 'If-None-Match: 304');
  t.equal(nm.body.length, 0);
  t.match(nm.headers, { etag: text.etag, 'cache-control': 'public, max-age=3600' });
  const ims = await cdn(target, { headers: [['If-Modified-Since', new Date(Date.now() + 60_000).toUTCString()]] });
  t.equal(ims.status, 304, 'If-Modified-Since: 304');
  const changed = await cdn(target, { headers: [['If-None-Match', '"something-else"']] });
  t.equal(changed.status, 200, 'another ETag: the body');
  const pre = await cdn(target, { headers: [['If-Match', '"something-else"']] });
  t.equal(pre.status, 412);
});

t.test('everything that is not exactly an asset is a bare 404', async (t) => {
  const [, id, name] = /^\/([0-9a-f]{32})\/(.+)$/.exec(targetOf(text.publicUrl)) ?? [];
  const targets = [
    '/', '/favicon.ico', `/${id}`, `/${id}/`, `/${id}/other.txt`, `/${id}/HELLO.TXT`, `/${id}/${name}/x`, `/${'0'.repeat(32)}/${name}`,
    `/${id?.toUpperCase()}/${name}`, `//${id}/${name}`, `/../${id}/${name}`, `/${id}/..%2F${name}`, `/${id}/%2e%2e`, `/${id}/%zz`,
    '/api/v3/cdn/assets', '/storage/buckets/x/access-keys', `/${id}/${name}%00`, '/../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd',
  ];
  for (const target of targets) assertBareNotFound(t, await cdn(target), target);
  for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
    assertBareNotFound(t, await cdn(targetOf(text.publicUrl), { method }), `${method} of a public asset`);
  }
});

t.test('a private asset: 404 without a valid signature, served with one', async (t) => {
  assertBareNotFound(t, await cdn(targetOf(priv.publicUrl)), 'unsigned');
  const { url } = await alice.client.signedUrl(priv.id);
  const target = targetOf(url);
  const res = await cdn(target);
  t.equal(res.status, 200, 'signed: 200');
  t.equal(res.text, 'for your eyes only');
  t.match(res.headers, { 'cache-control': 'private, no-store', 'content-disposition': 'inline; filename="secret.txt"', ...SAFETY });
  const withExtra = await cdn(`${target}&utm=1`);
  t.equal(withExtra.status, 200, 'extra parameters do not break a signature');

  const sig = /signature=([A-Za-z0-9_-]+)/.exec(target)?.[1] ?? '';
  const expires = Number(/expires=(\d+)/.exec(target)?.[1]);
  const path = target.slice(0, target.indexOf('?'));
  const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
  const forged = [
    [`${path}?expires=${expires}&signature=${flipped}`, 'a changed signature'],
    [`${path}?expires=${expires + 1}&signature=${sig}`, 'a later expiry'],
    [`${path}?signature=${sig}`, 'no expiry'],
    [`${path}?expires=${expires}`, 'no signature'],
    [`${path}?expires=${expires}&signature=${sig}&signature=${sig}`, 'two signatures'],
    [`${path}?expires=${expires}&signature=`, 'an empty signature'],
    [`${targetOf(text.publicUrl).replace('hello.txt', 'secret.txt')}?expires=${expires}&signature=${sig}`, "another asset's id"],
  ] as const;
  for (const [forgedTarget, what] of forged) assertBareNotFound(t, await cdn(forgedTarget), what);
  // The same signature on a public asset's path does not matter: public is public.
  const otherPub = await cdn(`${targetOf(text.publicUrl)}?expires=${expires}&signature=${sig}`);
  t.equal(otherPub.status, 200);
  t.equal(otherPub.headers['cache-control'], 'public, max-age=3600', 'an invalid signature on a public asset: the public answer');
});

t.test('an expired signed URL is a 404', async (t) => {
  const { url } = await alice.client.signedUrl(priv.id, 1);
  const target = targetOf(url);
  const expires = Number(/expires=(\d+)/.exec(target)?.[1]);
  // Valid through its expiry second; wait for the clock to pass it (the server shares this clock).
  while (Date.now() < (expires + 1) * 1000 + 50) await new Promise((r) => setTimeout(r, 100));
  assertBareNotFound(t, await cdn(target), 'expired');
});

t.test('active content is only ever an attachment, even signed', async (t) => {
  const svg = await alice.client.upload({ file: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), fileName: 'logo.svg', contentType: 'image/svg+xml', visibility: 'public' });
  t.equal(svg.visibility, 'private', 'forced private at upload');
  assertBareNotFound(t, await cdn(targetOf(svg.publicUrl)), 'its public URL');
  const res = await cdn(targetOf((await alice.client.signedUrl(svg.id)).url));
  t.equal(res.status, 200);
  t.match(res.headers, { 'content-type': 'image/svg+xml', 'content-disposition': 'attachment; filename="logo.svg"', ...SAFETY });
  const html = await alice.client.upload({ file: Buffer.from('<p>hi'), fileName: 'page.html', contentType: 'text/html', visibility: 'private' });
  const page = await cdn(targetOf((await alice.client.signedUrl(html.id)).url));
  t.match(page.headers, { 'content-type': 'text/html', 'content-disposition': 'attachment; filename="page.html"', ...SAFETY });
});

t.test('non-ASCII file names: the percent-encoded publicUrl works', async (t) => {
  // A plain-text CV (a PDF would be active content: private, docs/CDN.md).
  const a = await alice.client.upload({ file: Buffer.from('my cv'), fileName: 'résumé 📄.txt', contentType: 'text/plain' });
  const res = await cdn(targetOf(a.publicUrl));
  t.equal(res.status, 200);
  t.equal(res.text, 'my cv');
  t.equal(res.headers['content-disposition'], `inline; filename="r_sum_ _.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%F0%9F%93%84.txt`);
  const lower = await cdn(targetOf(a.publicUrl).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  t.equal(lower.status, 200, 'lowercase percent-encoding names the same file');
  const partly = await cdn(`/${a.id}/r%C3%A9sum%C3%A9 %F0%9F%93%84.txt`.replace(' ', '%20').replace('.txt', '%2Etxt'));
  t.equal(partly.status, 200, 'so does an encoded dot');
});

t.test('a suspended space: 403 for what would be served, still 404 for what would not', async (t) => {
  const carol = await apiUser(server, ['assets:read', 'assets:write'], { recorder });
  const open = await carol.client.upload({ file: Buffer.from('open'), fileName: 'open.txt', contentType: 'text/plain' });
  const closed = await carol.client.upload({ file: Buffer.from('closed'), fileName: 'closed.txt', visibility: 'private' });
  const signed = targetOf((await carol.client.signedUrl(closed.id)).url);
  await server.admin(['spaces', 'suspend', '--user', carol.name]);
  for (const [target, what] of [[targetOf(open.publicUrl), 'public asset'], [signed, 'signed private asset']] as const) {
    const res = await cdn(target);
    t.equal(res.status, 403, `${what}: 403`);
    t.equal(res.text, 'Forbidden\n', `${what}: no detail`);
    t.match(res.headers, { 'content-type': 'text/plain; charset=utf-8', ...SAFETY });
  }
  assertBareNotFound(t, await cdn(targetOf(closed.publicUrl)), 'unsigned private asset of a suspended space');
  t.equal((await cdn(targetOf(pub.publicUrl))).status, 200, "another user's space is unaffected");
  await server.admin(['spaces', 'resume', '--user', carol.name]);
  // The CDN keeps a space's status for up to a second (docs/CDN.md).
  await eventually(async () => (await cdn(targetOf(open.publicUrl))).status === 200, 'resumed: served again');
  t.pass('resumed: served again');
});

t.test('a deleted asset is gone from the CDN', async (t) => {
  const gone = await bob.client.upload({ file: Buffer.from('brief'), fileName: 'brief.txt' });
  t.equal((await cdn(targetOf(gone.publicUrl))).status, 200);
  const signed = targetOf((await bob.client.signedUrl(gone.id)).url);
  await bob.client.deleteAsset(gone.id);
  assertBareNotFound(t, await cdn(targetOf(gone.publicUrl)), 'public URL after delete');
  assertBareNotFound(t, await cdn(signed), 'signed URL after delete');
});

t.test('CDN downloads are usage events with source cdn and the CDN hostname', async (t) => {
  const before = query<{ n: number }>(server, "SELECT count(*) AS n FROM usage_events WHERE asset_id = ? AND source = 'cdn'", text.id)[0]?.n ?? 0;
  await cdn(targetOf(text.publicUrl));
  await cdn(targetOf(text.publicUrl), { headers: [['Range', 'bytes=0-4']] });
  const cdnEvents = (): { event_type: string; bytes: number; status_code: number; hostname: string; metadata: string; user_id: string }[] => query(server,
    "SELECT event_type, bytes, status_code, hostname, metadata, user_id FROM usage_events WHERE asset_id = ? AND source = 'cdn' ORDER BY seq", text.id);
  await eventually(() => cdnEvents().length >= before + 2, 'the CDN download events');
  const events = cdnEvents();
  t.equal(events.length, before + 2, 'one event per body served');
  t.same(events.slice(-2).map((e) => [e.event_type, e.bytes, e.status_code, e.hostname, JSON.parse(e.metadata)]), [
    ['download', 12, 200, 'cdn.localhost', { key: text.key }],
    ['download', 5, 206, 'cdn.localhost', { key: text.key }],
  ]);
  t.equal(events[0]?.user_id, query<{ user_id: string }>(server, 'SELECT user_id FROM assets WHERE id = ?', text.id)[0]?.user_id, "the owner's event");
});

t.test('no CDN or API response carries a blob id, the data dir or a provider name', async (t) => {
  const blobIds = query<{ blob_id: string }>(server, 'SELECT blob_id FROM assets').map((r) => r.blob_id);
  t.ok(blobIds.length >= 5);
  recorder.assertNoLeaks(t, [...PROVIDER_NAMES, server.dataDir, ...blobIds, 'storage/blobs']);
  const errors = server.output().split('\n').filter((l) => /"level":(50|60)/.test(l));
  t.same(errors, [], 'the server logged no error');
});
