// Copies a SQLite metadata database into an empty PostgreSQL one (`s3edge metadata copy`): every table
// of SQLite, in foreign-key order, in ONE PostgreSQL transaction (a failure leaves the target as it
// was), batched multi-row INSERTs, identity sequences set past the copied rows, and the row count of
// every table checked before the commit. SQLite is read in one read transaction: one consistent
// snapshot even if an admin command writes meanwhile. The tables and columns come from SQLite itself,
// so a table added later is copied without a change here (its PostgreSQL twin is the schema test's job).
import type pg from 'pg';
import { checkOut } from './pool.js';
import type { Db } from '../open.js';
import { migratePostgres } from './migrate.js';
import { SEEDED_TABLES } from './migrations/index.js';

export interface TableCopy {
  table: string;
  rows: number;
}

export interface CopyResult {
  tables: TableCopy[];
  /** The PostgreSQL schema version the copy went into. */
  schemaVersion: number;
}

/** The target is not empty (or not a copy target): nothing was written. */
export class CopyRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CopyRefusedError';
  }
}

/** pg_advisory_xact_lock key of a copy: two copies into one database do not interleave. */
const COPY_LOCK = 0x5333_4544_4350; // "S3EDCP"
/** PostgreSQL takes at most 65535 parameters a statement. */
const MAX_PARAMS = 60_000;
const MAX_BATCH_ROWS = 500;

interface Column {
  name: string;
  pk: number;
}

/** SQLite's own tables, with their columns, parents before children (foreign keys). */
export function sqliteTables(db: Db): { name: string; columns: Column[] }[] {
  const names = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").pluck().all() as string[]);
  const parents = new Map<string, string[]>();
  for (const name of names) {
    const fks = db.pragma(`foreign_key_list(${quoteIdent(name)})`) as { table: string }[];
    parents.set(name, [...new Set(fks.map((f) => f.table).filter((p) => p !== name))]);
  }
  const ordered: string[] = [];
  const visiting = new Set<string>();
  const visit = (name: string): void => {
    if (ordered.includes(name)) return;
    if (visiting.has(name)) throw new Error(`foreign keys form a cycle through ${name}`);
    visiting.add(name);
    for (const parent of parents.get(name) ?? []) if (parents.has(parent)) visit(parent);
    visiting.delete(name);
    ordered.push(name);
  };
  for (const name of names) visit(name);
  return ordered.map((name) => ({ name, columns: db.pragma(`table_info(${quoteIdent(name)})`) as Column[] }));
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Whether any table other than the migrations' seeded ones holds a row. */
async function tablesInUse(client: pg.PoolClient, tables: readonly string[]): Promise<string[]> {
  const used: string[] = [];
  for (const table of tables) {
    if (SEEDED_TABLES.includes(table)) continue;
    const { rows } = await client.query<{ used: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${quoteIdent(table)}) AS used`);
    if (rows[0]?.used) used.push(table);
  }
  return used;
}

/** PostgreSQL's columns of `table` (empty: no such table), and which are identity columns. */
async function pgColumns(client: pg.PoolClient, table: string): Promise<Map<string, { identity: boolean }>> {
  const { rows } = await client.query<{ column_name: string; is_identity: string }>(
    "SELECT column_name, is_identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
    [table],
  );
  return new Map(rows.map((r) => [r.column_name, { identity: r.is_identity === 'YES' }]));
}

/**
 * Applies the PostgreSQL migrations, then copies `db` into the database of `pool`, which must hold no
 * data yet (CopyRefusedError otherwise). Returns each table's row count, as verified in PostgreSQL.
 */
export async function copySqliteToPostgres(db: Db, pool: pg.Pool): Promise<CopyResult> {
  const { version } = await migratePostgres(pool);
  const { client, release } = await checkOut(pool);
  let sqliteOpen = false;
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL statement_timeout = 0');
    // The stored-bytes counters are copied as they are: their triggers must not count the rows again.
    await client.query("SET LOCAL s3edge.copying = 'on'");
    await client.query('SELECT pg_advisory_xact_lock($1)', [COPY_LOCK]);
    db.exec('BEGIN');
    sqliteOpen = true;
    const tables = sqliteTables(db);
    const used = await tablesInUse(client, tables.map((t) => t.name));
    if (used.length > 0) {
      throw new CopyRefusedError(`the PostgreSQL database already holds metadata (rows in ${used.slice(0, 5).join(', ')}${used.length > 5 ? ', ...' : ''}): copy into an empty database`);
    }
    const counts: TableCopy[] = [];
    for (const { name, columns } of tables) {
      const target = await pgColumns(client, name);
      const missing = columns.filter((c) => !target.has(c.name)).map((c) => c.name);
      if (target.size === 0 || missing.length > 0) {
        throw new Error(`PostgreSQL has no ${target.size === 0 ? `table ${name}` : `column ${missing.join(', ')} of ${name}`}: this s3edge's PostgreSQL schema lags its SQLite schema`);
      }
      if (SEEDED_TABLES.includes(name)) await client.query(`DELETE FROM ${quoteIdent(name)}`);
      const copied = await copyTable(db, client, name, columns.map((c) => c.name));
      const identities = [...target].filter(([, c]) => c.identity).map(([column]) => column);
      for (const column of identities) await resetIdentity(db, client, name, column);
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM ${quoteIdent(name)}`);
      const inPg = Number(rows[0]?.n);
      const inSqlite = db.prepare(`SELECT count(*) FROM ${quoteIdent(name)}`).pluck().get() as number;
      if (inPg !== inSqlite || copied !== inSqlite) {
        throw new Error(`table ${name}: ${inSqlite} rows in SQLite, ${inPg} in PostgreSQL after the copy`);
      }
      counts.push({ table: name, rows: inPg });
    }
    await client.query('COMMIT');
    return { tables: counts, schemaVersion: version };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    if (sqliteOpen) db.exec('ROLLBACK');
    release();
  }
}

async function copyTable(db: Db, client: pg.PoolClient, table: string, columns: string[]): Promise<number> {
  const batchRows = Math.max(1, Math.min(MAX_BATCH_ROWS, Math.floor(MAX_PARAMS / columns.length)));
  const insertHead = `INSERT INTO ${quoteIdent(table)} (${columns.map(quoteIdent).join(', ')}) OVERRIDING SYSTEM VALUE VALUES `;
  let batch: unknown[][] = [];
  let copied = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const values: unknown[] = [];
    const tuples = batch.map((row) => `(${row.map((v) => `$${values.push(v)}`).join(', ')})`);
    await client.query(insertHead + tuples.join(', '), values);
    copied += batch.length;
    batch = [];
  };
  // Rows in primary-key order (rowid order for a rowid table): the copy is the same every time.
  const rows = db.prepare(`SELECT ${columns.map(quoteIdent).join(', ')} FROM ${quoteIdent(table)}`).iterate() as IterableIterator<Record<string, unknown>>;
  for (const row of rows) {
    batch.push(columns.map((c) => row[c] ?? null));
    if (batch.length >= batchRows) await flush();
  }
  await flush();
  return copied;
}

/**
 * The next identity value after every copied row, and after every value SQLite's AUTOINCREMENT ever
 * handed out (sqlite_sequence): a seq is never reused, even of rows pruned before the copy.
 */
async function resetIdentity(db: Db, client: pg.PoolClient, table: string, column: string): Promise<void> {
  const max = db.prepare(`SELECT max(${quoteIdent(column)}) FROM ${quoteIdent(table)}`).pluck().get() as number | null;
  const hasSequence = (db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'").pluck().get() as number) > 0;
  const issued = hasSequence ? (db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(table) as number | undefined) : undefined;
  const last = Math.max(max ?? 0, issued ?? 0);
  if (last < 1) return;
  await client.query('SELECT setval(pg_get_serial_sequence($1, $2), $3)', [quoteIdent(table), column, last]);
}
