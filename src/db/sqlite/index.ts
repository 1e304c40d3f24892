// Opens the metadata database on node:sqlite (DatabaseSync, built into Node 24) behind the interface of
// types.ts (docs/RUNTIME.md). The `sqliteDriver` setting (S3EDGE_SQLITE_DRIVER) stays for configurations
// that name it: `auto` and `node-sqlite` are the same driver. test/contract/sqlite-adapter.test.ts pins the
// interface's behaviour.
import { openNodeSqlite } from './node-sqlite.js';
import type { Database, OpenOptions, SqliteDriver } from './types.js';

export type { Database, OpenOptions, RunResult, SqliteDriver, Statement, Transaction } from './types.js';

export type SqliteDriverSetting = SqliteDriver | 'auto';

export function resolveSqliteDriver(_setting: SqliteDriverSetting = 'auto'): SqliteDriver {
  return 'node-sqlite';
}

export function openSqlite(file: string, options: OpenOptions & { driver?: SqliteDriverSetting } = {}): Database {
  return openNodeSqlite(file, options);
}
