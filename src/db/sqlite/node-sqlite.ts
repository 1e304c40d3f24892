// The SQLite driver: node:sqlite's DatabaseSync (built into Node 24, docs/RUNTIME.md), shaped as types.ts
// says (better-sqlite3's API, which the code was written against):
// - named parameters: `@name`/`:name`/`$name` bound from bare keys, keys the SQL does not use ignored;
//   `undefined` binds NULL; one array argument is the positional parameters;
// - rows: BLOBs as Buffers (node:sqlite gives plain Uint8Arrays); pluck() via the first column;
// - errors: `code` is SQLite's result code name ('SQLITE_BUSY', 'SQLITE_FULL', 'SQLITE_CONSTRAINT_UNIQUE'),
//   not node's 'ERR_SQLITE_ERROR' (the number stays in `errcode`);
// - transaction(fn): BEGIN [DEFERRED|IMMEDIATE|EXCLUSIVE] ... COMMIT, a SAVEPOINT when nested, rolled back
//   when fn throws; pragma(); a 5 s busy timeout, and foreign keys as SQLite's default (off until the
//   PRAGMA).
// Also (test/contract/sqlite-adapter.test.ts pins the behaviour): a named parameter missing from the
// object binds NULL; booleans bind as 0/1; rows have a null prototype; an integer beyond 2^53 throws a
// RangeError.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resultCodeName } from './result-codes.js';
import type { Database, OpenOptions, RunResult } from './types.js';

interface StatementSync {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): Record<string, unknown> | undefined;
  all(...params: unknown[]): Record<string, unknown>[];
  iterate(...params: unknown[]): IterableIterator<Record<string, unknown>>;
  setAllowUnknownNamedParameters(enabled: boolean): void;
}

interface DatabaseSync {
  prepare(source: string): StatementSync;
  exec(source: string): void;
  close(): void;
  readonly isOpen: boolean;
  readonly isTransaction: boolean;
}

interface NodeSqlite {
  DatabaseSync: new (
    file: string,
    options: { readOnly: boolean; timeout: number; enableForeignKeyConstraints: boolean },
  ) => DatabaseSync;
}

/** How long a statement waits for another connection's lock (serving processes wait on timers instead: SqliteStore). */
const BUSY_TIMEOUT_MS = 5000;

/** node:sqlite, loaded with the first database opened (a process that opens none never loads it). */
export function loadNodeSqlite(): NodeSqlite {
  return createRequire(import.meta.url)('node:sqlite') as NodeSqlite;
}

export function openNodeSqlite(file: string, options: OpenOptions = {}): Database {
  if (options.fileMustExist && file !== ':memory:' && !existsSync(file)) {
    throw Object.assign(new Error('unable to open database file'), { name: 'SqliteError', code: 'SQLITE_CANTOPEN' });
  }
  const { DatabaseSync } = loadNodeSqlite();
  try {
    const raw = new DatabaseSync(file, {
      readOnly: options.readonly ?? false,
      timeout: BUSY_TIMEOUT_MS,
      enableForeignKeyConstraints: false,
    });
    // Checked by the contract suite rather than the compiler: the wrapper takes unknown[] parameters
    // where the interface carries each statement's own parameter and row types.
    return new NodeSqliteDatabase(raw) as unknown as Database;
  } catch (err) {
    throw sqliteError(err);
  }
}

/** node's ERR_SQLITE_ERROR, given `code` as the result code's name; other errors as they are. */
function sqliteError(err: unknown): unknown {
  const e = err as { code?: unknown; errcode?: unknown; name?: string } | null;
  if (e !== null && typeof e === 'object' && e.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') {
    Object.defineProperty(e, 'code', { value: resultCodeName(e.errcode), writable: true, configurable: true, enumerable: true });
    e.name = 'SqliteError';
  }
  return err;
}

function bindable(params: unknown[]): unknown[] {
  if (params.length === 1) {
    const only = params[0];
    if (Array.isArray(only)) return bindable(only);
    if (only !== null && typeof only === 'object' && !ArrayBuffer.isView(only)) {
      const named = only as Record<string, unknown>;
      for (const key in named) {
        if (named[key] === undefined) {
          const copy: Record<string, unknown> = {};
          for (const k in named) copy[k] = named[k] === undefined ? null : named[k];
          return [copy];
        }
      }
      return params;
    }
  }
  for (let i = 0; i < params.length; i++) {
    if (params[i] === undefined) return params.map((p) => (p === undefined ? null : p));
  }
  return params;
}

function withBuffers(row: Record<string, unknown>): Record<string, unknown> {
  for (const key in row) {
    const v = row[key];
    if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[key] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  }
  return row;
}

function firstColumn(row: Record<string, unknown>): unknown {
  for (const key in row) return row[key];
  return undefined;
}

class NodeSqliteStatement {
  private plucked = false;

  constructor(private readonly stmt: StatementSync) {
    stmt.setAllowUnknownNamedParameters(true);
  }

  pluck(toggle = true): this {
    this.plucked = toggle;
    return this;
  }

  run(...params: unknown[]): RunResult {
    try {
      return this.stmt.run(...bindable(params));
    } catch (err) {
      throw sqliteError(err);
    }
  }

  get(...params: unknown[]): unknown {
    let row: Record<string, unknown> | undefined;
    try {
      row = this.stmt.get(...bindable(params));
    } catch (err) {
      throw sqliteError(err);
    }
    return row === undefined ? undefined : this.out(row);
  }

  all(...params: unknown[]): unknown[] {
    let rows: Record<string, unknown>[];
    try {
      rows = this.stmt.all(...bindable(params));
    } catch (err) {
      throw sqliteError(err);
    }
    return rows.map((row) => this.out(row));
  }

  *iterate(...params: unknown[]): IterableIterator<unknown> {
    let it: IterableIterator<Record<string, unknown>>;
    try {
      it = this.stmt.iterate(...bindable(params));
    } catch (err) {
      throw sqliteError(err);
    }
    for (;;) {
      let next: IteratorResult<Record<string, unknown>>;
      try {
        next = it.next();
      } catch (err) {
        throw sqliteError(err);
      }
      if (next.done) return;
      yield this.out(next.value);
    }
  }

  private out(row: Record<string, unknown>): unknown {
    const r = withBuffers(row);
    return this.plucked ? firstColumn(r) : r;
  }
}

const SAVEPOINT = '"\t_s3edge_tx"';

function refusePromise(result: unknown): void {
  if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
    throw new TypeError('Transaction function cannot return a promise');
  }
}

class NodeSqliteDatabase {
  constructor(private readonly raw: DatabaseSync) {}

  get open(): boolean {
    return this.raw.isOpen;
  }

  get inTransaction(): boolean {
    return this.raw.isOpen && this.raw.isTransaction;
  }

  prepare(source: string): NodeSqliteStatement {
    try {
      return new NodeSqliteStatement(this.raw.prepare(source));
    } catch (err) {
      throw sqliteError(err);
    }
  }

  exec(source: string): this {
    try {
      this.raw.exec(source);
    } catch (err) {
      throw sqliteError(err);
    }
    return this;
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const stmt = this.prepare(`PRAGMA ${source}`);
    return options.simple ? stmt.pluck().get() : stmt.all();
  }

  close(): this {
    if (this.raw.isOpen) this.raw.close();
    return this;
  }

  transaction<F extends (...args: never[]) => unknown>(
    fn: F,
  ): ((...args: Parameters<F>) => ReturnType<F>) & Record<'deferred' | 'immediate' | 'exclusive', (...args: Parameters<F>) => ReturnType<F>> {
    const variant = (begin: string) =>
      (...args: Parameters<F>): ReturnType<F> => {
        if (this.raw.isTransaction) {
          this.exec(`SAVEPOINT ${SAVEPOINT}`);
          try {
            const result = fn(...args) as ReturnType<F>;
            refusePromise(result);
            this.exec(`RELEASE ${SAVEPOINT}`);
            return result;
          } catch (err) {
            if (this.raw.isTransaction) {
              this.exec(`ROLLBACK TO ${SAVEPOINT}`);
              this.exec(`RELEASE ${SAVEPOINT}`);
            }
            throw err;
          }
        }
        this.exec(begin);
        try {
          const result = fn(...args) as ReturnType<F>;
          refusePromise(result);
          this.exec('COMMIT');
          return result;
        } catch (err) {
          // Some errors (a full disk, an interrupted COMMIT) have ended the transaction already.
          if (this.raw.isTransaction) this.exec('ROLLBACK');
          throw err;
        }
      };
    return Object.assign(variant('BEGIN'), {
      deferred: variant('BEGIN DEFERRED'),
      immediate: variant('BEGIN IMMEDIATE'),
      exclusive: variant('BEGIN EXCLUSIVE'),
    });
  }
}
