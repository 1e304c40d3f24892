// Two gateway nodes on one PostgreSQL and one upstream S3 store (issue 21, part 2; docs/DEPLOYMENT.md):
// Debian's PostgreSQL started for this file (test/helpers/postgres.ts), a moto server as the upstream
// store, and two `s3edge serve` processes with their own data directories sharing the metadata URL, the
// master key and the root key, as nodes behind a load balancer do. An object written through one is read
// through the other at once, also when both have it in their row caches (src/db/metadata-cache.ts): an
// overwrite, a delete, a bucket made private or public or deleted; a key revoked on one is refused by the other within a second; a CDN purge
// through one evicts the other's cached copy; credits charged through both add up exactly; an API rate
// limit counts across both; and the singleton jobs run on one node. PostgreSQL restarted under load
// (a failover): only 200s and 503s, and coherence after the reconnect; then stopped: 503s, not ready.
import t from 'tap';
import { randomBytes, X509Certificate } from 'node:crypto';
import { connect as tlsConnect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ApiClientError, type Asset } from '../../src/client/index.js';
import { apiClient, apiUser, eventually } from '../helpers/api.js';
import { startMoto } from '../helpers/moto.js';
import { startPostgres } from '../helpers/postgres.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { makeLeafCert } from '../helpers/tls.js';
import { tempDir } from '../helpers/temp-data.js';

/** The found-caches keep an answer one second; the rest is slack for a busy machine. */
const SETTLE_MS = 1500;

const postgres = await startPostgres(t);
const url = await postgres.database('nodes');
const moto = await startMoto();
t.teardown(() => moto.stop());
const env = {
  S3EDGE_MASTER_KEY: randomBytes(32).toString('hex'),
  S3EDGE_CREDITS_ENABLED: 'true',
  S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '0',
};
const a = await startServer({ upstream: moto, metadata: url, env, tls: true });
t.teardown(() => a.stop());
const b = await startServer({ upstream: moto, metadata: url, env, rootKey: a.rootKey, tls: true });
t.teardown(() => b.stop());

const db = new pg.Pool({ connectionString: url, max: 2 });
// The last test stops PostgreSQL: an idle connection of this pool then fails, which is expected.
db.on('error', () => undefined);
t.teardown(() => db.end());
async function rows<T>(sql: string, values: unknown[] = []): Promise<T[]> {
  return (await db.query(sql, values)).rows as T[];
}

function cdnGet(server: RunningServer, target: string): Promise<RawResponse> {
  return rawRequest({ url: server.cdnUrl }, { method: 'GET', target, headers: [['Host', `cdn.localhost:${new URL(server.cdnUrl).port}`]] });
}

t.test('both nodes serve from the one database', async (t) => {
  for (const node of [a, b]) t.match(node.listening, { event: 'listening', metadata: 'postgres' }, 'the listening line names the store');
  t.notOk(a.output().includes(url) || b.output().includes(url), 'the URL (with its password) is never printed');
});

t.test('an object written through one node is read through the other at once', async (t) => {
  const s3a = new RawS3({ url: a.url }, a.rootKey);
  const s3b = new RawS3({ url: b.url }, a.rootKey);
  t.equal((await s3a.createBucket('shared')).status, 200);
  for (const size of [100, 300_000]) {
    const body = randomBytes(size);
    t.equal((await s3a.putObject('shared', `k${size}`, body)).status, 200, `PUT ${size} bytes on A`);
    const got = await s3b.getObject('shared', `k${size}`);
    t.equal(got.status, 200, 'GET on B at once');
    t.ok(got.body.equals(body), 'the same bytes');
  }
  const { list } = await s3b.listObjectsV2('shared');
  t.same(list.keys, ['k100', 'k300000'], 'B lists both');
  t.equal((await s3b.deleteObject('shared', 'k100')).status, 204, 'deleted through B');
  t.equal((await s3a.getObject('shared', 'k100')).status, 404, 'gone on A at once');
});

t.test('row caches warm on both nodes: an overwrite through one is read through the other at once, 50 times', async (t) => {
  const s3a = new RawS3({ url: a.url }, a.rootKey);
  const s3b = new RawS3({ url: b.url }, a.rootKey);
  t.equal((await s3a.createBucket('coherent')).status, 200);
  t.equal((await s3a.putObject('coherent', 'k', Buffer.from('v0'))).status, 200);
  let stale = 0;
  for (let i = 1; i <= 50; i++) {
    const [writer, reader] = i % 2 === 0 ? [s3a, s3b] : [s3b, s3a];
    // Both nodes have just read the key: its row (with its bytes) is in both caches.
    for (const s3 of [reader, writer]) t.equal((await s3.getObject('coherent', 'k')).text, `v${i - 1}`);
    t.equal((await writer.putObject('coherent', 'k', Buffer.from(`v${i}`))).status, 200);
    const got = await reader.getObject('coherent', 'k');
    if (got.text !== `v${i}`) stale++;
    t.equal(got.text, `v${i}`, `overwrite ${i}: the other node reads it at once`);
    t.equal((await reader.headObject('coherent', 'k')).headers['content-length'], String(`v${i}`.length));
  }
  t.equal(stale, 0, 'no stale read');
});

t.test('row caches warm on both nodes: a delete through one is NoSuchKey through the other at once', async (t) => {
  const s3a = new RawS3({ url: a.url }, a.rootKey);
  const s3b = new RawS3({ url: b.url }, a.rootKey);
  for (let i = 0; i < 20; i++) {
    const [writer, reader] = i % 2 === 0 ? [s3a, s3b] : [s3b, s3a];
    t.equal((await writer.putObject('coherent', `d${i}`, Buffer.from('x'))).status, 200);
    for (const s3 of [reader, writer]) t.equal((await s3.getObject('coherent', `d${i}`)).status, 200);
    t.equal((await writer.deleteObject('coherent', `d${i}`)).status, 204);
    const got = await reader.getObject('coherent', `d${i}`);
    t.equal(got.status, 404, `delete ${i}: gone on the other node`);
    t.match(got.text, /<Code>NoSuchKey<\/Code>/);
    // And a key made again after its "no such key" was cached.
    t.equal((await writer.putObject('coherent', `d${i}`, Buffer.from('again'))).status, 200);
    t.equal((await reader.getObject('coherent', `d${i}`)).text, 'again');
  }
});

t.test('a bucket made private, public, or deleted through one node: the other node sees it at once', async (t) => {
  const user = await apiUser(a, ['buckets:manage']);
  await user.client.createBucket('flips');
  const s3a = new RawS3({ url: a.url }, a.rootKey);
  const s3b = new RawS3({ url: b.url }, a.rootKey);
  t.equal((await s3a.putObject('flips', 'page.txt', Buffer.from('hello'))).status, 200);
  const target = '/b/flips/page.txt';
  const clientB = apiClient(b, user.token);
  for (let i = 0; i < 5; i++) {
    await user.client.setBucketPublic('flips', true);
    t.equal((await cdnGet(b, target)).status, 200, `made public on A (${i}): B's CDN serves it`);
    t.equal((await cdnGet(b, target)).status, 200);
    await clientB.setBucketPublic('flips', false);
    t.equal((await cdnGet(a, target)).status, 404, `made private on B (${i}): A's CDN refuses it`);
    await user.client.setBucketPublic('flips', true);
    t.equal((await cdnGet(a, target)).status, 200);
    await user.client.setBucketPublic('flips', false);
    t.equal((await cdnGet(b, target)).status, 404, `private again through A: B's CDN refuses it at once`);
  }
  // Deleted through A (emptied first): B's S3 path answers NoSuchBucket at once, not within a second.
  t.equal((await s3b.getObject('flips', 'page.txt')).status, 200, 'B has the bucket cached');
  t.equal((await s3a.deleteObject('flips', 'page.txt')).status, 204);
  t.equal((await s3a.send({ method: 'DELETE', bucket: 'flips' })).status, 204, 'bucket deleted through A');
  const gone = await s3b.getObject('flips', 'page.txt');
  t.equal(gone.status, 404);
  t.match(gone.text, /<Code>NoSuchBucket<\/Code>/, 'B: NoSuchBucket at once');
});

t.test('a key revoked on one node is refused by the other within a second', async (t) => {
  const user = await apiUser(a, ['buckets:manage', 'storage-keys:manage']);
  await user.client.createBucket('revoked-keys');
  const key = await user.client.createAccessKey('revoked-keys', { name: 'soon revoked', permission: 'read_write' });
  const s3b = new RawS3({ url: b.url }, { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey });
  t.equal((await s3b.putObject('revoked-keys', 'x', Buffer.from('x'))).status, 200, 'B takes the key');
  t.equal(await user.client.deleteAccessKey('revoked-keys', key.accessKeyId), 'Access key deleted', 'revoked through A');
  await sleep(SETTLE_MS);
  const after = await s3b.getObject('revoked-keys', 'x');
  t.equal(after.status, 403, 'B refuses it');
  t.match(after.text, /InvalidAccessKeyId/);
});

t.test('a CDN purge through one node evicts the other\'s cached copy', async (t) => {
  const user = await apiUser(a, ['buckets:manage', 'assets:write']);
  await user.client.createBucket('purged');
  await user.client.setBucketPublic('purged', true);
  const s3 = new RawS3({ url: a.url }, a.rootKey);
  const body = randomBytes(5000);
  t.equal((await s3.putObject('purged', 'pics/a.bin', body)).status, 200);
  const target = '/b/purged/pics/a.bin';
  for (const node of [a, b]) {
    t.equal((await cdnGet(node, target)).headers['x-cache'], 'MISS');
    t.equal((await cdnGet(node, target)).headers['x-cache'], 'HIT', 'cached');
  }
  t.equal(await apiClient(a, user.token).purge({ bucket: 'purged', prefix: 'pics/' }), 1, "A's copy purged");
  await sleep(SETTLE_MS);
  const res = await cdnGet(b, target);
  t.equal(res.status, 200);
  t.not(res.headers['x-cache'], 'HIT', "B's copy is gone: refetched");
  t.ok(res.body.equals(body));
});

/** An API token of a real user, for the requests made while PostgreSQL is gone. */
let token = '';

t.test('credits charged through both nodes add up exactly', async (t) => {
  const user = await apiUser(a, ['assets:read', 'assets:write']);
  token = user.token;
  const grant = await b.admin(['credits', 'grant', '--user', user.name, '--amount', '10']);
  t.equal(grant['balance'], 10, 'granted through the other node\'s admin command');
  const clients = [apiClient(a, user.token), apiClient(b, user.token)];
  const results = await Promise.allSettled(
    Array.from({ length: 24 }, (_, i) => (clients[i % 2] as (typeof clients)[0]).upload({ file: randomBytes(1000), fileName: `race-${i}.bin` })),
  );
  const ok = results.filter((r): r is PromiseFulfilledResult<Asset> => r.status === 'fulfilled');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.equal(ok.length, 10, 'exactly the 10 affordable uploads succeed');
  for (const r of refused) {
    if (!(r.reason instanceof ApiClientError)) throw r.reason;
    t.equal(r.reason.status, 402);
  }
  const [u] = await rows<{ id: string }>('SELECT id FROM users WHERE name = $1', [user.name]);
  const [account] = await rows<{ balance_milli: number; used_milli: number }>('SELECT balance_milli, used_milli FROM credit_accounts WHERE user_id = $1', [u?.id]);
  t.same(account, { balance_milli: 0, used_milli: 10_000 }, 'balance = grant - charges');
  const charges = await rows<{ asset_id: string }>("SELECT asset_id FROM credit_ledger WHERE user_id = $1 AND event_type = 'upload'", [u?.id]);
  t.same(charges.map((c) => c.asset_id).sort(), ok.map((r) => r.value.id).sort(), 'one charge per stored asset');
  t.same(await rows('SELECT * FROM credit_reservations WHERE user_id = $1', [u?.id]), [], 'every reservation released');
});

/** The certificate a node's HTTPS listener presents for `servername`. */
function presentedBy(server: RunningServer, servername: string): Promise<string> {
  const { port } = new URL(server.tlsUrl as string);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: Number(port), servername, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

t.test("a hostname's certificate stored through node A is presented by node B within a second, and gone with the hostname", async (t) => {
  const name = 'www.nodes.example.org';
  const leaf = await makeLeafCert(tempDir(t), { dnsName: name, days: 30 });
  const fingerprint = new X509Certificate(leaf.leaf).fingerprint256;
  await a.admin(['users', 'create', 'nina']);
  await a.admin(['projects', 'create', 'site', '--user', 'nina']);
  await a.admin(['hostnames', 'add', name, '--user', 'nina', '--project', 'site']);
  await a.admin(['hostnames', 'verify', name, '--operator']);
  t.not(await presentedBy(b, name), fingerprint, "before: node B's own certificate");
  await a.admin(['hostnames', 'tls', name, '--upload', '--cert', leaf.certFile, '--key', leaf.keyFile]);
  await eventually(async () => (await presentedBy(b, name)) === fingerprint, 'node B presents it within a second of the upload through node A', 1_000);
  t.equal(await presentedBy(b, name), fingerprint, 'node B presents it');
  t.equal(await presentedBy(a, name), fingerprint, 'node A too');
  await b.admin(['hostnames', 'remove', name]);
  await eventually(async () => (await presentedBy(a, name)) !== fingerprint, "node A drops it once node B removed the hostname", 1_000);
  t.equal(Number((await rows<{ n: string }>('SELECT COUNT(*) AS n FROM hostname_tls'))[0]?.n), 0, 'its row and sealed key are gone');
});

t.test('one node runs the singleton jobs', async (t) => {
  await eventually(() => [a, b].some((n) => n.output().includes('runs the singleton jobs')), 'a node took the lead');
  const leaders = [a, b].filter((n) => n.output().includes('runs the singleton jobs'));
  t.equal(leaders.length, 1, 'exactly one');
});

t.test('neither node logged an error', async (t) => {
  for (const node of [a, b]) t.same(node.output().split('\n').filter((l) => /"level":(50|60)/.test(l)), []);
});

t.test('PostgreSQL restarted under load (a failover): every request 200 or 503, none 500; then both nodes see each other\'s writes at once', async (t) => {
  const s3a = new RawS3({ url: a.url }, a.rootKey);
  const s3b = new RawS3({ url: b.url }, a.rootKey);
  t.equal((await s3a.putObject('coherent', 'failover', Buffer.from('before'))).status, 200);
  for (const s3 of [s3a, s3b]) t.equal((await s3.getObject('coherent', 'failover')).text, 'before', 'in both row caches');
  const statuses = new Map<number, number>();
  let loading = true;
  const load = async (s3: RawS3, i: number): Promise<void> => {
    for (let n = 0; loading; n++) {
      const r = n % 3 === 0 ? await s3.putObject('coherent', `load-${i}`, Buffer.from(String(n))) : await s3.getObject('coherent', 'failover');
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
  };
  const loads = [load(s3a, 1), load(s3b, 2), load(s3a, 3), load(s3b, 4)];
  await sleep(300);
  // Every connection dropped at once, the server back after a second: what a failover looks like.
  await postgres.restart(1000);
  await sleep(1500);
  loading = false;
  await Promise.all(loads);
  const seen = Object.fromEntries(statuses);
  t.same(Object.keys(seen).filter((s) => s !== '200' && s !== '503'), [], `only 200 and 503 (${JSON.stringify(seen)})`);
  t.ok((seen['503'] ?? 0) > 0, 'requests in flight met the restart as 503');

  await eventually(async () => (await s3a.putObject('coherent', 'failover', Buffer.from('after'))).status === 200, 'writes go through again', 15_000);
  t.equal((await s3b.getObject('coherent', 'failover')).text, 'after', 'the other node reads the write at once: its row cache did not outlive the reconnect');
  let stale = 0;
  for (let i = 1; i <= 10; i++) {
    const [writer, reader] = i % 2 === 0 ? [s3a, s3b] : [s3b, s3a];
    for (const s3 of [reader, writer]) await s3.getObject('coherent', 'failover');
    t.equal((await writer.putObject('coherent', 'failover', Buffer.from(`v${i}`))).status, 200);
    if ((await reader.getObject('coherent', 'failover')).text !== `v${i}`) stale++;
  }
  t.equal(stale, 0, 'the change feed is back: 10 overwrites, each read at once through the other node');
  for (const node of [a, b]) t.equal(node.output().includes('"level":60'), false, 'no fatal log');
});

t.test('PostgreSQL gone: requests get 503 (clients retry), /readyz says not ready, the nodes stay up', async (t) => {
  await postgres.stop();
  const s3 = new RawS3({ url: a.url }, a.rootKey);
  const got = await s3.getObject('shared', 'k300000');
  t.equal(got.status, 503, 'S3: 503');
  t.match(got.text, /<Code>ServiceUnavailable<\/Code>/);
  t.equal(got.headers['retry-after'], '1', 'with Retry-After, as every other 503');
  // Past the second an API key stays verified in memory: the key itself must be read now.
  await sleep(SETTLE_MS);
  const api = await apiClient(b, token).raw('GET', '/api/v3/cdn/usage');
  t.equal(api.status, 503, 'API: 503');
  t.match(JSON.parse(api.body.toString('utf8')), { success: false, code: 'metadata_unavailable' });
  t.equal(api.headers.get('retry-after'), '1');
  const ready = await rawRequest({ url: a.url }, { method: 'GET', target: '/readyz', headers: [['Host', new URL(a.url).host]] });
  t.equal(ready.status, 503, '/readyz: not ready');
  for (const node of [a, b]) t.equal(node.output().includes('"level":60'), false, 'no fatal log');
  const health = await rawRequest({ url: b.url }, { method: 'GET', target: '/healthz', headers: [['Host', new URL(b.url).host]] });
  t.equal(health.status, 200, 'the process is alive (/healthz)');
});
