// GET /healthz and /readyz on the real server: on the S3 port and the CDN listener, without
// credentials, JSON with no-store, HEAD too, other methods 405; `healthz` is a reserved bucket name
// that a signed S3 request is told about in S3's words; a bucket's virtual host keeps /healthz as an
// object key. Not ready: the disk's storage folder gone (then back), and the upstream S3 store killed
// (then started again on the same port).
import t from 'tap';
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { eventually } from '../helpers/api.js';
import { startMoto } from '../helpers/moto.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';
import { parseS3Error } from '../helpers/xml.js';

async function get(url: string, opts: { method?: 'GET' | 'HEAD' | 'POST'; host?: string } = {}) {
  const res = await request(url, { method: opts.method ?? 'GET', ...(opts.host ? { headers: { host: opts.host } } : {}) });
  const text = await res.body.text();
  const json = text && String(res.headers['content-type']).startsWith('application/json') ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  return { status: res.statusCode, headers: res.headers, text, json };
}

t.test('on a disk-backed server', async (t) => {
  // Virtual-hosted buckets at <bucket>.s3.test.
  const server = await startServer({ env: { S3EDGE_S3_DOMAINS: 's3.test' } });
  t.teardown(() => server.stop());

  await t.test('healthz and readyz answer on the S3 port and the CDN listener, without credentials', async (t) => {
    for (const base of [server.url, server.cdnUrl]) {
      const live = await get(`${base}/healthz`);
      t.equal(live.status, 200, `${base}/healthz`);
      t.same(live.json, { status: 'ok' });
      t.equal(live.headers['content-type'], 'application/json; charset=utf-8');
      t.equal(live.headers['cache-control'], 'no-store');
      const ready = await get(`${base}/readyz?verbose=1`);
      t.equal(ready.status, 200, `${base}/readyz`);
      t.same(ready.json, { status: 'ready', checks: { metadata: 'ok', storage: 'ok' } });
    }
    const head = await get(`${server.url}/readyz`, { method: 'HEAD' });
    t.same([head.status, head.text], [200, ''], 'HEAD: the status, no body');
    const metrics = await request(`${server.url}/metrics`);
    t.equal(metrics.statusCode, 200, '/metrics is open while metrics.token is not set');
    t.match(await metrics.body.text(), /^# TYPE s3edge_requests_total counter$/m);
    const post = await get(`${server.url}/healthz`, { method: 'POST' });
    t.equal(post.status, 405, 'POST: 405');
    t.equal(post.headers['allow'], 'GET, HEAD');
  });

  await t.test('healthz is a reserved bucket name; on a bucket host it is an object key', async (t) => {
    const s3 = new RawS3({ url: server.url }, server.rootKey);
    const created = await s3.send({ method: 'PUT', path: '/healthz' });
    t.equal(created.status, 400, 'CreateBucket healthz is refused');
    t.equal(parseS3Error(created.text).code, 'InvalidBucketName', "in S3's words");
    const listed = await s3.send({ method: 'GET', path: '/readyz' });
    t.equal(parseS3Error(listed.text).code, 'NoSuchBucket', 'a signed GET /readyz is S3 too: ListObjects of a bucket that cannot exist');
    const vhost = await get(`${server.url}/healthz`, { host: 'photos.s3.test' });
    t.equal(vhost.status, 403, 'an anonymous GET of the key healthz in the bucket photos');
    t.equal(parseS3Error(vhost.text).code, 'AccessDenied', 'answered by S3, not the health check');
  });

  await t.test('the storage folder gone: 503 not ready, naming the check only; back: ready', async (t) => {
    const tmp = join(server.dataDir, 'storage', 'tmp');
    renameSync(tmp, `${tmp}.away`);
    let ready = await get(`${server.url}/readyz`);
    await eventually(async () => (ready = await get(`${server.url}/readyz`)).status === 503, 'not ready');
    t.same(ready.json, { status: 'not ready', checks: { metadata: 'ok', storage: 'failing' } });
    t.notMatch(ready.text, server.dataDir, 'no path in the answer');
    t.equal((await get(`${server.url}/healthz`)).status, 200, 'still live');
    renameSync(`${tmp}.away`, tmp);
    await eventually(async () => (await get(`${server.url}/readyz`)).status === 200, 'ready again');
    t.pass('ready again once the folder is back');
  });
});

t.test('on an upstream-backed server: the upstream gone is not ready', async (t) => {
  const server = await startServer({ upstream: true });
  t.teardown(() => server.stop());
  const moto = server.moto;
  if (!moto) throw new Error('no upstream');
  t.same((await get(`${server.url}/readyz`)).json, { status: 'ready', checks: { metadata: 'ok', storage: 'ok' } });
  moto.kill();
  let ready = await get(`${server.url}/readyz`);
  await eventually(async () => (ready = await get(`${server.url}/readyz`)).status === 503, 'not ready');
  t.same(ready.json, { status: 'not ready', checks: { metadata: 'ok', storage: 'failing' } });
  t.notMatch(ready.text, String(moto.port), 'the upstream address is not in the answer');
  const again = await startMoto({ port: moto.port, bucket: moto.bucket });
  t.teardown(() => again.stop());
  await eventually(async () => (await get(`${server.url}/readyz`)).status === 200, 'ready again', 30_000);
  t.pass('ready again once the upstream answers');
});
