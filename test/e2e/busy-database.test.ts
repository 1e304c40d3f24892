// Another process holds meta.db's write lock (a backup tool, `sqlite3` by hand, an admin command in a
// long transaction) for longer than a serving process waits: writes wait on timers, never on the event
// loop, so /healthz and reads of the same worker are answered meanwhile; past the wait an S3 write is
// refused with 503 SlowDown (Retry-After) and an API write with 503 busy, never 500; /readyz says the
// database is locked; nothing of a refused write is left (no row, no blob); once the lock is let go,
// writes go through and /readyz is ready again.
import t from 'tap';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { openSqlite } from '../../src/db/sqlite/index.js';
import { SQLITE_BUSY_WAIT_MS } from '../../src/context/metadata.js';
import { apiUser, eventually } from '../helpers/api.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';
import { parseS3Error } from '../helpers/xml.js';

const server = await startServer();
t.teardown(() => server.stop());
const s3 = new RawS3({ url: server.url }, server.rootKey);
const user = await apiUser(server, ['storage-keys:manage']);
await server.admin(['buckets', 'create', 'locked-bucket', '--user', user.name]);
const BIG = Buffer.alloc(256 * 1024, 7); // over inlineObjectMaxBytes: the bytes are a blob file
t.equal((await s3.putObject('locked-bucket', 'kept', BIG)).status, 200, 'an object written before the lock');

function blobFiles(): number {
  const dir = join(server.dataDir, 'storage', 'blobs');
  let n = 0;
  for (const sub of readdirSync(dir)) n += readdirSync(join(dir, sub)).length;
  return n;
}

async function get(path: string): Promise<{ status: number; body: string; at: number }> {
  const res = await request(`${server.url}${path}`);
  const body = await res.body.text();
  return { status: res.statusCode, body, at: performance.now() };
}

t.test('a lock held past the wait: reads and health answered meanwhile, writes refused with 503, nothing left', async (t) => {
  const blobsBefore = blobFiles();
  const other = openSqlite(join(server.dataDir, 'meta.db'));
  t.teardown(() => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
  });
  other.exec('BEGIN EXCLUSIVE');

  const putStarted = performance.now();
  const put = s3.putObject('locked-bucket', 'refused', BIG).then((r) => ({ ...r, at: performance.now() }));
  const apiWrite = user.client
    .raw('POST', '/storage/buckets/locked-bucket/access-keys', { body: JSON.stringify({ name: 'during the lock', permission: 'read' }), headers: { 'content-type': 'application/json' } })
    .then((r) => ({ status: r.status, headers: r.headers, body: JSON.parse(r.body.toString('utf8')) as Record<string, unknown> }));
  // While the write waits for the lock, the same worker answers what needs no write.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const health = await get('/healthz');
  const read = await s3.getObject('locked-bucket', 'kept');
  const readAt = performance.now();
  // /readyz: the lock held a second with no commit is reported.
  await new Promise((resolve) => setTimeout(resolve, 1200));
  const ready = await get('/readyz?verbose=1');

  const refused = await put;
  t.equal(health.status, 200, '/healthz answered during the lock');
  t.ok(health.at < refused.at, '... before the waiting write was answered');
  t.equal(read.status, 200, 'a GET of another object answered during the lock');
  t.ok(read.body.equals(BIG), '... with its bytes');
  t.ok(readAt < refused.at, '... before the waiting write was answered');
  t.equal(ready.status, 503, '/readyz: not ready while the database is locked');
  t.same(JSON.parse(ready.body), { status: 'not ready', checks: { metadata: 'failing', storage: 'ok' } }, 'the metadata check says which');

  t.equal(refused.status, 503, `the PUT is refused with 503 (got ${refused.status})`);
  t.equal(parseS3Error(refused.text).code, 'SlowDown', 'S3 SlowDown, which every SDK retries');
  t.equal(refused.headers['retry-after'], '1', 'with Retry-After');
  t.ok(refused.at - putStarted >= SQLITE_BUSY_WAIT_MS - 100, `after the serving wait (${(refused.at - putStarted).toFixed(0)} ms)`);
  const api = await apiWrite;
  t.equal(api.status, 503, 'the API write is refused with 503');
  t.match(api.body, { success: false, code: 'busy', message: /busy.*retry/ }, 'in the API envelope, saying to retry');

  other.exec('ROLLBACK');
  t.equal((await s3.getObject('locked-bucket', 'refused')).status, 404, 'the refused PUT stored nothing');
  await eventually(() => blobFiles() === blobsBefore, 'the refused PUT left no blob file', 5000);
  t.equal(blobFiles(), blobsBefore, 'no blob file is left of it');
});

t.test('once the lock is let go, writes go through and /readyz is ready', async (t) => {
  t.equal((await s3.putObject('locked-bucket', 'after', BIG)).status, 200, 'a PUT after the lock');
  t.ok((await s3.getObject('locked-bucket', 'after')).body.equals(BIG), 'read back');
  await eventually(async () => (await get('/readyz')).status === 200, '/readyz ready again', 5000);
  const key = await user.client.raw('POST', '/storage/buckets/locked-bucket/access-keys', { body: JSON.stringify({ name: 'after the lock', permission: 'read' }), headers: { 'content-type': 'application/json' } });
  t.equal(key.status, 201, 'an API write after the lock');
});
