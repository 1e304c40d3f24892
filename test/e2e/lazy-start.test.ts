// What a start leaves for later (docs/ARCHITECTURE.md "Start") is there when asked for, and nothing asked
// for meanwhile fails: the management API is built for its first request, and the requests that arrive
// while it builds wait for it (one process and each worker of a cluster alike); the S3 surface, the CDN
// with its GeoIP lookup, a large upload (the hashing thread starts with it) answer from the first request;
// and no part prints a deprecation or experimental warning as it starts.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { rawRequest } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';

for (const workers of [1, 2]) {
  t.test(`--workers ${workers}: management requests sent at once after the start all get their answer`, async (t) => {
    const server = await startServer({ workers });
    t.teardown(() => server.stop());
    const host = new URL(server.url).host;
    // The first management requests of the server: every worker they reach builds the API for them.
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => rawRequest({ url: server.url }, { method: 'GET', target: '/api/v3/buckets', headers: [['host', host]] })),
    );
    for (const [i, res] of answers.entries()) {
      t.equal(res.status, 401, `request ${i + 1}: 401, not a failure of the build`);
      t.match(JSON.parse(res.text) as unknown, { success: false, code: 'unauthorized' }, `request ${i + 1}: the API's envelope`);
    }
    const s3 = new RawS3({ url: server.url }, server.rootKey);
    t.equal((await s3.createBucket('lazy')).status, 200, 'S3 answers');
    // At or above hashing.workerThreshold (1 MiB): hashed by the hashing thread, which starts with it.
    const body = randomBytes(3 * 1024 * 1024);
    t.equal((await s3.putObject('lazy', 'big', body)).status, 200, 'a large upload');
    const back = await s3.getObject('lazy', 'big');
    t.equal(back.status, 200);
    t.equal(createHash('sha256').update(back.body).digest('hex'), createHash('sha256').update(body).digest('hex'), 'the bytes written');
    const apiKey = await server.admin(['api-keys', 'create', '--user', 'root', '--scopes', 'buckets:manage']);
    const token = String(apiKey['token'] ?? '');
    t.ok(token, 'an API key');
    const listed = await rawRequest({ url: server.url }, { method: 'GET', target: '/api/v3/buckets', headers: [['host', host], ['authorization', `Bearer ${token}`]] });
    t.equal(listed.status, 200, 'an authenticated management request');
    t.match(JSON.parse(listed.text) as unknown, { success: true }, 'with its answer');
    const dashboard = await rawRequest({ url: server.url }, { method: 'GET', target: '/dashboard/', headers: [['host', host]] });
    t.equal(dashboard.status, 200, 'the dashboard');
    // Every part built by now: none printed a deprecation or experimental warning (fastify's FSTDEP, node's).
    const warnings = server.output().split('\n').filter((l) => /Warning|FSTDEP|FSTWRN/.test(l));
    t.same(warnings, [], 'no warning at start or on the first requests, in any process');
  });
}

t.test('a start loads none of the packages its first requests do not need (docs/ARCHITECTURE.md "Start")', async (t) => {
  // NODE_DEBUG=module: node names every CommonJS file it loads; the packages below are ES-imported or
  // required lazily, so a static import of any of them from the start's path would show here.
  const server = await startServer({ env: { NODE_DEBUG: 'module' } });
  t.teardown(() => server.stop());
  const loaded = (pkg: string): boolean => server.output().includes(`node_modules/${pkg}/`);
  t.ok(loaded('pino'), 'the debug output names what a start loads');
  for (const pkg of ['undici', 'fastify', 'piscina', 'maxmind', '@fastify/busboy', 'prom-client', 'pg', 'fast-xml-parser', 'tldts', 'acme-client']) {
    t.notOk(loaded(pkg), `${pkg}: not loaded by the start`);
  }
});
