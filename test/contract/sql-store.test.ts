// The metadata store's contract (src/db/store): what the repositories rely on, checked the same way on
// SQLite and on PostgreSQL (a real server, test/helpers/postgres.ts). Parameters in every style the
// repositories write, numbers and bytes read back alike, transactions that commit, roll back and nest,
// constraint errors recognised, and transactions that see and write as if alone under contention.
import t, { type Test } from 'tap';
import { isForeignKeyViolation, isUniqueViolation } from '../../src/db/repos/errors.js';
import { bindValues, translatePlaceholders } from '../../src/db/store/pg-sql.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import { DatabaseBusyError, type SqlExecutor } from '../../src/db/store/types.js';
import { isMetadataUnavailable } from '../../src/errors/s3-errors.js';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { pgStore, sqliteStore, storeMatrix } from '../helpers/stores.js';
import { tempDir } from '../helpers/temp-data.js';

t.test('placeholders become $n: positional, named (one number per name), literals and casts untouched', async (t) => {
  t.same(translatePlaceholders('SELECT ? , ?'), { text: 'SELECT $1 , $2', names: 2 });
  const named = translatePlaceholders("SELECT * FROM t WHERE a = @a AND b = :b AND c = $c AND d = @a AND e = 'x?@y' AND f::text = '$.blobId' -- ?\n");
  t.equal(named.text, "SELECT * FROM t WHERE a = $1 AND b = $2 AND c = $3 AND d = $1 AND e = 'x?@y' AND f::text = '$.blobId' -- ?\n");
  t.same(named.names, ['a', 'b', 'c']);
  t.same(bindValues(named, { c: 3, a: 1, extra: 9 }), [1, null, 3], 'missing and undefined bind NULL, extra keys are ignored');
  t.same(bindValues(translatePlaceholders('SELECT ?, ?'), [undefined, 'x']), [null, 'x']);
  t.throws(() => translatePlaceholders('SELECT ?, @a'), /mixes/);
});

const stores = storeMatrix(t);

async function table(db: SqlExecutor): Promise<void> {
  await db.run("INSERT INTO users (id, name, created_at) VALUES ('u1', 'ann', 1)");
  await db.run("INSERT INTO settings (name, value) VALUES ('n', '0')");
}

stores.each('statements: parameters, rows, numbers, bytes', async (t, open) => {
  const db = await open(t);
  await table(db);
  t.same(await db.run('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)', ['u2', 'bob', 2 ** 40]), { changes: 1 });
  t.same(await db.get('SELECT id, created_at FROM users WHERE name = @name', { name: 'bob' }), { id: 'u2', created_at: 2 ** 40 }, 'a BIGINT reads as a number');
  t.equal(await db.get('SELECT id FROM users WHERE name = ?', ['nobody']), undefined);
  t.same(await db.all('SELECT name FROM users ORDER BY name'), [{ name: 'ann' }, { name: 'bob' }]);
  t.same(await db.get('SELECT count(*) AS n, sum(created_at) AS total FROM users'), { n: 2, total: 2 ** 40 + 1 }, 'count and sum are numbers');
  t.same(await db.get('SELECT password_hash FROM users WHERE id = :id', { id: 'u1' }), { password_hash: null });
  await db.run('UPDATE users SET password_hash = @hash WHERE id = @id', { id: 'u1', hash: undefined });
  t.same(await db.run('DELETE FROM users WHERE id = ?', ['u2']), { changes: 1 });
  t.same(await db.run('DELETE FROM users WHERE id = ?', ['u2']), { changes: 0 });
  await db.run("INSERT INTO inline_blobs (blob_id, data) VALUES ('b', ?)", [Buffer.from([0, 1, 255])]);
  const row = await db.get<{ data: Uint8Array }>("SELECT data FROM inline_blobs WHERE blob_id = 'b'");
  t.same(Buffer.from(row?.data ?? []), Buffer.from([0, 1, 255]), 'bytes read back as they were written');
  t.same(await db.get('INSERT INTO cache_invalidations (at, writer, kind, a, b) VALUES (1, ?, ?, ?, ?) RETURNING seq', ['w', 'asset', 'x', '']), { seq: 1 }, 'RETURNING gives the new id');
});

stores.each('constraint errors are recognised on both', async (t, open) => {
  const db = await open(t);
  await table(db);
  const dup = await db.run("INSERT INTO users (id, name, created_at) VALUES ('u9', 'ann', 1)").catch((err: unknown) => err);
  t.ok(isUniqueViolation(dup), 'UNIQUE');
  const fk = await db.run("INSERT INTO buckets (id, name, owner_id, region, created_at) VALUES ('b', 'b', 'nobody', 'r', 1)").catch((err: unknown) => err);
  t.ok(isForeignKeyViolation(fk), 'FOREIGN KEY');
  t.notOk(isUniqueViolation(fk));
});

stores.each('transactions commit, roll back, and nest as savepoints', async (t, open) => {
  const db = await open(t);
  await table(db);
  t.equal(await db.transaction(async (tx) => {
    await tx.run("UPDATE settings SET value = '1' WHERE name = 'n'");
    return 'done';
  }), 'done');
  await t.rejects(db.transaction(async (tx) => {
    await tx.run("UPDATE settings SET value = '2' WHERE name = 'n'");
    throw new Error('no');
  }), /no/);
  t.same(await db.get("SELECT value FROM settings WHERE name = 'n'"), { value: '1' }, 'the failed transaction left nothing');
  await db.transaction(async (tx) => {
    await tx.run("UPDATE settings SET value = 'outer' WHERE name = 'n'");
    await tx.transaction(async (inner) => {
      await inner.run("INSERT INTO settings (name, value) VALUES ('kept', 'y')");
    });
    await t.rejects(tx.transaction(async (inner) => {
      await inner.run("INSERT INTO settings (name, value) VALUES ('undone', 'y')");
      throw new Error('inner');
    }), /inner/);
  });
  t.same(await db.all('SELECT name, value FROM settings ORDER BY name'), [
    { name: 'kept', value: 'y' },
    { name: 'n', value: 'outer' },
  ], 'the outer and the first savepoint committed; the failed savepoint did not');
});

stores.each('concurrent read-modify-write transactions lose no update', async (t, open) => {
  const db = await open(t);
  await table(db);
  const add = (): Promise<void> =>
    db.transaction(async (tx) => {
      const row = await tx.get<{ value: string }>("SELECT value FROM settings WHERE name = 'n'");
      await new Promise((resolve) => setImmediate(resolve));
      await tx.run("UPDATE settings SET value = ? WHERE name = 'n'", [String(Number(row?.value) + 1)]);
    });
  await Promise.all(Array.from({ length: 12 }, add));
  t.same(await db.get("SELECT value FROM settings WHERE name = 'n'"), { value: '12' }, 'twelve increments, twelve counted');
});

t.test('sqlite: statements of other requests wait for an open transaction, then see its outcome', async (t) => {
  const db = await sqliteStore(t);
  await table(db);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const tx = db.transaction(async (tx) => {
    await tx.run("UPDATE settings SET value = 'in-tx' WHERE name = 'n'");
    await held;
    throw new Error('rolled back');
  });
  const read = db.get<{ value: string }>("SELECT value FROM settings WHERE name = 'n'");
  const write = db.run("UPDATE settings SET value = 'after' WHERE name = 'n'");
  setTimeout(release, 20);
  await t.rejects(tx, /rolled back/);
  t.same(await read, { value: '0' }, 'the read waited and did not see the rolled-back write');
  await write;
  t.same(await db.get("SELECT value FROM settings WHERE name = 'n'"), { value: 'after' }, 'the write was not undone with the transaction');
  t.ok(db instanceof SqliteStore);
});

/** A store given busyWaitMs (as every serving process's) and another connection to the same file (a backup, sqlite3 by hand). */
function busyPair(t: Test, busyWaitMs: number) {
  const file = join(tempDir(t), 'meta.db');
  const store = new SqliteStore(openDatabase(file), { busyWaitMs });
  const other = openDatabase(file);
  t.teardown(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await store.close();
  });
  return { store, other };
}

/** Counts the event loop's turns (a 5 ms timer) until stopped: a synchronous wait would let none run. */
function loopTurns(): { stop(): number } {
  let turns = 0;
  const timer = setInterval(() => turns++, 5);
  return { stop: () => (clearInterval(timer), turns) };
}

t.test('sqlite busyWaitMs: another connection\'s lock is waited for on timers, and the write then made', async (t) => {
  const { store, other } = busyPair(t, 5000);
  t.equal(store.connection.pragma('busy_timeout', { simple: true }), 0, 'SQLite itself never waits');
  other.exec('BEGIN EXCLUSIVE');
  const turns = loopTurns();
  const write = store.run("INSERT INTO settings (name, value) VALUES ('w', '1')");
  const begun = store.transaction(async (tx) => tx.run("INSERT INTO settings (name, value) VALUES ('tx', '1')"));
  // While both wait for the lock, a read of this store is answered: a BEGIN that waits holds no gate.
  t.same(await store.get("SELECT count(*) AS n FROM settings WHERE name IN ('w', 'tx')"), { n: 0 }, 'a read is served meanwhile');
  await new Promise((resolve) => setTimeout(resolve, 200));
  other.exec('COMMIT');
  await write;
  await begun;
  t.ok(turns.stop() >= 10, 'the event loop kept turning while the write waited');
  t.same(await store.get("SELECT count(*) AS n FROM settings WHERE name IN ('w', 'tx')"), { n: 2 }, 'both writes were made once the lock was let go');
});

t.test('sqlite busyWaitMs: a lock held past the wait fails the write with DatabaseBusyError, nothing written', async (t) => {
  const { store, other } = busyPair(t, 300);
  other.exec('BEGIN IMMEDIATE');
  const turns = loopTurns();
  const started = performance.now();
  const err = await store.run("INSERT INTO settings (name, value) VALUES ('w', '1')").catch((e: unknown) => e);
  const waited = performance.now() - started;
  t.ok(err instanceof DatabaseBusyError, 'DatabaseBusyError');
  t.equal((err as DatabaseBusyError).code, 'SQLITE_BUSY');
  t.match((err as Error).message, /locked by another connection for \d+ ms/);
  t.ok(waited >= 300, `it waited its limit (${waited.toFixed(0)} ms)`);
  const txErr = await store.transaction(async (tx) => tx.run("INSERT INTO settings (name, value) VALUES ('tx', '1')")).catch((e: unknown) => e);
  t.ok(txErr instanceof DatabaseBusyError, 'a transaction that never got the lock fails alike');
  t.ok(turns.stop() >= 20, 'the event loop kept turning');
  other.exec('ROLLBACK');
  t.same(await store.get("SELECT count(*) AS n FROM settings WHERE name IN ('w', 'tx')"), { n: 0 }, 'nothing was written');
  await store.run("INSERT INTO settings (name, value) VALUES ('w', '2')");
  t.same(await store.get("SELECT value FROM settings WHERE name = 'w'"), { value: '2' }, 'and the next write goes through');
});

t.test('sqlite without busyWaitMs: SQLite\'s own busy_timeout is kept (tools and the admin CLI)', async (t) => {
  const store = new SqliteStore(openDatabase(join(tempDir(t), 'meta.db')));
  t.teardown(() => store.close());
  t.equal(store.connection.pragma('busy_timeout', { simple: true }), 5000);
});

async function until(t: { ok(v: unknown, m: string): void }, what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  t.ok(check(), what);
}

t.test('sqlite: changeVersion moves for another connection\'s commit, not for its own', async (t) => {
  const file = join(tempDir(t), 'meta.db');
  const a = new SqliteStore(openDatabase(file));
  const b = new SqliteStore(openDatabase(file));
  t.teardown(async () => { await a.close(); await b.close(); });
  const before = a.changeVersion();
  await a.run("INSERT INTO settings (name, value) VALUES ('own', '1')");
  t.equal(a.changeVersion(), before, 'its own commit does not move it');
  await b.run("INSERT INTO settings (name, value) VALUES ('other', '1')");
  t.not(a.changeVersion(), before, 'another connection\'s commit does');
});

t.test('postgres: a connection killed between two statements of a transaction fails the transaction (a 503), never the process', async (t) => {
  const server = await stores.postgres();
  const store = await pgStore(server, t);
  await store.run("INSERT INTO users (id, name, created_at) VALUES ('k', 'k', 1)");
  const err = await store
    .transaction(async (tx) => {
      await tx.run("INSERT INTO settings (name, value) VALUES ('half', '1')");
      // A failover between two statements: the server ends this connection while the client holds it.
      const { rows } = await server.admin<{ n: number }>("SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 's3edge' AND state LIKE 'idle in transaction%'");
      t.equal(rows[0]?.n, 1, 'the transaction\'s connection was ended');
      // The connection's 'error' arrives while no statement runs: with nobody listening, it ended the process.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await tx.run("INSERT INTO settings (name, value) VALUES ('other-half', '1')");
    })
    .catch((e: unknown) => e);
  t.ok(err instanceof Error, 'the transaction failed');
  t.ok(isMetadataUnavailable(err), `as the metadata database unavailable (503): ${(err as Error).message}`);
  t.same(await store.all("SELECT name FROM settings WHERE name IN ('half', 'other-half')"), [], 'nothing of it was committed');
  await store.run("INSERT INTO settings (name, value) VALUES ('after', '1')");
  t.same(await store.get("SELECT value FROM settings WHERE name = 'after'"), { value: '1' }, 'the store goes on with other connections');
});

t.test('postgres: changeVersion moves when another node commits to a watched table, and while the feed is down', async (t) => {
  const server = await stores.postgres();
  const url = await server.database();
  const a = await pgStore(server, t, url);
  const b = await pgStore(server, t, url);
  const settled = a.changeVersion();
  t.equal(a.changeVersion(), settled, 'still while nothing changes');
  await b.run("INSERT INTO users (id, name, created_at) VALUES ('u', 'u', 1)");
  await b.run("INSERT INTO settings (name, value) VALUES ('rate', '2')");
  await until(t, 'a commit to settings on the other node moved it', () => a.changeVersion() !== settled);
  const moved = a.changeVersion();
  await b.transaction(async (tx) => {
    await tx.run("INSERT INTO settings (name, value) VALUES ('x', '1')");
    await tx.run("UPDATE settings SET value = '2' WHERE name = 'x'");
  });
  await until(t, 'a transaction moved it', () => a.changeVersion() !== moved);
  // The feed's own connection is cut (a failover, a restart): every read then moves it, until it is back.
  await server.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 's3edge-changes'");
  await until(t, 'while down, every read moves it', () => a.changeVersion() !== a.changeVersion());
  await until(t, 'it reconnects and holds still again', () => {
    const v = a.changeVersion();
    return a.changeVersion() === v;
  });
  const back = a.changeVersion();
  await b.run("UPDATE settings SET value = '3' WHERE name = 'rate'");
  await until(t, 'and moves on notifications again', () => a.changeVersion() !== back);
});
