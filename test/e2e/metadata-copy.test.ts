// `s3edge metadata copy` end to end: a real gateway gets real data over its sockets (users, keys,
// buckets, objects through S3 with an inline one, a multipart one, a noncurrent version and an upload in progress, an asset
// served by the CDN, the request log, credits), is stopped, and the CLI copies its data directory into
// a real PostgreSQL (test/helpers/postgres.ts). Then every table is read back from both sides and
// compared row by row, blobs byte for byte. A second copy into the same database is refused, so is a
// copy while the server runs. Then a gateway started on the copied database serves what the SQLite one
// stored, and one on a PostgreSQL that does not answer says so in one line.
import t from 'tap';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPgPool } from '../../src/db/pg/pool.js';
import { openSqlite } from '../../src/db/sqlite/index.js';
import { apiUser, ResponseRecorder } from '../helpers/api.js';
import { CdnClient } from '../helpers/cdn.js';
import { runS3edge } from '../helpers/cli.js';
import { startPostgres } from '../helpers/postgres.js';
import { createAccountKey, runCli, startServer } from '../helpers/server.js';
import { RawS3, randomData } from '../helpers/s3-client.js';
import { completeMultipartUpload, createMultipartUpload, uploadPart } from '../helpers/s3-ops.js';
import { tempDir } from '../helpers/temp-data.js';

const postgres = await startPostgres(t);
const root = tempDir(t);
const dataDir = join(root, 'data');
const server = await startServer({ dataDir });
t.teardown(() => server.stop());

const BUCKET = 'photos';
const MULTIPART_KEY = 'videos/ünïcode-клип.bin';
const PART = 5 * 1024 * 1024;

t.test('a gateway with data', async (t) => {
  await server.admin(['users', 'create', 'alice']);
  await server.admin(['buckets', 'create', BUCKET, '--user', 'alice']);
  await server.admin(['access-keys', 'create', '--bucket', BUCKET, '--permission', 'read', '--name', 'viewer']);
  const s3 = new RawS3({ url: server.url }, await createAccountKey(server, 'alice'));
  t.equal((await s3.putObject(BUCKET, 'small.txt', Buffer.from('inline bytes\n'), { 'content-type': 'text/plain', 'x-amz-meta-note': 'kept' })).status, 200, 'a small (inline) object');
  t.equal((await s3.putObject(BUCKET, 'large.bin', randomData(200 * 1024))).status, 200, 'an object of its own blob');
  const versioning = Buffer.from('<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>');
  const enabled = await s3.send({ method: 'PUT', bucket: BUCKET, query: { versioning: '' }, body: versioning, headers: { 'content-md5': createHash('md5').update(versioning).digest('base64') } });
  t.equal(enabled.status, 200, 'versioning on');
  t.equal((await s3.putObject(BUCKET, 'large.bin', randomData(1000))).status, 200, 'a noncurrent version behind it');

  const { uploadId } = await createMultipartUpload(s3, BUCKET, MULTIPART_KEY);
  const parts = [];
  for (const [i, size] of [PART, 1234].entries()) {
    const res = await uploadPart(s3, BUCKET, MULTIPART_KEY, uploadId as string, i + 1, randomData(size));
    parts.push({ partNumber: i + 1, etag: res.headers['etag'] as string });
  }
  t.equal((await completeMultipartUpload(s3, BUCKET, MULTIPART_KEY, uploadId as string, parts)).status, 200, 'a multipart object');
  const open = await createMultipartUpload(s3, BUCKET, 'pending.bin');
  t.equal((await uploadPart(s3, BUCKET, 'pending.bin', open.uploadId as string, 1, randomData(1000))).status, 200, 'an upload in progress');

  const recorder = new ResponseRecorder();
  const bob = await apiUser(server, ['assets:read', 'assets:write'], { name: 'bob', recorder });
  const asset = await bob.client.upload({ file: Buffer.from('an asset\n'), fileName: 'hello.txt', contentType: 'text/plain' });
  const cdn = new CdnClient(server, recorder);
  t.equal((await cdn.request(cdn.targetOf(asset.publicUrl))).status, 200, 'the asset through the CDN (a request-log row)');
  await server.admin(['credits', 'grant', '--user', 'alice', '--amount', '12.5']);
});

t.test('refused while the server runs: nothing is written to PostgreSQL', async (t) => {
  const url = await postgres.database('while_running');
  const r = await runCli(dataDir, ['metadata', 'copy', '--to', url]);
  t.equal(r.code, 1);
  t.match(r.json, { error: { code: 'ServerRunning' } });
  t.match(r.stderr, /the server on this data directory is running \(pid \d+\): stop it first/);
  const pool = createPgPool(url, { max: 1 });
  t.teardown(() => pool.end());
  const { rows } = await pool.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'");
  t.same(rows, [{ n: 0 }], 'not even the schema');
});

t.test('stopped, the copy moves every table, row for row', async (t) => {
  await server.stop();
  // The URL from the secret setting's file, as an operator keeps the password off the command line.
  const urlFile = join(root, 'metadata-url');
  writeFileSync(urlFile, `${postgres.url}\n`, { mode: 0o600 });
  const password = decodeURIComponent(new URL(postgres.url).password);
  const r = await runS3edge(['metadata', 'copy', '--data-dir', dataDir, '--json'], { S3EDGE_METADATA_FILE: urlFile });
  t.equal(r.code, 0, r.stderr);
  t.notOk(r.stdout.includes(password) || r.stderr.includes(password), 'the password is printed nowhere');
  const out = JSON.parse(r.stdout) as { to: string; schemaVersion: number; rows: number; tables: Record<string, number> };
  t.equal(out.to, postgres.url.replace(`:${encodeURIComponent(password)}@`, ':***@'), 'the target, redacted');

  const sqlite = openSqlite(join(dataDir, 'meta.db'), { readonly: true, fileMustExist: true });
  t.teardown(() => sqlite.close());
  const pool = createPgPool(postgres.url, { max: 1 });
  t.teardown(() => pool.end());
  const tables = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").pluck().all() as string[];
  t.same(Object.keys(out.tables).sort(), tables, 'every table, counted');

  for (const table of ['users', 'buckets', 'access_keys', 'objects', 'multipart_uploads', 'multipart_parts', 'multipart_completed', 'object_versions', 'inline_blobs', 'assets', 'api_keys', 'cdn_requests', 'credit_accounts', 'credit_ledger', 'settings']) {
    t.ok((out.tables[table] ?? 0) > 0, `${table}: rows to compare (${out.tables[table] ?? 0})`);
  }
  let total = 0;
  for (const table of tables) {
    const pk = (sqlite.pragma(`table_info(${table})`) as { name: string; pk: number }[]).filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => `"${c.name}"`);
    const order = pk.length > 0 ? pk.join(', ') : 'rowid';
    const fromSqlite = (sqlite.prepare(`SELECT * FROM "${table}" ORDER BY ${order}`).all() as Record<string, unknown>[]).map(comparable);
    const fromPg = (await pool.query(`SELECT * FROM "${table}" ORDER BY ${order}`)).rows.map(comparable);
    t.same(fromPg, fromSqlite, `${table}: ${fromSqlite.length} rows, the same values`);
    t.equal(out.tables[table], fromSqlite.length, `${table}: the count printed`);
    total += fromSqlite.length;
  }
  t.equal(out.rows, total, 'the total printed');

  const blobs = await pool.query<{ data: Buffer }>('SELECT data FROM inline_blobs');
  t.ok(blobs.rows.some((r) => r.data.equals(Buffer.from('inline bytes\n'))), 'the inline object, byte for byte');
  const next = await pool.query<{ seq: number }>("INSERT INTO credit_ledger (id, user_id, event_type, credits_milli, balance_after_milli, created_at) SELECT 'after', user_id, 'grant', 0, 0, 0 FROM credit_accounts LIMIT 1 RETURNING seq");
  const maxSeq = sqlite.prepare('SELECT max(seq) FROM credit_ledger').pluck().get() as number;
  t.ok((next.rows[0]?.seq ?? 0) > maxSeq, 'a new ledger row numbers after the copied ones (sequence set)');
  await pool.query("DELETE FROM credit_ledger WHERE id = 'after'");
});

t.test('a second copy into the same database is refused, and changes nothing', async (t) => {
  const r = await runCli(dataDir, ['metadata', 'copy', '--to', postgres.url]);
  t.equal(r.code, 1);
  t.match(r.json, { error: { code: 'TargetNotEmpty' } });
  t.match(r.stderr, /the PostgreSQL database already holds metadata \(rows in [a-z_, .]+\): copy into an empty database; nothing was copied/);
  const human = await runS3edge(['metadata', 'copy', '--to', await postgres.database('human'), '--data-dir', dataDir]);
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, /^to: +postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/human$/m, 'the human output: the target');
  t.match(human.stdout, /^tables:\n( {2}[a-z_]+ +\d+\n)+/m, 'a line a table');
});

t.test('bad targets: a clear line each', async (t) => {
  const bad = await runCli(dataDir, ['metadata', 'copy', '--to', 'mysql://u:pw@h/db']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /--to must be a postgres:\/\/ or postgresql:\/\/ URL \(got mysql:\/\/u:\*\*\*@h\/db\)/);
  const none = await runCli(dataDir, ['metadata', 'copy']);
  t.match([none.code, none.stderr], [1, /name the PostgreSQL database: --to postgres:/]);
  const closed = await runCli(dataDir, ['metadata', 'copy', '--to', 'postgres://u:hunter2hunter2@127.0.0.1:1/db']);
  t.equal(closed.code, 1);
  t.match(closed.stderr, /copy into postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db failed, nothing was copied: .*ECONNREFUSED/);
  t.notOk(closed.stderr.includes('hunter2'), 'no password');
});

t.test('a gateway on the copied database serves what the SQLite one stored', async (t) => {
  // The same data directory (its object bytes and master.key), now with its metadata in PostgreSQL.
  const moved = await startServer({ dataDir, metadata: postgres.url, rootKey: server.rootKey });
  t.teardown(() => moved.stop());
  t.match(moved.listening, { metadata: 'postgres' });
  const s3 = new RawS3({ url: moved.url }, server.rootKey);
  const small = await s3.getObject(BUCKET, 'small.txt');
  t.equal(small.status, 200);
  t.equal(small.text, 'inline bytes\n', 'the inline object');
  t.equal(small.headers['x-amz-meta-note'], 'kept', 'with its metadata');
  const multipart = await s3.getObject(BUCKET, MULTIPART_KEY);
  t.equal(multipart.status, 200);
  t.equal(multipart.body.length, PART + 1234, 'the multipart object, whole');
  const users = (await moved.cli(['users', 'list'])).json as { name: string }[];
  t.same(users.map((u) => u.name).sort(), ['alice', 'bob', 'root'], 'admin commands read the database');
  t.equal((await moved.admin(['credits', 'grant', '--user', 'alice', '--amount', '0.5']))['balance'], 13, 'the credits: 12.5 copied, and 0.5 more');
});

t.test('serve and the admin commands on a PostgreSQL that does not answer: one line, exit 2, no password', async (t) => {
  const env = { S3EDGE_METADATA: 'postgres://u:hunter2hunter2@127.0.0.1:1/s3edge' };
  const serve = await runS3edge(['serve', '--data-dir', dataDir, '--port', '0', '--cdn-port', '0'], env);
  t.equal(serve.code, 2);
  t.equal(serve.stderr.trim().split('\n').length, 1, 'one line');
  t.match(serve.stderr, /metadata: cannot open postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/s3edge: .*ECONNREFUSED/);
  const users = await runS3edge(['users', 'list', '--data-dir', dataDir], env);
  t.equal(users.code, 2);
  t.match(users.stderr, /metadata: cannot open postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/s3edge/);
  for (const r of [serve, users]) t.notOk(r.stdout.includes('hunter2') || r.stderr.includes('hunter2'), 'no password');
});

/** A row as both sides hold it: Buffers as base64 (bytes compared exactly), numbers and strings as they are. */
function comparable(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Buffer.isBuffer(v) || v instanceof Uint8Array ? `bytes:${Buffer.from(v).toString('base64')}` : v]));
}
