// Readiness over a real SQLite database and a real DiskStorage: ready when both answer; a storage
// folder that went away, or a database that cannot be written, is not ready and says which; another
// writer holding the lock briefly, or committing, is not a failure; a lock held with no commit for a
// second is, found on timers (never a wait on the event loop); probes are reused for a second and
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

t.test('another writer holding the lock briefly is writable, in use: not a failure', async (t) => {
  const s = await setUp(t);
  const other = openSqlite(join(s.dir, 'meta.db'));
  t.teardown(() => other.close());
  other.exec('BEGIN IMMEDIATE');
  setTimeout(() => other.exec('ROLLBACK'), 100);
  const report = await s.readiness.check();
  t.same(report.checks.metadata, 'ok', 'the lock let go within the wait');
  t.equal(s.db.pragma('busy_timeout', { simple: true }), 5000, 'the busy timeout is restored');
});

t.test('a database busy with commits (other workers, the log writer) is writable, in use', async (t) => {
  const s = await setUp(t);
  const other = openSqlite(join(s.dir, 'meta.db'));
  t.teardown(() => other.close());
  // The lock is never free when the probe looks, but commits go on: data_version moves.
  other.exec('BEGIN IMMEDIATE');
  const timer = setInterval(() => {
    other.exec("INSERT INTO settings (name, value) VALUES ('busy', '1') ON CONFLICT (name) DO UPDATE SET value = value + 1");
    other.exec('COMMIT');
    other.exec('BEGIN IMMEDIATE');
  }, 100);
  const report = await s.readiness.check();
  clearInterval(timer);
  other.exec('ROLLBACK');
  t.same(report.checks.metadata, 'ok');
});

t.test('a lock held with no commit (a backup, sqlite3 by hand) is reported, without waiting on the event loop', async (t) => {
  const s = await setUp(t);
  const other = openSqlite(join(s.dir, 'meta.db'));
  t.teardown(() => other.close());
  const errors: unknown[] = [];
  const readiness = new Readiness({ metadata: sqliteWritable(s.db), storage: { probe: async () => undefined }, now: () => 0, onFailure: (_check, err) => errors.push(err) });
  other.exec('BEGIN EXCLUSIVE');
  let turns = 0;
  const timer = setInterval(() => turns++, 5);
  const report = await readiness.check();
  clearInterval(timer);
  other.exec('ROLLBACK');
  t.same(report, { ready: false, checks: { metadata: 'failing', storage: 'ok' } });
  t.match(String((errors[0] as Error).message), /locked by another connection for \d+ ms with no commit/, 'the log says why');
  t.ok(turns >= 20, 'the event loop kept turning while the probe waited');
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
