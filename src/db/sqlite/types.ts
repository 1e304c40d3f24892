// The SQLite interface s3edge uses, and nothing more: better-sqlite3's API shape (prepared statements
// with run/get/all/iterate/pluck, transaction(fn) with .deferred/.immediate/.exclusive, pragma()),
// which the rest of the code was written against. node-sqlite.ts implements it on node:sqlite's
// DatabaseSync, built into Node 24 (docs/RUNTIME.md).

/** Positional parameters as an array, or one object of named ones. */
type Params<P> = P extends unknown[] ? P : [P];

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** A prepared statement: run/get/all/iterate, and pluck() for a reader of the first column only. */
export interface Statement<P extends unknown[] | {} = unknown[], R = unknown> {
  run(...params: Params<P>): RunResult;
  get(...params: Params<P>): R | undefined;
  all(...params: Params<P>): R[];
  iterate(...params: Params<P>): IterableIterator<R>;
  /** Rows as their first column's value (true), or whole again (false). */
  pluck(toggle?: boolean): this;
}

/** Any function (a transaction's body). */
type TransactionFunction = (...args: never[]) => unknown;

/**
 * A function run in BEGIN ... COMMIT (a SAVEPOINT when nested), rolled back when it throws; callable
 * as is or as .deferred/.immediate/.exclusive.
 */
export interface Transaction<F extends TransactionFunction = TransactionFunction> {
  (...args: Parameters<F>): ReturnType<F>;
  default(...args: Parameters<F>): ReturnType<F>;
  deferred(...args: Parameters<F>): ReturnType<F>;
  immediate(...args: Parameters<F>): ReturnType<F>;
  exclusive(...args: Parameters<F>): ReturnType<F>;
}

export interface Database {
  prepare<P extends unknown[] | {} = unknown[], R = unknown>(source: string): Statement<P, R>;
  exec(source: string): this;
  transaction<F extends TransactionFunction>(fn: F): Transaction<F>;
  /** `PRAGMA <source>`: every row, or with `simple` the first column of the first row. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): this;
  readonly open: boolean;
  readonly inTransaction: boolean;
}

export interface OpenOptions {
  readonly?: boolean;
  /** Refuse to create the file. */
  fileMustExist?: boolean;
}

