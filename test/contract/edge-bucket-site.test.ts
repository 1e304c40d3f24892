// A project hostname's bucket site (src/edge/bucket-site.ts) over real sockets: the gateway runs in
// this process (createContext + startServer), objects go in through its S3 door with signed PUTs, and
// createBucketSite answers on a small http server of the test's own, reached with a raw HTTP client
// (exact request targets: `//host`, bad escapes). Index documents, the 301 to the slash form, the
// error document, ranges, conditionals, HEAD, 405, owners, and what the site returns to its caller.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createContext } from '../../src/context.js';
import { createBucketSite, directoryLocation, siteTarget, type BucketOrigin, type SiteOutcome } from '../../src/edge/bucket-site.js';
import { startServer } from '../../src/server.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { tempDir, testConfig } from '../helpers/temp-data.js';

const HOME = '<!doctype html><h1>home</h1><script>document.title = "home"</script>';
const DOCS = '<!doctype html><h1>docs</h1>';
const GUIDE = '<!doctype html><h1>guide</h1>';
const MISSING = '<!doctype html><h1>not here</h1>';
const DATA = randomBytes(1000);

t.test('bucket site', async (t) => {
  const rootKey = { accessKeyId: `SITEROOT${randomBytes(4).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(30).toString('base64url') };
  const ctx = await createContext(
    testConfig({
      dataDir: tempDir(t),
      logLevel: 'silent',
      host: '127.0.0.1',
      port: '0',
      'cdn.port': '0',
      rootAccessKey: rootKey.accessKeyId,
      rootSecretKey: rootKey.secretAccessKey,
    }),
  );
  const gateway = await startServer(ctx);
  const s3 = new RawS3({ url: gateway.url }, rootKey);

  t.equal((await s3.createBucket('site')).status, 200);
  const puts: Array<[string, Buffer | string, Record<string, string>]> = [
    ['index.html', HOME, { 'content-type': 'text/html; charset=utf-8' }],
    ['docs/index.html', DOCS, { 'content-type': 'text/html' }],
    ['docs/guide.html', GUIDE, { 'content-type': 'text/html', 'cache-control': 'public, max-age=60' }],
    ['404.html', MISSING, { 'content-type': 'text/html' }],
    ['app.js', 'console.log("hi")', { 'content-type': 'text/javascript' }],
    ['data.bin', DATA, { 'content-type': 'application/octet-stream' }],
    ['a b.txt', 'spaced', { 'content-type': 'text/plain' }],
    ['/evil.example/index.html', 'slash key', { 'content-type': 'text/plain' }],
  ];
  for (const [key, body, headers] of puts) t.equal((await s3.putObject('site', key, Buffer.from(body), headers)).status, 200, `PUT ${key}`);

  const bucket = await ctx.repos.buckets.getByName('site');
  const root = await ctx.repos.users.getByName('root');
  if (!bucket || !root) throw new Error('bucket or root user missing');
  const stranger = await ctx.repos.users.create('stranger');

  // What the edge handler would pass: the hostname's origin and owner (changed by the tests).
  let origin: BucketOrigin = { kind: 'bucket', bucketId: bucket.id, indexDocument: 'index.html', errorDocument: '404.html' };
  let ownerId = root.id;
  const site = createBucketSite(ctx);
  // The outcome of the latest request (they are sent one at a time).
  let outcome: Promise<SiteOutcome> | undefined;
  const server = createServer((req, res) => {
    outcome = site(req, res, origin, ownerId);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await gateway.close();
    await ctx.close();
  });

  const get = (target: string, headers: Array<[string, string]> = [], method = 'GET'): Promise<RawResponse> =>
    rawRequest({ url }, { method, target, headers: [['host', 'www.example.test'], ...headers] });
  const last = (): Promise<SiteOutcome | undefined> => outcome ?? Promise.resolve(undefined);

  t.test('the index document at the root: inline HTML, no sandbox, cached after the first read', async (t) => {
    const first = await get('/');
    t.equal(first.status, 200);
    t.equal(first.text, HOME);
    t.equal(first.headers['content-type'], 'text/html; charset=utf-8');
    t.equal(first.headers['content-disposition'], undefined, 'inline, not an attachment');
    t.equal(first.headers['content-security-policy'], undefined, 'the user\'s own site: its scripts run');
    t.equal(first.headers['x-content-type-options'], 'nosniff');
    t.equal(first.headers['x-cache'], 'MISS');
    t.same(await last(), { status: 200, bytesSent: Buffer.byteLength(HOME), cacheStatus: 'MISS' }, 'the outcome for the request log');
    const second = await get('/index.html');
    t.equal(second.text, HOME);
    t.equal(second.headers['x-cache'], 'HIT', 'the object\'s cache entry, whichever path named it');
    const js = await get('/app.js');
    t.equal(js.headers['content-type'], 'text/javascript');
    t.equal(js.headers['content-disposition'], undefined);
  });

  t.test('nested index documents and the 301 to the slash form', async (t) => {
    const docs = await get('/docs/');
    t.equal(docs.status, 200);
    t.equal(docs.text, DOCS);
    const redirect = await get('/docs');
    t.equal(redirect.status, 301);
    t.equal(redirect.headers.location, '/docs/');
    t.equal((await get('/docs?page=2')).headers.location, '/docs/?page=2', 'the query string is kept');
    const guide = await get('/docs/guide.html');
    t.equal(guide.text, GUIDE);
    t.equal(guide.headers['cache-control'], 'public, max-age=60', 'the stored Cache-Control');
    t.equal((await get('/a%20b.txt')).text, 'spaced', 'the path is percent-decoded');
  });

  t.test('a key starting with a slash never redirects to another host', async (t) => {
    const res = await get('//evil.example');
    t.equal(res.status, 301);
    t.equal(res.headers.location, '/%2Fevil.example/');
    const followed = await get(res.headers.location ?? '');
    t.equal(followed.status, 200);
    t.equal(followed.text, 'slash key');
    t.equal(directoryLocation('\\evil.example', ''), '/%5Cevil.example/', 'a backslash is escaped too');
  });

  t.test('the error document with status 404, or a bare 404', async (t) => {
    const missing = await get('/nope.html', [['if-none-match', '*'], ['range', 'bytes=0-3']]);
    t.equal(missing.status, 404);
    t.equal(missing.text, MISSING, 'conditionals and Range do not apply to it');
    t.equal(missing.headers['content-type'], 'text/html');
    t.match(await last(), { status: 404, bytesSent: Buffer.byteLength(MISSING) });
    const head = await get('/nope.html', [], 'HEAD');
    t.equal(head.status, 404);
    t.equal(head.headers['content-length'], String(Buffer.byteLength(MISSING)));
    t.equal(head.body.length, 0);
    t.equal((await get('/empty/')).text, MISSING, 'a directory without an index document');

    origin = { ...origin, errorDocument: null };
    const bare = await get('/nope.html');
    t.equal(bare.status, 404);
    t.equal(bare.text, 'Not Found\n');
    origin = { ...origin, errorDocument: 'gone.html' };
    t.equal((await get('/nope.html')).text, 'Not Found\n', 'an error document that is missing too');
    origin = { ...origin, errorDocument: '404.html' };
  });

  t.test('ranges, conditionals and HEAD on an object', async (t) => {
    const part = await get('/data.bin', [['range', 'bytes=10-19']]);
    t.equal(part.status, 206);
    t.equal(part.headers['content-range'], 'bytes 10-19/1000');
    t.ok(part.body.equals(DATA.subarray(10, 20)));
    const etag = part.headers.etag ?? '';
    t.match(etag, /^"[0-9a-f]{32}"$/);
    const unsatisfiable = await get('/data.bin', [['range', 'bytes=5000-']]);
    t.equal(unsatisfiable.status, 416);
    t.equal(unsatisfiable.headers['content-range'], 'bytes */1000');
    const notModified = await get('/data.bin', [['if-none-match', etag]]);
    t.equal(notModified.status, 304);
    t.equal(notModified.body.length, 0);
    t.match(await last(), { status: 304, bytesSent: 0 });
    t.equal((await get('/data.bin', [['if-match', '"other"']])).status, 412);
    const head = await get('/data.bin', [], 'HEAD');
    t.equal(head.status, 200);
    t.equal(head.headers['content-length'], '1000');
    t.equal(head.body.length, 0);
    const whole = await get('/data.bin');
    t.ok(whole.body.equals(DATA));
  });

  t.test('only GET and HEAD', async (t) => {
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
      const res = await get('/', [['content-length', '0']], method);
      t.equal(res.status, 405, method);
      t.equal(res.headers.allow, 'GET, HEAD');
    }
  });

  t.test('the bucket must still be the owner\'s', async (t) => {
    ownerId = stranger.id;
    t.equal((await get('/')).status, 404, 'another owner: 404');
    t.equal((await get('/docs')).status, 404, 'no redirect either');
    ownerId = root.id;
    origin = { ...origin, bucketId: 'no-such-bucket' };
    t.equal((await get('/')).status, 404, 'a bucket that is gone: 404');
    origin = { ...origin, bucketId: bucket.id };
    t.equal((await get('/')).status, 200);
  });

  t.test('bad request targets get a plain 400', async (t) => {
    const res = await get('/%E0%A4%A');
    t.equal(res.status, 400);
    t.equal(res.text, 'Bad Request\n');
    t.equal((await get('/%zz')).status, 400);
  });
});

t.test('request targets as keys', async (t) => {
  t.same(siteTarget('/', 'index.html'), { key: 'index.html', directory: true, query: '' });
  t.same(siteTarget('/a/b/?x=1', 'index.html'), { key: 'a/b/index.html', directory: true, query: '?x=1' });
  t.same(siteTarget('/a/b', 'index.html'), { key: 'a/b', directory: false, query: '' });
  t.same(siteTarget('/caf%C3%A9%2Fx', 'i.htm'), { key: 'café/x', directory: false, query: '' });
  t.same(siteTarget('/a+b', 'index.html'), { key: 'a+b', directory: false, query: '' }, '+ is not a space in a path');
  t.same(siteTarget('http://www.example.test/docs/?q', 'index.html'), { key: 'docs/index.html', directory: true, query: '?q' }, 'absolute-form');
  t.equal(siteTarget('/%E0%A4%A', 'index.html'), undefined);
  t.equal(siteTarget('*', 'index.html'), undefined);
  t.equal(siteTarget(undefined, 'index.html'), undefined);
  t.equal(directoryLocation('docs', '?a=1'), '/docs/?a=1');
  t.equal(directoryLocation('a b/ü', ''), '/a%20b/%C3%BC/');
});
