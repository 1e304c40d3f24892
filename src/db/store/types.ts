// The metadata store's one interface, with two implementations: SQLite (sqlite-store.ts, the embedded
// default) and PostgreSQL (pg-store.ts, many gateway nodes on one database). The repositories
// (db/repos) hold every SQL statement and run them through this, so the same repository code serves
// both; where the dialects differ a repository asks `dialect`. test/contract/sql-store.test.ts runs the
// same checks against both.
import type { MetadataCache } from '../metadata-cache.js';

/**
 * A statement's parameters: an array for `?` placeholders, or an object for named ones (`@name`,
 * `:name`, `$name` in the SQL, bare keys in the object). `undefined` binds NULL.
 */
export type SqlParams = readonly unknown[] | Readonly<Record<string, unknown>>;

export interface SqlRunResult {
  /** Rows the statement inserted, updated or deleted. */
  changes: number;
}

export type SqlDialect = 'sqlite' | 'postgres';

/** Runs statements: the store itself (each statement on its own), or one transaction (`transaction`'s argument). */
export interface SqlExecutor {
  readonly dialect: SqlDialect;
  /** The first row, or undefined. */
  get<R>(sql: string, params?: SqlParams): Promise<R | undefined>;
  all<R>(sql: string, params?: SqlParams): Promise<R[]>;
  run(sql: string, params?: SqlParams): Promise<SqlRunResult>;
  /**
   * Runs `fn` in one transaction that sees and writes as if alone (SQLite: BEGIN IMMEDIATE; PostgreSQL:
   * SERIALIZABLE, re-run from the start when the database reports a serialization failure or a
   * deadlock, so `fn` touches nothing but the database through `tx`). Nested, it is a savepoint: a
   * throw undoes the inner part only. Every statement of `fn` must go through `tx`: on SQLite one sent
   * to the store waits for the transaction to end, and fails after 5 s (TransactionWaitError); on
   * PostgreSQL it runs on another connection, outside the transaction.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
}

export interface SqlStore extends SqlExecutor {
  /**
   * A number that moves when another connection or node has committed a change that caches of
   * rarely written data must see (SQLite: PRAGMA data_version; PostgreSQL: NOTIFY s3edge_changes).
   */
  changeVersion(): number;
  close(): Promise<void>;
  /**
   * The node's coherent cache of hot rows (db/metadata-cache.ts), which the repositories read through
   * outside transactions: PostgreSQL only (SQLite's reads are in-process; it has none).
   */
  readonly readCache?: MetadataCache | undefined;
}

/**
 * The SQLite database stayed locked by another connection (a backup, `sqlite3` by hand, an admin
 * command in a long transaction) for the whole wait a serving store allows (SqliteStore's `busyWaitMs`).
 * Nothing was done: answered 503 (S3 SlowDown, the API's `busy`) so that the client retries.
 */
export class DatabaseBusyError extends Error {
  readonly code = 'SQLITE_BUSY';
  constructor(readonly waitedMs: number) {
    super(`the metadata database stayed locked by another connection for ${waitedMs} ms (a backup, sqlite3 by hand, a long admin command?)`);
    this.name = 'DatabaseBusyError';
  }
}

/** A statement waited too long for another transaction on the one SQLite connection to end. */
export class TransactionWaitError extends Error {
  readonly code = 'SQLITE_BUSY';
  constructor(waitedMs: number) {
    super(`waited ${waitedMs} ms for a transaction to end (was a statement of a transaction body sent to the store instead of its tx?)`);
    this.name = 'TransactionWaitError';
  }
}
