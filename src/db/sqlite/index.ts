// Opens the metadata database with one of two SQLite bindings behind one interface (types.ts):
// better-sqlite3 on Node < 24 (the database object itself, no wrapper), node:sqlite's DatabaseSync on
// Node 24 and later, where better-sqlite3 12 aborts the process in garbage collection (docs/RUNTIME.md).
// `sqliteDriver` in the config (S3EDGE_SQLITE_DRIVER) forces either; the contract suite
// (test/contract/sqlite-adapter.test.ts) runs the same checks against both.
import { openBetterSqlite3 } from './better-sqlite3.js';
import { openNodeSqlite } from './node-sqlite.js';
import type { Database, OpenOptions, SqliteDriver } from './types.js';

export type { Database, OpenOptions, RunResult, SqliteDriver, Statement, Transaction } from './types.js';

export type SqliteDriverSetting = SqliteDriver | 'auto';

/** The first Node major on which `auto` is node:sqlite. */
export const NODE_SQLITE_DEFAULT_FROM_MAJOR = 24;

function nodeVersion(): [number, number] {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return [major, minor];
}

/** Whether this Node has node:sqlite without a flag, with what the adapter uses (22.13+ ... and isTransaction, 22.16+). */
export function nodeSqliteSupported(): boolean {
  const [major, minor] = nodeVersion();
  return major > 22 || (major === 22 && minor >= 16);
}

export function resolveSqliteDriver(setting: SqliteDriverSetting = 'auto'): SqliteDriver {
  if (setting !== 'auto') return setting;
  return nodeVersion()[0] >= NODE_SQLITE_DEFAULT_FROM_MAJOR ? 'node-sqlite' : 'better-sqlite3';
}

export function openSqlite(file: string, options: OpenOptions & { driver?: SqliteDriverSetting } = {}): Database {
  const driver = resolveSqliteDriver(options.driver);
  if (driver === 'better-sqlite3') return openBetterSqlite3(file, options);
  if (!nodeSqliteSupported()) {
    throw new Error(`sqliteDriver node-sqlite needs Node 22.16 or later (this is ${process.versions.node}); use better-sqlite3 or auto`);
  }
  return openNodeSqlite(file, options);
}
