// The contract of the SQLite interface behind src/db/sqlite/ (docs/RUNTIME.md): what s3edge relies on
// (better-sqlite3's API shape, which the code was written against), checked on node:sqlite, the one
// driver (Node 24's built-in DatabaseSync).
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { Checkpointer } from '../../src/db/checkpointer.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../src/db/repos/errors.js';
import { openSqlite, type Database } from '../../src/db/sqlite/index.js';
import { isOutOfSpace } from '../../src/errors/s3-errors.js';
import { tempDir } from '../helpers/temp-data.js';

function code(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return (err as { code?: unknown }).code;
  }
  return 'no error';
}

t.test('node:sqlite', async (t) => {
  const open = (t: Test, name = 'db.sqlite', opts: { readonly?: boolean; fileMustExist?: boolean } = {}): { db: Database; file: string } => {
    const file = join(tempDir(t), name);
    const db = openSqlite(file, opts);
    t.teardown(() => db.close());
    return { db, file };
  };

  t.test('open, close, fileMustExist, readonly', async (t) => {
    const { db, file } = open(t);
    t.ok(existsSync(file));
    t.equal(db.open, true);
    db.close();
    t.equal(db.open, false);
    db.close();
    t.equal(code(() => openSqlite(join(tempDir(t), 'missing.db'), { fileMustExist: true })), 'SQLITE_CANTOPEN');
    const w = openSqlite(file);
    w.exec('CREATE TABLE t (a)');
    w.close();
    const ro = openSqlite(file, { readonly: true, fileMustExist: true });
    t.teardown(() => ro.close());
    t.equal(code(() => ro.prepare('INSERT INTO t VALUES (1)').run()), 'SQLITE_READONLY');
  });

  t.test('run, get, all, iterate, pluck', async (t) => {
    const { db } = open(t);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, data BLOB)');
    const ins = db.prepare<[string, number, Buffer | null]>('INSERT INTO t (name, n, data) VALUES (?, ?, ?)');
    const r1 = ins.run('a', 1, Buffer.from([1, 2, 3]));
    t.same(r1, { changes: 1, lastInsertRowid: 1 });
    t.equal(typeof r1.lastInsertRowid, 'number');
    ins.run('b', 2 ** 40, null);
    const row = db.prepare<[string], { id: number; name: string; n: number; data: Buffer }>('SELECT * FROM t WHERE name = ?').get('a');
    t.equal(row?.id, 1);
    t.ok(Buffer.isBuffer(row?.data), 'BLOBs come back as Buffers');
    t.same([...(row?.data ?? [])], [1, 2, 3]);
    t.equal(db.prepare('SELECT * FROM t WHERE name = ?').get('zz'), undefined, 'no row: undefined');
    t.same(db.prepare<[], { n: number }>('SELECT n FROM t ORDER BY id').all().map((r) => r.n), [1, 2 ** 40]);
    t.same([...db.prepare<[], { name: string }>('SELECT name FROM t ORDER BY id').iterate()].map((r) => r.name), ['a', 'b']);
    const count = db.prepare<[], number>('SELECT count(*) FROM t').pluck();
    t.equal(count.get(), 2, 'pluck: the first column');
    t.same(db.prepare<[], string>('SELECT name, n FROM t ORDER BY id').pluck().all(), ['a', 'b']);
    t.same([...db.prepare<[], string>('SELECT name FROM t ORDER BY id').pluck().iterate()], ['a', 'b']);
    t.same(db.prepare('UPDATE t SET n = n + 1').run().changes, 2);
    t.same(db.prepare('DELETE FROM t WHERE name = ?').run('nobody').changes, 0);
    // A statement prepared once, run many times (the repositories' pattern), and iterate stopped early.
    for (let i = 0; i < 100; i++) ins.run(`x${i}`, i, null);
    for (const r of db.prepare('SELECT id FROM t').iterate()) if (r) break;
    t.equal(count.get(), 102);
  });

  t.test('parameters: named with bare keys, extra keys, undefined, an array', async (t) => {
    const { db } = open(t);
    t.same(db.prepare('SELECT @a AS a, :b AS b, $c AS c').get({ a: 1, b: 'two', c: null }), { a: 1, b: 'two', c: null });
    t.same(db.prepare('SELECT @a AS a').get({ a: 1, unused: 2 }), { a: 1 }, 'keys the SQL does not name are ignored');
    t.same(db.prepare('SELECT ? AS a, ? AS b').get(undefined, 2), { a: null, b: 2 }, 'undefined binds NULL');
    t.same(db.prepare('SELECT ? AS a, ? AS b').get([1, 2]), { a: 1, b: 2 }, 'an array: the positional parameters');
    t.same(db.prepare('SELECT ? AS a').get(2n ** 40n), { a: 2 ** 40 }, 'a BigInt binds, integers read as numbers');
    t.same(db.prepare('SELECT length(?) AS a').get(Buffer.alloc(5)), { a: 5 }, 'a Buffer binds as a BLOB');
  });

  t.test('pragma', async (t) => {
    const { db } = open(t);
    t.same(db.pragma('journal_mode = WAL'), [{ journal_mode: 'wal' }]);
    t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    db.pragma('user_version = 7');
    t.equal(db.pragma('user_version', { simple: true }), 7);
    db.pragma('busy_timeout = 1234');
    t.equal(db.pragma('busy_timeout', { simple: true }), 1234);
    t.same(db.pragma('synchronous = NORMAL'), []);
  });

  t.test('transactions: commit, rollback, nesting, immediate, no promises', async (t) => {
    const { db } = open(t);
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY)');
    const ins = db.prepare<[string]>('INSERT INTO t VALUES (?)');
    const keys = (): string[] => db.prepare<[], string>('SELECT k FROM t ORDER BY k').pluck().all();
    const add = db.transaction((...ks: string[]) => {
      t.equal(db.inTransaction, true);
      for (const k of ks) ins.run(k);
      return ks.length;
    });
    t.equal(add('a', 'b'), 2);
    t.equal(db.inTransaction, false);
    t.throws(() => add('c', 'a'));
    t.same(keys(), ['a', 'b'], 'a throw rolls the whole transaction back');
    t.equal(db.inTransaction, false);
    const outer = db.transaction(() => {
      ins.run('c');
      try {
        add('d', 'a');
      } catch {
        // the inner one (a SAVEPOINT) is undone, the outer goes on
      }
      ins.run('e');
    });
    outer.immediate();
    t.same(keys(), ['a', 'b', 'c', 'e']);
    add.deferred('f');
    add.exclusive('g');
    t.same(keys(), ['a', 'b', 'c', 'e', 'f', 'g']);
    const asyncTx = db.transaction(async () => ins.run('h'));
    t.throws(() => asyncTx(), TypeError);
    t.equal(db.inTransaction, false);
    t.notOk(keys().includes('h'), 'a promise-returning function is refused and rolled back');
  });

  t.test('errors carry the SQLite result code names the code inspects', async (t) => {
    const { db, file } = open(t);
    db.pragma('foreign_keys = ON');
    db.exec('CREATE TABLE p (id INTEGER PRIMARY KEY, name TEXT UNIQUE); CREATE TABLE c (p INTEGER REFERENCES p(id))');
    db.prepare('INSERT INTO p VALUES (1, ?)').run('x');
    let err: unknown;
    try {
      db.prepare('INSERT INTO p VALUES (2, ?)').run('x');
    } catch (e) {
      err = e;
    }
    t.equal((err as { code?: unknown }).code, 'SQLITE_CONSTRAINT_UNIQUE');
    t.ok(isUniqueViolation(err));
    t.match((err as Error).message, /UNIQUE constraint failed: p\.name/);
    t.equal(code(() => db.prepare('INSERT INTO p VALUES (1, ?)').run('y')), 'SQLITE_CONSTRAINT_PRIMARYKEY');
    try {
      db.prepare('INSERT INTO c VALUES (9)').run();
    } catch (e) {
      err = e;
    }
    t.ok(isForeignKeyViolation(err), 'SQLITE_CONSTRAINT_FOREIGNKEY');
    t.equal(code(() => db.prepare('SELEC 1')), 'SQLITE_ERROR');
    t.equal(code(() => db.exec('NOT SQL')), 'SQLITE_ERROR');
    // Another connection holds the write lock: SQLITE_BUSY (the readiness probe's "in use").
    db.pragma('journal_mode = WAL');
    const other = openSqlite(file);
    t.teardown(() => other.close());
    other.exec('BEGIN IMMEDIATE');
    db.pragma('busy_timeout = 0');
    t.equal(code(() => db.exec('BEGIN IMMEDIATE')), 'SQLITE_BUSY');
    other.exec('ROLLBACK');
    // A full database: SQLITE_FULL, which the S3 and API surfaces answer as storage full.
    db.exec('CREATE TABLE big (b BLOB)');
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 2}`);
    const fill = db.transaction(() => {
      for (let i = 0; i < 50; i++) db.prepare('INSERT INTO big VALUES (randomblob(4096))').run();
    });
    try {
      fill();
    } catch (e) {
      err = e;
    }
    t.equal((err as { code?: unknown }).code, 'SQLITE_FULL');
    t.ok(isOutOfSpace(err));
    t.equal(db.inTransaction, false, 'rolled back');
  });

  t.test("the app's database: migrations, repositories, the checkpoint worker", async (t) => {
    const file = join(tempDir(t), 'meta.db');
    const db = openDatabase(file);
    t.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length);
    t.equal(db.pragma('foreign_keys', { simple: true }), 1);
    const repos = createRepos(db);
    const user = await repos.users.create('alice');
    t.equal((await repos.users.getByName('alice'))?.id, user.id);
    t.equal(
      await (async () => {
        try {
          await repos.users.create('alice');
        } catch (e) {
          return (e as { reason?: unknown }).reason;
        }
        return 'no error';
      })(),
      'duplicate',
    );
    db.pragma('synchronous = NORMAL');
    const checkpointer = new Checkpointer(db, file, pino({ level: 'silent' }), 20);
    for (let i = 0; i < 20; i++) await repos.users.create(`u${i}`);
    await new Promise((r) => setTimeout(r, 100));
    await checkpointer.close();
    db.close();
    const again = openDatabase(file);
    t.teardown(() => again.close());
    t.equal((await createRepos(again).users.getByName('u19'))?.name, 'u19');
  });
});
