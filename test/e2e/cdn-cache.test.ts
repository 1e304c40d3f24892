// The CDN edge cache end to end: the compiled server, requests to its CDN listener over a real socket
// with `Host: cdn.localhost:<port>` (raw HTTP, byte for byte), assets made with the typed client,
// public bucket objects written with aws cli. Storage reads are counted by the cache itself and read
// through GET /api/v3/cdn/cache. The memory tier's per-entry cap is lowered to 64 KiB so that "large"
// objects (served from the disk tier) stay small.
import t, { type Test } from 'tap';
import { readdirSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { ApiClientError, type CacheStats } from '../../src/client/index.js';
import { apiClient, apiUser, eventually, PROVIDER_NAMES, query, ResponseRecorder } from '../helpers/api.js';
import { runAws, writeAwsConfig, type AwsTarget } from '../helpers/aws-cli.js';
import { CdnClient, type CdnRequestOptions } from '../helpers/cdn.js';
import type { RawResponse } from '../helpers/raw-http.js';
import { createAccountKey, startServer } from '../helpers/server.js';

const MEMORY_ENTRY_MAX = 64 * 1024;
const recorder = new ResponseRecorder();
const server = await startServer({ env: { S3EDGE_CDN_CACHE_MEMORY_ENTRY_MAX_BYTES: String(MEMORY_ENTRY_MAX) } });
t.teardown(() => server.stop());
// Object bytes are the test's own patterns: the first 256 KiB of a body are plenty for the scan.
const cdnClient = new CdnClient(server, recorder, 256 * 1024);
const targetOf = (url: string): string => cdnClient.targetOf(url);
const cdn = (target: string, opts: Pick<CdnRequestOptions, 'method' | 'headers'> = {}): Promise<RawResponse> => cdnClient.request(target, opts);

const SAFETY = { 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'none'; sandbox" };

function assertBareNotFound(t: Test, res: RawResponse, what: string, head = false): void {
  t.equal(res.status, 404, `${what}: 404`);
  t.equal(res.text, head ? '' : 'Not Found\n', `${what}: no detail`);
  t.equal(res.headers['x-cache'], undefined, `${what}: no cache status`);
}

const alice = await apiUser(server, ['assets:read', 'assets:write', 'buckets:manage'], { recorder });
const bob = await apiUser(server, ['assets:read', 'assets:write', 'buckets:manage'], { recorder });
const metrics = await apiUser(server, ['metrics:read'], { recorder });
const stats = (): Promise<CacheStats> => metrics.client.cacheStats();

/**
 * Waits for the fills in flight to publish their files: a client gets its last byte before the
 * cache file is synced and indexed (a bound, not a timed assertion).
 */
const settled = (): Promise<void> => eventually(async () => (await stats()).fillsInFlight === 0, 'cache fills to finish');

/** Runs `fn` and returns how many storage reads the CDN made meanwhile. */
async function storageReadsDuring(fn: () => Promise<unknown>): Promise<number> {
  const before = (await stats()).storageReads;
  await fn();
  return (await stats()).storageReads - before;
}

/** Distinct bytes per size (the leak scan reads bodies as text: no random bytes). */
function pattern(size: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length: size }, (_, i) => 0x41 + ((i * 7 + seed) % 26)));
}

t.test('MISS then HIT with identical bytes and the cache headers', async (t) => {
  const data = pattern(10_000, 1);
  const asset = await alice.client.upload({ file: data, fileName: 'letters.bin', contentType: 'application/octet-stream' });
  const target = targetOf(asset.publicUrl);
  let first: RawResponse | undefined;
  t.equal(await storageReadsDuring(async () => (first = await cdn(target))), 1, 'a miss reads storage once');
  t.equal(first?.status, 200);
  t.equal(first?.headers['x-cache'], 'MISS');
  t.equal(first?.headers.age, '0');
  t.ok(first?.body.equals(data), 'the bytes');
  let second: RawResponse | undefined;
  t.equal(await storageReadsDuring(async () => (second = await cdn(target))), 0, 'a hit reads no storage');
  t.equal(second?.headers['x-cache'], 'HIT');
  t.ok(second?.body.equals(data), 'identical bytes');
  t.match(second?.headers, {
    ...SAFETY,
    'content-type': 'application/octet-stream',
    'content-length': String(data.length),
    'accept-ranges': 'bytes',
    etag: asset.etag,
    'cache-control': 'public, max-age=3600',
    'content-disposition': 'inline; filename="letters.bin"',
    age: /^\d+$/,
  });
  t.notOk(second?.headers.vary, 'no Vary for a type never compressed');
});

t.test('304 and 206 answered from the cache', async (t) => {
  const data = pattern(20_000, 2);
  const asset = await alice.client.upload({ file: data, fileName: 'range.bin' });
  const target = targetOf(asset.publicUrl);
  await cdn(target);
  const reads = await storageReadsDuring(async () => {
    const nm = await cdn(target, { headers: [['If-None-Match', asset.etag]] });
    t.equal(nm.status, 304);
    t.equal(nm.headers['x-cache'], 'HIT', '304: HIT');
    t.match(nm.headers, { etag: asset.etag, 'cache-control': 'public, max-age=3600', ...SAFETY });
    t.equal(nm.body.length, 0);
    const ims = await cdn(target, { headers: [['If-Modified-Since', new Date(Date.now() + 60_000).toUTCString()]] });
    t.equal(ims.status, 304);
    t.equal(ims.headers['x-cache'], 'HIT');
    const part = await cdn(target, { headers: [['Range', 'bytes=100-199']] });
    t.equal(part.status, 206);
    t.equal(part.headers['x-cache'], 'HIT', '206: HIT');
    t.equal(part.headers['content-range'], `bytes 100-199/${data.length}`);
    t.ok(part.body.equals(data.subarray(100, 200)), 'the range');
    const suffix = await cdn(target, { headers: [['Range', 'bytes=-10']] });
    t.ok(suffix.body.equals(data.subarray(-10)), 'a suffix range');
    const ifRange = await cdn(target, { headers: [['Range', 'bytes=0-9'], ['If-Range', '"other"']] });
    t.equal(ifRange.status, 200, 'If-Range with another ETag: the whole body');
    t.ok(ifRange.body.equals(data));
    const bad = await cdn(target, { headers: [['Range', `bytes=${data.length}-`]] });
    t.equal(bad.status, 416);
    t.equal(bad.headers['content-range'], `bytes */${data.length}`);
    const pre = await cdn(target, { headers: [['If-Match', '"nope"']] });
    t.equal(pre.status, 412);
  });
  t.equal(reads, 0, 'none of them read storage');
});

t.test('a cold Range request fills the whole object; the full GET after it is whole', async (t) => {
  const data = pattern(30_000, 3);
  const asset = await alice.client.upload({ file: data, fileName: 'cold-range.bin' });
  const target = targetOf(asset.publicUrl);
  const reads = await storageReadsDuring(async () => {
    const part = await cdn(target, { headers: [['Range', 'bytes=1000-1099']] });
    t.equal(part.status, 206);
    t.equal(part.headers['x-cache'], 'MISS');
    t.ok(part.body.equals(data.subarray(1000, 1100)), 'the range');
    const whole = await cdn(target);
    t.equal(whole.status, 200);
    t.equal(whole.headers['x-cache'], 'HIT');
    t.equal(whole.headers['content-length'], String(data.length));
    t.ok(whole.body.equals(data), 'the full object, not the range');
  });
  t.equal(reads, 1, 'one read of the whole object');
});

t.test('HEAD and conditionals on a cold object answer from metadata and cache nothing', async (t) => {
  const data = pattern(12_345, 4);
  const asset = await alice.client.upload({ file: data, fileName: 'head.bin' });
  const target = targetOf(asset.publicUrl);
  const reads = await storageReadsDuring(async () => {
    const head = await cdn(target, { method: 'HEAD' });
    t.equal(head.status, 200);
    t.equal(head.headers['x-cache'], 'BYPASS');
    t.equal(head.headers['content-length'], String(data.length));
    t.equal(head.headers.etag, asset.etag);
    t.equal(head.body.length, 0);
    const nm = await cdn(target, { headers: [['If-None-Match', asset.etag]] });
    t.equal(nm.status, 304);
    t.equal(nm.headers['x-cache'], 'BYPASS');
    const headRange = await cdn(target, { method: 'HEAD', headers: [['Range', 'bytes=0-9']] });
    t.equal(headRange.status, 206);
    t.equal(headRange.headers['content-range'], `bytes 0-9/${data.length}`);
  });
  t.equal(reads, 0, 'no storage read');
  const get = await cdn(target);
  t.equal(get.headers['x-cache'], 'MISS', 'the first GET is still a miss');
  t.ok(get.body.equals(data), 'and whole');
  const head = await cdn(target, { method: 'HEAD' });
  t.equal(head.headers['x-cache'], 'HIT', 'HEAD of a cached object: HIT');
  t.equal(head.headers.age !== undefined, true);
});

t.test('50 concurrent cold requests for one object: exactly one storage read', async (t) => {
  for (const [what, size] of [['large (followed on disk)', 1024 * 1024 + 17], ['small (memory)', 40_000]] as const) {
    const data = pattern(size, 5);
    const asset = await alice.client.upload({ file: data, fileName: `crowd-${size}.bin` });
    const target = targetOf(asset.publicUrl);
    let responses: RawResponse[] = [];
    const reads = await storageReadsDuring(async () => {
      responses = await Promise.all(Array.from({ length: 50 }, () => cdn(target)));
    });
    t.equal(reads, 1, `${what}: one storage read for 50 requests`);
    t.ok(responses.every((r) => r.status === 200 && r.body.equals(data)), `${what}: every response is the whole object`);
    t.ok(responses.some((r) => r.headers['x-cache'] === 'MISS'), `${what}: misses shared the fill`);
    t.ok(responses.every((r) => r.headers['x-cache'] === 'MISS' || r.headers['x-cache'] === 'HIT'), `${what}: MISS or HIT`);
  }
});

t.test('a large object (over memoryEntryMaxBytes) is served from the disk tier', async (t) => {
  const data = pattern(MEMORY_ENTRY_MAX * 4 + 3, 6);
  const asset = await alice.client.upload({ file: data, fileName: 'large.bin' });
  const target = targetOf(asset.publicUrl);
  const before = await stats();
  const miss = await cdn(target);
  t.equal(miss.headers['x-cache'], 'MISS');
  t.ok(miss.body.equals(data));
  await settled();
  const after = await stats();
  t.equal(after.diskEntries, before.diskEntries + 1, 'one more file on disk');
  t.equal(after.memoryBytes, before.memoryBytes, 'nothing more in memory');
  const reads = await storageReadsDuring(async () => {
    const hit = await cdn(target);
    t.equal(hit.headers['x-cache'], 'HIT');
    t.ok(hit.body.equals(data), 'whole from disk');
    const part = await cdn(target, { headers: [['Range', `bytes=${MEMORY_ENTRY_MAX * 3}-${MEMORY_ENTRY_MAX * 3 + 99}`]] });
    t.equal(part.headers['x-cache'], 'HIT');
    t.ok(part.body.equals(data.subarray(MEMORY_ENTRY_MAX * 3, MEMORY_ENTRY_MAX * 3 + 100)), 'a range from disk');
  });
  t.equal(reads, 0);
  t.equal((await stats()).memoryBytes, before.memoryBytes, 'still not in memory');
});

t.test('a private asset: 404 without a signature, served with one, never leaked through the cache', async (t) => {
  const secret = Buffer.from('the private plan, cached or not\n');
  const asset = await alice.client.upload({ file: secret, fileName: 'plan.txt', contentType: 'text/plain', visibility: 'private' });
  const unsigned = targetOf(asset.publicUrl);
  assertBareNotFound(t, await cdn(unsigned), 'unsigned, cold');
  const signed = targetOf((await alice.client.signedUrl(asset.id)).url);
  const first = await cdn(signed);
  t.equal(first.status, 200);
  t.equal(first.text, secret.toString());
  t.equal(first.headers['cache-control'], 'private, no-store');
  t.equal(first.headers['x-cache'], 'MISS');
  assertBareNotFound(t, await cdn(unsigned), 'unsigned, while cached');
  assertBareNotFound(t, await cdn(unsigned, { method: 'HEAD' }), 'unsigned HEAD, while cached', true);
  assertBareNotFound(t, await cdn(unsigned, { headers: [['If-None-Match', asset.etag]] }), 'unsigned conditional, while cached');
  assertBareNotFound(t, await cdn(unsigned, { headers: [['Range', 'bytes=0-3']] }), 'unsigned range, while cached');
  assertBareNotFound(t, await cdn(`${unsigned}?expires=9999999999&signature=${'A'.repeat(43)}`), 'forged signature, while cached');
  const again = await cdn(signed);
  t.equal(again.headers['x-cache'], 'HIT', 'signed again: from the cache');
  t.equal(again.text, secret.toString());
  t.equal(again.headers['cache-control'], 'private, no-store');
});

t.test('gzip and br for text types, with Vary; identity for ranges and binary types', async (t) => {
  const css = Buffer.from('.button { color: rebeccapurple; padding: 4px 8px; border-radius: 3px; }\n'.repeat(120));
  const asset = await alice.client.upload({ file: css, fileName: 'site.css', contentType: 'text/css' });
  const target = targetOf(asset.publicUrl);
  const gz = await cdn(target, { headers: [['Accept-Encoding', 'gzip, deflate']] });
  t.equal(gz.status, 200);
  t.match(gz.headers, { 'content-encoding': 'gzip', vary: 'Accept-Encoding', 'content-type': 'text/css', etag: `W/${asset.etag}`, ...SAFETY });
  t.equal(gz.headers['content-length'], String(gz.body.length));
  t.ok(gz.body.length < css.length / 5, 'much smaller');
  t.ok(gunzipSync(gz.body).equals(css), 'gunzips to the object');
  const br = await cdn(target, { headers: [['Accept-Encoding', 'gzip, br']] });
  t.equal(br.headers['content-encoding'], 'br', 'br preferred');
  t.ok(brotliDecompressSync(br.body).equals(css), 'brotli decodes to the object');
  const again = await cdn(target, { headers: [['Accept-Encoding', 'br']] });
  t.equal(again.headers['x-cache'], 'HIT');
  t.ok(again.body.equals(br.body), 'the cached variant');
  const plain = await cdn(target);
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: identity');
  t.equal(plain.headers.vary, 'Accept-Encoding', 'still Vary');
  t.equal(plain.headers.etag, asset.etag, 'the strong ETag');
  t.ok(plain.body.equals(css));
  const refused = await cdn(target, { headers: [['Accept-Encoding', 'gzip;q=0, br;q=0']] });
  t.equal(refused.headers['content-encoding'], undefined, 'q=0 refuses');
  const part = await cdn(target, { headers: [['Accept-Encoding', 'gzip'], ['Range', 'bytes=0-6']] });
  t.equal(part.status, 206);
  t.equal(part.headers['content-encoding'], undefined, 'a range is identity bytes');
  t.equal(part.text, '.button');
  t.equal(part.headers.vary, 'Accept-Encoding');
  const nm = await cdn(target, { headers: [['Accept-Encoding', 'gzip'], ['If-None-Match', `W/${asset.etag}`]] });
  t.equal(nm.status, 304, 'the variant ETag revalidates');
  t.equal(nm.headers.etag, `W/${asset.etag}`);
  const head = await cdn(target, { method: 'HEAD', headers: [['Accept-Encoding', 'gzip']] });
  t.equal(head.headers['content-length'], String(css.length), 'HEAD describes the identity body');
  const bin = await alice.client.upload({ file: pattern(5000, 7), fileName: 'blob.bin', contentType: 'application/octet-stream' });
  const binRes = await cdn(targetOf(bin.publicUrl), { headers: [['Accept-Encoding', 'gzip, br']] });
  t.equal(binRes.headers['content-encoding'], undefined, 'a binary type is never compressed');
  t.equal(binRes.headers.vary, undefined);
  const big = pattern(MEMORY_ENTRY_MAX + 1, 8);
  const bigText = await alice.client.upload({ file: big, fileName: 'big.txt', contentType: 'text/plain' });
  const bigRes = await cdn(targetOf(bigText.publicUrl), { headers: [['Accept-Encoding', 'gzip']] });
  t.equal(bigRes.headers['content-encoding'], undefined, 'text beyond the memory tier goes identity');
  t.equal(bigRes.headers.vary, 'Accept-Encoding');
  t.ok(bigRes.body.equals(big));
});

t.test('query parameters never split the cache or change the stored type', async (t) => {
  const asset = await alice.client.upload({ file: Buffer.from('plain words\n'), fileName: 'words.txt', contentType: 'text/plain' });
  const target = targetOf(asset.publicUrl);
  t.equal((await cdn(target)).headers['x-cache'], 'MISS');
  const reads = await storageReadsDuring(async () => {
    for (const q of ['?response-content-type=text/html', '?response-content-disposition=attachment', '?v=2&utm_source=mail', '?']) {
      const res = await cdn(`${target}${q}`);
      t.equal(res.headers['x-cache'], 'HIT', `${q}: HIT`);
      t.equal(res.headers['content-type'], 'text/plain', `${q}: the stored type`);
      t.equal(res.headers['content-disposition'], 'inline; filename="words.txt"', `${q}: the stored disposition`);
      t.equal(res.text, 'plain words\n');
    }
  });
  t.equal(reads, 0);
});

t.test('deleting an asset purges its cached copy', async (t) => {
  const asset = await bob.client.upload({ file: pattern(2000, 9), fileName: 'short-lived.bin' });
  await cdn(targetOf(asset.publicUrl));
  await settled();
  const before = await stats();
  await bob.client.deleteAsset(asset.id);
  const after = await stats();
  t.equal(after.memoryEntries, before.memoryEntries - 1, 'gone from memory');
  t.equal(after.diskEntries, before.diskEntries - 1, 'gone from disk');
  assertBareNotFound(t, await cdn(targetOf(asset.publicUrl)), 'after delete');
});

t.test('the purge API', async (t) => {
  const one = await alice.client.upload({ file: pattern(3000, 10), fileName: 'purge-one.bin' });
  await cdn(targetOf(one.publicUrl));
  t.equal(await alice.client.purge({ assetId: one.id }), 1, 'one asset purged');
  t.equal(await alice.client.purge({ assetId: one.id }), 0, 'nothing left to purge');
  t.equal((await cdn(targetOf(one.publicUrl))).headers['x-cache'], 'MISS', 'refetched after the purge');

  const bobs = await bob.client.upload({ file: pattern(3000, 11), fileName: 'bobs.bin' });
  await cdn(targetOf(bobs.publicUrl));
  const all = await alice.client.purge({ all: true });
  t.ok(all >= 1, `all of alice's cached objects (${all})`);
  t.equal((await cdn(targetOf(one.publicUrl))).headers['x-cache'], 'MISS', "alice's asset purged");
  t.equal((await cdn(targetOf(bobs.publicUrl))).headers['x-cache'], 'HIT', "bob's asset untouched");

  const err = async (fn: () => Promise<unknown>): Promise<ApiClientError> => {
    try {
      await fn();
    } catch (e) {
      if (e instanceof ApiClientError) return e;
      throw e;
    }
    throw new Error('no error');
  };
  const notMine = await err(() => alice.client.purge({ assetId: bobs.id }));
  t.match({ status: notMine.status, body: notMine.body }, { status: 404, body: { success: false, code: 'not_found' } }, "bob's asset: 404");
  t.equal((await cdn(targetOf(bobs.publicUrl))).headers['x-cache'], 'HIT', 'and still cached');
  const unknown = await err(() => alice.client.purge({ assetId: 'f'.repeat(32) }));
  t.equal(unknown.status, 404);
  const noBucket = await err(() => alice.client.purge({ bucket: 'no-such-bucket-here' }));
  t.equal(noBucket.status, 404);
  for (const [body, message] of [
    [{}, /Nothing to purge/],
    [{ all: false }, /all must be true/],
    [{ assetId: 5 }, /assetId must be a string/],
    [{ assetId: one.id, all: true }, /unknown field 'all'/],
    [{ bucket: 'x', prefix: 7 }, /prefix must be a string/],
    [{ bucket: 'x', keys: [] }, /unknown field 'keys'/],
    [[1, 2], /JSON object/],
  ] as const) {
    const res = await alice.client.raw('POST', '/api/v3/cdn/purge', { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 400, `${JSON.stringify(body)}: 400`);
    t.match(JSON.parse(res.body.toString()), { success: false, code: 'invalid_request', message }, `${JSON.stringify(body)}: says why`);
  }
  const noBody = await alice.client.raw('POST', '/api/v3/cdn/purge');
  t.equal(noBody.status, 400, 'no body: 400');
  const readOnly = await apiUser(server, ['assets:read'], { name: alice.name, recorder });
  t.equal((await readOnly.client.raw('POST', '/api/v3/cdn/purge', { body: '{"all":true}', headers: { 'content-type': 'application/json' } })).status, 403, 'without assets:write: 403');
  t.equal((await apiClient(server, 'nope').raw('POST', '/api/v3/cdn/purge')).status, 401, 'no valid token: 401');
  t.equal((await alice.client.raw('GET', '/api/v3/cdn/cache')).status, 403, 'cache stats need metrics:read');
});

t.test("GET and POST /api/v3/buckets: the caller's own buckets", async (t) => {
  const name = `made-${process.pid}`;
  t.match(await alice.client.createBucket(name), { name, region: 'us-east-1', public: false, objects: 0 }, 'created');
  const mine = await alice.client.listBuckets();
  t.match(mine.find((b) => b.name === name), { name, public: false, objects: 0, createdAt: /^\d{4}-\d\d-\d\dT/ }, 'listed for its owner');
  t.notOk((await bob.client.listBuckets()).some((b) => b.name === name), 'not for another user');
  const post = (client: typeof alice.client, body: string): Promise<{ status: number; code: unknown }> =>
    client.raw('POST', '/api/v3/buckets', { body, headers: { 'content-type': 'application/json' } }).then((r) => ({ status: r.status, code: (JSON.parse(r.body.toString("utf8")) as { code?: unknown }).code }));
  t.same(await post(bob.client, JSON.stringify({ name })), { status: 409, code: 'bucket_exists' }, "another user's name: 409");
  t.same(await post(alice.client, JSON.stringify({ name })), { status: 409, code: 'bucket_exists' }, 'its own again: 409');
  for (const bad of ['Bad_Name', 'ab', 'dashboard', 'api', '192.168.1.1']) {
    t.same(await post(alice.client, JSON.stringify({ name: bad })), { status: 400, code: 'invalid_bucket_name' }, `${bad}: 400`);
  }
  t.same(await post(alice.client, '{"name":"ok-name","region":"eu-west-1"}'), { status: 400, code: 'invalid_request' }, 'an unknown field: 400');
  const unauthorized = await metrics.client.raw('GET', '/api/v3/buckets');
  t.equal(unauthorized.status, 403, 'without buckets:manage: 403');
});

t.test('public buckets: served at /b/<bucket>/<key>, purged by writes through S3', async (t) => {
  const awsFiles = await writeAwsConfig(server.tmpRoot);
  const aws: AwsTarget = { endpoint: server.url, credentials: await createAccountKey(server, alice.name), files: awsFiles };
  const s3 = async (args: string[]): Promise<void> => {
    const r = await runAws(aws, args);
    if (r.code !== 0) throw new Error(`aws ${args.join(' ')}: ${r.stderr}`);
  };
  const bucket = `cdn-pub-${process.pid}`;
  await s3(['s3', 'mb', `s3://${bucket}`]);
  const file = async (name: string, data: Buffer): Promise<string> => {
    const path = join(server.tmpRoot, name);
    await writeFile(path, data);
    return path;
  };
  const v1 = Buffer.from('.v1 { color: red; }\n'.repeat(40));
  await s3(['s3', 'cp', await file('v1.css', v1), `s3://${bucket}/css/site.css`, '--content-type', 'text/css', '--cache-control', 'public, max-age=60']);
  const target = '/b/' + bucket + '/css/site.css';

  assertBareNotFound(t, await cdn(target), 'a private bucket (the default)');
  assertBareNotFound(t, await cdn('/b/no-such-bucket/css/site.css'), 'an unknown bucket');
  const denied = await bob.client.raw('PUT', `/api/v3/buckets/${bucket}/public`, { body: '{"public":true}', headers: { 'content-type': 'application/json' } });
  t.equal(denied.status, 404, "another user's bucket: 404");
  t.same(await alice.client.setBucketPublic(bucket, true), { name: bucket, public: true });

  const miss = await cdn(target);
  t.equal(miss.status, 200);
  t.equal(miss.headers['x-cache'], 'MISS');
  t.match(miss.headers, { 'content-type': 'text/css', 'cache-control': 'public, max-age=60', vary: 'Accept-Encoding', ...SAFETY });
  t.ok(miss.body.equals(v1));
  const hit = await cdn(target);
  t.equal(hit.headers['x-cache'], 'HIT');
  t.ok(hit.body.equals(v1));

  const v2 = Buffer.from('.v2 { color: green; }\n'.repeat(40));
  await s3(['s3', 'cp', await file('v2.css', v2), `s3://${bucket}/css/site.css`, '--content-type', 'text/css']);
  const after = await cdn(target);
  t.equal(after.headers['x-cache'], 'MISS', 'the overwrite purged the copy (a miss, not an expiry)');
  t.ok(after.body.equals(v2), 'the new bytes, not stale ones');
  t.equal(after.headers['cache-control'], 'public, max-age=3600', 'no stored Cache-Control: the configured default');

  const other = Buffer.from('copied over\n');
  await s3(['s3', 'cp', await file('other.txt', other), `s3://${bucket}/other.txt`]);
  await s3(['s3', 'cp', `s3://${bucket}/other.txt`, `s3://${bucket}/css/site.css`]);
  const copied = await cdn(target);
  t.equal(copied.headers['x-cache'], 'MISS', 'CopyObject purged the copy');
  t.ok(copied.body.equals(other));

  const big = pattern(9 * 1024 * 1024, 12);
  await s3(['s3', 'cp', await file('big.bin', big), `s3://${bucket}/css/site.css`]);
  const multipart = await cdn(target);
  t.equal(multipart.headers['x-cache'], 'MISS', 'CompleteMultipartUpload purged the copy');
  t.ok(multipart.body.equals(big), 'the multipart object, whole');
  t.match(multipart.headers.etag, /-2"$/, 'a multipart ETag');
  const across = await cdn(target, { headers: [['Range', 'bytes=8388600-8388619']] });
  t.ok(across.body.equals(big.subarray(8388600, 8388620)), 'a range across the two parts');

  await s3(['s3', 'rm', `s3://${bucket}/css/site.css`]);
  assertBareNotFound(t, await cdn(target), 'deleted through S3');

  // Keys are opaque: percent-decoded, otherwise as sent.
  const odd = Buffer.from('odd key\n');
  await s3(['s3api', 'put-object', '--bucket', bucket, '--key', 'a/../dir/spaced ünï.txt', '--body', await file('odd.txt', odd), '--content-type', 'text/plain']);
  const oddRes = await cdn(`/b/${bucket}/a/../dir/spaced%20%C3%BCn%C3%AF.txt`);
  t.equal(oddRes.status, 200, 'a key with .. and non-ASCII');
  t.ok(oddRes.body.equals(odd));
  assertBareNotFound(t, await cdn(`/b/${bucket}/dir/spaced%20%C3%BCn%C3%AF.txt`), 'no path normalisation');
  assertBareNotFound(t, await cdn(`/b/${bucket}/a/%zz`), 'bad percent-encoding');
  assertBareNotFound(t, await cdn(`/b/${bucket}/`), 'no listing');
  assertBareNotFound(t, await cdn(`/b/${bucket}`), 'no bucket root');

  await s3(['s3', 'cp', await file('page.html', Buffer.from('<script>alert(1)</script>')), `s3://${bucket}/page.html`, '--content-type', 'text/html']);
  const page = await cdn(`/b/${bucket}/page.html`);
  t.equal(page.status, 200);
  t.match(page.headers, { 'content-type': 'text/html', 'content-disposition': 'attachment; filename="page.html"', ...SAFETY }, 'active content: an attachment');
  await s3(['s3', 'cp', await file('notes', Buffer.from('<svg onload=alert(1)>')), `s3://${bucket}/img/logo.svg`, '--content-type', 'text/plain']);
  t.match((await cdn(`/b/${bucket}/img/logo.svg`)).headers, { 'content-disposition': 'attachment; filename="logo.svg"' }, 'an active extension too');

  await s3(['s3', 'cp', await file('p1', Buffer.from('one')), `s3://${bucket}/purge/one.txt`]);
  await s3(['s3', 'cp', await file('p2', Buffer.from('two')), `s3://${bucket}/purge/two.txt`]);
  await cdn(`/b/${bucket}/purge/one.txt`);
  await cdn(`/b/${bucket}/purge/two.txt`);
  t.equal(await alice.client.purge({ bucket, prefix: 'purge/' }), 2, 'purge by prefix');
  t.equal((await cdn(`/b/${bucket}/page.html`)).headers['x-cache'], 'HIT', 'other keys stay');
  await cdn(`/b/${bucket}/purge/one.txt`);
  const before = await stats();
  await s3(['s3', 'rm', `s3://${bucket}/purge/`, '--recursive']);
  t.equal((await stats()).memoryEntries, before.memoryEntries - 1, 'DeleteObjects purged the cached key');
  const notYours = await bob.client.raw('POST', '/api/v3/cdn/purge', { body: JSON.stringify({ bucket }), headers: { 'content-type': 'application/json' } });
  t.equal(notYours.status, 404, "purge of another user's bucket: 404");

  t.same(await alice.client.setBucketPublic(bucket, false), { name: bucket, public: false });
  assertBareNotFound(t, await cdn(`/b/${bucket}/page.html`), 'private again');
  const viaStorage = await alice.client.raw('PUT', `/storage/buckets/${bucket}/public`, { body: '{"public":true}', headers: { 'content-type': 'application/json' } });
  t.equal(viaStorage.status, 200, 'also under /storage');
  t.equal((await cdn(`/b/${bucket}/page.html`)).status, 200);
  for (const body of ['{"public":"yes"}', '{}', '{"public":true,"x":1}']) {
    const res = await alice.client.raw('PUT', `/api/v3/buckets/${bucket}/public`, { body, headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 400, `${body}: 400`);
  }
  const noScope = await apiUser(server, ['assets:write'], { name: alice.name, recorder });
  t.equal((await noScope.client.raw('PUT', `/api/v3/buckets/${bucket}/public`, { body: '{"public":false}', headers: { 'content-type': 'application/json' } })).status, 403);
});

t.test('odd requests get a plain answer, never a 5xx', async (t) => {
  const asset = await alice.client.upload({ file: Buffer.from('body { margin: 0 }\n'.repeat(50)), fileName: 'odd.css', contentType: 'text/css' });
  const target = targetOf(asset.publicUrl);
  const headerCases: [string, string][][] = [
    [['Range', 'bytes=abc']],
    [['Range', 'bytes=5-1']],
    [['Range', 'bytes=0-1,5-6']],
    [['Range', 'items=0-5']],
    [['Range', `bytes=0-${'9'.repeat(40)}`]],
    [['Accept-Encoding', ';;,,q=,br;q=2,gzip;q=-1,*;q=0.0001']],
    [['Accept-Encoding', 'x'.repeat(8000)]],
    [['If-None-Match', `"${'a'.repeat(10_000)}"`]],
    [['If-Modified-Since', 'yesterday-ish']],
    [['If-Range', 'not a date or etag'], ['Range', 'bytes=0-1']],
    [['If-Match', '*'], ['If-None-Match', '*']],
  ];
  for (const headers of headerCases) {
    const res = await cdn(target, { headers });
    t.ok(res.status < 500, `${JSON.stringify(headers).slice(0, 80)}: ${res.status}`);
  }
  const targets = [`/b/x/%00`, '/b/x/%ff', '/b/%zz/key', '/b//key', `/b/x/${'k'.repeat(1100)}`, '/b/x/a%2Fb', '/b/../b/x/y', `${target}%00`];
  for (const odd of targets) {
    const res = await cdn(odd);
    t.equal(res.status, 404, `${odd.slice(0, 60)}: 404`);
  }
  t.equal((await cdn(`${target}?${'&'.repeat(1000)}=`)).status, 200, 'a query of nothing but separators is ignored');
});

t.test('every CDN request is one JSON log line, with no query string', async (t) => {
  type Line = Record<string, unknown>;
  const linesFor = (path: string): Line[] =>
    server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{"level"') && l.includes('"cdn request"'))
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l['path'] === path);
  const data = pattern(3000, 9);
  const asset = await alice.client.upload({ file: data, fileName: 'logged.bin' });
  const target = targetOf(asset.publicUrl);
  const path = target.split('?')[0] ?? target;
  t.equal((await cdn(`${target}?sig=query-not-logged`)).status, 200);
  t.equal((await cdn(target)).status, 200);
  const missing = `/nothing-here-${Date.now()}`;
  t.equal((await cdn(`${missing}?sig=query-not-logged`)).status, 404);
  await eventually(() => linesFor(path).length >= 2 && linesFor(missing).length >= 1, 'the lines');
  const served = linesFor(path);
  t.equal(served.length, 2, 'one line per request');
  t.match(served[0], { level: 30, surface: 'cdn', method: 'GET', status: 200, cacheStatus: 'MISS', bytesOut: 3000, assetId: asset.id, clientIp: '127.0.0.1' });
  t.match(served[1], { status: 200, cacheStatus: 'HIT', bytesOut: 3000 });
  t.type(served[0]?.['durationMs'], 'number');
  t.same(linesFor(missing).map((l) => [l['status'], l['cacheStatus']]), [[404, null]], 'the 404');
  t.notOk(server.output().includes('query-not-logged'), 'no query string in the log');
});

t.test('no CDN or API response carries a blob id, a bucket id, a cache file or the data dir', async (t) => {
  const blobIds = [
    ...query<{ blob_id: string }>(server, 'SELECT blob_id FROM assets').map((r) => r.blob_id),
    ...query<{ blob_id: string }>(server, "SELECT blob_id FROM objects WHERE blob_id <> ''").map((r) => r.blob_id),
  ];
  const bucketIds = query<{ id: string }>(server, 'SELECT id FROM buckets').map((r) => r.id);
  const cacheDir = join(server.dataDir, 'cdn-cache');
  const cacheFiles = readdirSync(cacheDir).flatMap((shard) =>
    shard !== 'tmp' && statSync(join(cacheDir, shard)).isDirectory() ? readdirSync(join(cacheDir, shard)) : [],
  );
  t.ok(cacheFiles.length > 0, 'the disk tier holds files');
  recorder.assertNoLeaks(t, [...PROVIDER_NAMES, server.dataDir, 'cdn-cache', 'storage/blobs', ...blobIds, ...bucketIds, ...cacheFiles]);
  const errors = server.output().split('\n').filter((l) => /"level":(50|60)/.test(l));
  t.same(errors, [], 'the server logged no error');
  const cacheWarnings = server.output().split('\n').filter((l) => /"level":40/.test(l) && /cdn/.test(l));
  t.same(cacheWarnings, [], 'no fill or CDN body failed');
});
