// The part of better-sqlite3's API that s3edge uses, and nothing more. better-sqlite3's Database is
// this interface as it is (no wrapper: on Node < 24 the backend costs nothing); node-sqlite.ts wraps
// node:sqlite's DatabaseSync to behave the same (docs/RUNTIME.md).
import type BetterSqlite3 from 'better-sqlite3';

/** A prepared statement: run/get/all/iterate, and pluck() for a reader of the first column only. */
export type Statement<P extends unknown[] | {} = unknown[], R = unknown> = Pick<
  BetterSqlite3.Statement<P, R>,
  'run' | 'get' | 'all' | 'iterate' | 'pluck'
>;

export type RunResult = BetterSqlite3.RunResult;

/**
 * A function run in BEGIN ... COMMIT (a SAVEPOINT when nested), rolled back when it throws; callable
 * as is or as .deferred/.immediate/.exclusive.
 */
export type Transaction<F extends TransactionFunction = TransactionFunction> = BetterSqlite3.Transaction<F>;

/** Any function (better-sqlite3's own constraint, without spelling `any`). */
type TransactionFunction = Parameters<BetterSqlite3.Database['transaction']>[0];

export interface Database {
  prepare<P extends unknown[] | {} = unknown[], R = unknown>(source: string): Statement<P, R>;
  exec(source: string): this;
  transaction: BetterSqlite3.Database['transaction'];
  /** `PRAGMA <source>`: every row, or with `simple` the first column of the first row. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): this;
  readonly open: boolean;
  readonly inTransaction: boolean;
}

export interface OpenOptions {
  readonly?: boolean;
  /** Refuse to create the file (better-sqlite3's option; node:sqlite is given it by a check first). */
  fileMustExist?: boolean;
}

/** better-sqlite3 (a native addon) or node:sqlite (built into Node 22.13+; chosen by default on Node 24+). */
export type SqliteDriver = 'better-sqlite3' | 'node-sqlite';
