// Readiness over a real SQLite database and a real DiskStorage: ready when both answer; a storage
// folder that went away, or a database that cannot be written, is not ready and says which; another
// writer holding the lock is not a failure and is not waited for; probes are reused for a second and
// shared by concurrent callers.
import t, { type Test } from 'tap';
import { openSqlite } from '../../src/db/sqlite/index.js';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { postgresWritable, Readiness, sqliteWritable } from '../../src/health/readiness.js';
import { createPgPool } from '../../src/db/pg/pool.js';
import { PgStore } from '../../src/db/store/pg-store.js';
import { startPostgres } from '../helpers/postgres.js';
import { pgStore } from '../helpers/stores.js';
import { DiskStorage } from '../../src/storage/disk.js';
import { tempDir } from '../helpers/temp-data.js';

async function setUp(t: Test) {
  const dir = tempDir(t);
  const db = openDatabase(join(dir, 'meta.db'));
  t.teardown(() => db.close());
  const disk = new DiskStorage(join(dir, 'storage'));
  await disk.init();
  let probes = 0;
  // The real disk probe, counted.
  const storage = { probe: () => (probes++, disk.probe()) };
  const failures: string[] = [];
  let now = 0;
  const readiness = new Readiness({ metadata: sqliteWritable(db), storage, now: () => now, onFailure: (check) => failures.push(check) });
  return {
    dir, db, readiness, failures,
    probes: () => probes,
    advance: (ms: number) => (now += ms),
  };
}

t.test('ready when the database takes the write lock and the storage folders are writable', async (t) => {
  const s = await setUp(t);
  t.same(await s.readiness.check(), { ready: true, checks: { metadata: 'ok', storage: 'ok' } });
  t.same(s.failures, []);
});

t.test('a storage folder that went away is not ready, and it recovers', async (t) => {
  const s = await setUp(t);
  rmSync(join(s.dir, 'storage', 'tmp'), { recursive: true });
  t.same(await s.readiness.check(), { ready: false, checks: { metadata: 'ok', storage: 'failing' } });
  t.same(s.failures, ['storage'], 'the failure is reported for the log');
  mkdirSync(join(s.dir, 'storage', 'tmp'));
  t.equal((await s.readiness.check()).ready, false, 'the report is reused within a second');
  s.advance(1000);
  t.equal((await s.readiness.check()).ready, true, 'then probed again: ready');
});

t.test('a database that cannot be written is not ready', async (t) => {
  const s = await setUp(t);
  const readOnly = openSqlite(join(s.dir, 'meta.db'), { readonly: true });
  t.teardown(() => readOnly.close());
  const readiness = new Readiness({ metadata: sqliteWritable(readOnly), storage: { probe: async () => undefined }, now: () => 0, onFailure: (check) => s.failures.push(check) });
  t.same(await readiness.check(), { ready: false, checks: { metadata: 'failing', storage: 'ok' } });
  t.same(s.failures, ['metadata']);
});

t.test('another writer holding the lock is writable, not a failure, and is not waited for', async (t) => {
  const s = await setUp(t);
  const other = openSqlite(join(s.dir, 'meta.db'));
  t.teardown(() => other.close());
  other.exec('BEGIN IMMEDIATE');
  const started = performance.now();
  const report = await s.readiness.check();
  const waited = performance.now() - started;
  other.exec('ROLLBACK');
  t.same(report.checks.metadata, 'ok');
  t.ok(waited < 4000, `not the 5 s busy timeout (${waited.toFixed(0)} ms)`);
  t.equal(s.db.pragma('busy_timeout', { simple: true }), 5000, 'the busy timeout is restored');
});

t.test('concurrent checks share one probe; a later one probes again', async (t) => {
  const s = await setUp(t);
  const reports = await Promise.all([s.readiness.check(), s.readiness.check(), s.readiness.check()]);
  t.equal(s.probes(), 1, 'one probe for three callers');
  t.ok(reports.every((r) => r.ready));
  s.advance(999);
  await s.readiness.check();
  t.equal(s.probes(), 1, 'reused under a second');
  s.advance(1);
  await s.readiness.check();
  t.equal(s.probes(), 2, 'probed again after a second');
});

t.test('postgres: a writable server is ready; a read-only one (a standby) and a stopped one are not', async (t) => {
  const server = await startPostgres(t);
  const url = await server.database('ready');
  const store = await pgStore(server, t, url);
  const failures: string[] = [];
  const readiness = (): Readiness =>
    new Readiness({ metadata: postgresWritable(store), storage: { probe: async () => undefined }, now: () => performance.now(), onFailure: (check) => failures.push(check), probeTimeoutMs: 1000 });
  t.same(await readiness().check(), { ready: true, checks: { metadata: 'ok', storage: 'ok' } });
  await server.admin('ALTER DATABASE ready SET default_transaction_read_only = on');
  const readOnly = new PgStore(createPgPool(url, { max: 1 }));
  t.teardown(() => readOnly.close());
  const standby = new Readiness({ metadata: postgresWritable(readOnly), storage: { probe: async () => undefined }, now: () => 0, onFailure: (check) => failures.push(check) });
  t.same((await standby.check()).checks.metadata, 'failing', 'read-only: not ready');
  await server.stop();
  t.same((await readiness().check()).checks.metadata, 'failing', 'stopped: not ready, within the probe deadline');
  t.same(failures, ['metadata', 'metadata']);
});
