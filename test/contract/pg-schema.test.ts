// The PostgreSQL schema (src/db/pg/migrations) against a real PostgreSQL (test/helpers/postgres.ts): the
// migrations apply, again is a no-op, two migrators at once leave one schema; and it is the twin of the
// SQLite schema that src/db/migrations produce: every table, column (name, order, type family,
// nullability, collation), primary key, foreign key, index, UNIQUE and CHECK constraint. A SQLite
// migration without its PostgreSQL twin fails here. Also the pool's settings and the one trigger.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import type pg from 'pg';
import { openDatabase, type Db } from '../../src/db/open.js';
import { migratePostgres } from '../../src/db/pg/migrate.js';
import { PG_MIGRATIONS } from '../../src/db/pg/migrations/index.js';
import { createPgPool } from '../../src/db/pg/pool.js';
import { startPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-data.js';

const server = await startPostgres(t);
const N = PG_MIGRATIONS.length;

function pool(url: string, t: Test, max = 2): pg.Pool {
  const p = createPgPool(url, { max });
  t.teardown(() => p.end());
  return p;
}

async function pgTables(p: pg.Pool): Promise<string[]> {
  const { rows } = await p.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
  );
  return rows.map((r) => r.table_name);
}

t.test('the migrations apply to an empty database, record their versions, and a second run is a no-op', async (t) => {
  const p = pool(await server.database(), t);
  const first = await migratePostgres(p);
  t.same(first, { applied: Array.from({ length: N }, (_, i) => i + 1), version: N });
  const tables = await pgTables(p);
  const second = await migratePostgres(p);
  t.same(second, { applied: [], version: N }, 'nothing left to apply');
  t.same(await pgTables(p), tables, 'the same tables');
  const { rows } = await p.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  t.same(rows.map((r) => r.version), Array.from({ length: N }, (_, i) => i + 1), 'one row a version');
  const seeded = await p.query('SELECT id, rolled_until FROM cdn_rollup_state');
  t.same(seeded.rows, [{ id: 1, rolled_until: 0 }], 'the roll-up state row, as SQLite seeds it (BIGINT read as a number)');
});

t.test('two migrators at once (two nodes starting): both succeed, one applies, one schema', async (t) => {
  const url = await server.database();
  const runs = await Promise.all([migratePostgres(pool(url, t)), migratePostgres(pool(url, t))]);
  t.same(runs.map((r) => r.version), [N, N]);
  t.same(runs.map((r) => r.applied.length).sort(), [0, N], 'exactly one of them applied the migrations');
  const p = pool(url, t);
  const { rows } = await p.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
  t.equal(rows[0]?.n, N);
});

t.test('a schema newer than this s3edge is refused, not downgraded', async (t) => {
  const p = pool(await server.database(), t);
  await migratePostgres(p);
  await t.rejects(migratePostgres(p, PG_MIGRATIONS.slice(0, N - 1)), /newer than this s3edge knows/);
});

interface SqliteColumn {
  name: string;
  type: string;
  notnull: number;
  pk: number;
}

t.test('the PostgreSQL schema is the twin of the SQLite schema: tables, columns, keys, indexes', async (t) => {
  const db: Db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const p = pool(await server.database(), t);
  await migratePostgres(p);

  const sqliteTables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").pluck().all() as string[]);
  t.ok(sqliteTables.length >= 30, `${sqliteTables.length} SQLite tables`);
  t.same(await pgTables(p), [...sqliteTables, 'schema_migrations'].sort(), 'the same tables (and the migrations record)');

  for (const table of sqliteTables) t.same(await pgShape(p, table), sqliteShape(db, table), `${table}: the same columns, keys and indexes`);
});

/** What the two schemas must agree on, of one table, in words both sides are turned into. */
interface Shape {
  /** name type null|not null, in order; a text column of PostgreSQL adds its collation. */
  columns: string[];
  primaryKey: string[];
  foreignKeys: string[];
  indexes: string[];
  uniqueConstraints: number;
  /** CHECK constraints (column and table ones). */
  checks: number;
}

/** SQLite's declared type -> the word for the PostgreSQL types its twin may have (values copy 1:1). */
const TYPE_FAMILY: Readonly<Record<string, string>> = {
  INTEGER: 'integer', bigint: 'integer', smallint: 'integer',
  TEXT: 'text', text: 'text',
  REAL: 'real', 'double precision': 'real',
  BLOB: 'blob', bytea: 'blob',
};

function sqliteShape(db: Db, table: string): Shape {
  const columns = db.pragma(`table_info(${table})`) as SqliteColumn[];
  const indexes = db.pragma(`index_list(${table})`) as { name: string; origin: string }[];
  return {
    // SQLite lets a rowid table's non-integer primary key be NULL (a quirk); PostgreSQL never does.
    columns: columns.map((c) => `${c.name} ${TYPE_FAMILY[c.type] ?? c.type}${c.type === 'TEXT' ? ' C' : ''} ${c.notnull === 1 || c.pk > 0 ? 'not null' : 'null'}`),
    primaryKey: columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
    foreignKeys: (db.pragma(`foreign_key_list(${table})`) as { table: string; from: string; to: string; on_delete: string }[])
      .map((f) => `${f.from} -> ${f.table}(${f.to}) ON DELETE ${f.on_delete}`)
      .sort(),
    indexes: indexes.filter((i) => i.origin === 'c').map((i) => i.name).sort(),
    uniqueConstraints: indexes.filter((i) => i.origin === 'u').length,
    checks: ((db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(table) as string).match(/\bCHECK\s*\(/gi) ?? []).length,
  };
}

async function pgShape(p: pg.Pool, table: string): Promise<Shape> {
  const one = async <R extends pg.QueryResultRow>(sql: string): Promise<R[]> => (await p.query<R>(sql, [table])).rows;
  const columns = await one<{ column_name: string; data_type: string; is_nullable: string; collation_name: string | null }>(
    "SELECT column_name, data_type, is_nullable, collation_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
  );
  const primaryKey = await one<{ attname: string }>(
    `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
     WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
  );
  const foreignKeys = await one<{ fk: string }>(
    `SELECT a.attname || ' -> ' || cl.relname || '(' || af.attname || ') ON DELETE ' ||
            CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'r' THEN 'RESTRICT' WHEN 'd' THEN 'SET DEFAULT' ELSE 'NO ACTION' END AS fk
     FROM pg_constraint c
     JOIN pg_class cl ON cl.oid = c.confrelid
     JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
     JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = c.confkey[1]
     WHERE c.conrelid = $1::regclass AND c.contype = 'f'`,
  );
  // Named indexes: neither the primary key's nor a UNIQUE constraint's.
  const indexes = await one<{ name: string }>(
    `SELECT i.relname AS name FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
     WHERE x.indrelid = $1::regclass AND NOT x.indisprimary AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)`,
  );
  const unique = await one<{ n: number }>("SELECT count(*)::int AS n FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'u'");
  const checks = await one<{ n: number }>("SELECT count(*)::int AS n FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c'");
  return {
    columns: columns.map(
      (c) => `${c.column_name} ${TYPE_FAMILY[c.data_type] ?? c.data_type}${c.collation_name === 'C' ? ' C' : ''} ${c.is_nullable === 'NO' ? 'not null' : 'null'}`,
    ),
    primaryKey: primaryKey.map((r) => r.attname),
    foreignKeys: foreignKeys.map((r) => r.fk).sort(),
    indexes: indexes.map((r) => r.name).sort(),
    uniqueConstraints: unique[0]?.n ?? 0,
    checks: checks[0]?.n ?? 0,
  };
}

t.test('the trigger: a deleted part no completion claimed leaves its blob to the sweep', async (t) => {
  const p = pool(await server.database(), t);
  await migratePostgres(p);
  await p.query("INSERT INTO users (id, name, created_at) VALUES ('u', 'alice', 1)");
  await p.query("INSERT INTO buckets (id, name, owner_id, region, created_at) VALUES ('b', 'photos', 'u', 'us-east-1', 1)");
  await p.query("INSERT INTO multipart_uploads (upload_id, bucket_id, key, owner_id, initiated) VALUES ('up', 'b', 'k', 'u', 1)");
  await p.query(
    "INSERT INTO multipart_parts (upload_id, part_number, blob_id, size, etag, last_modified, claimed) VALUES ('up', 1, 'blob-1', 5, 'e', 1, 0), ('up', 2, 'blob-2', 5, 'e', 1, 1)",
  );
  await p.query("DELETE FROM multipart_uploads WHERE upload_id = 'up'");
  const { rows } = await p.query('SELECT blob_id FROM blob_trash');
  t.same(rows, [{ blob_id: 'blob-1' }], 'the unclaimed part, through the cascade; the claimed one stays with its object');
});

t.test("the pool: named 's3edge', statements limited in time, BIGINT as numbers", async (t) => {
  const p = pool(server.url, t);
  const { rows } = await p.query(
    "SELECT current_setting('application_name') AS application_name, current_setting('statement_timeout') AS statement_timeout, 1700000000000::bigint AS big",
  );
  t.same(rows[0], { application_name: 's3edge', statement_timeout: '30s', big: 1700000000000 });
  const short = createPgPool(server.url, { max: 1, statementTimeoutMs: 50 });
  t.teardown(() => short.end());
  await t.rejects(short.query('SELECT pg_sleep(5)'), /statement timeout/, 'a runaway statement is cancelled');
});
