// Opens the metadata database on node:sqlite (DatabaseSync, built into Node 24) behind the interface of
// types.ts (docs/RUNTIME.md), the one driver: the `sqliteDriver` setting is accepted for configurations that
// name it and changes nothing (src/config/schema.ts). test/contract/sqlite-adapter.test.ts pins the
// interface's behaviour.
import { openNodeSqlite } from './node-sqlite.js';
import type { Database, OpenOptions } from './types.js';

export type { Database, OpenOptions, RunResult, Statement, Transaction } from './types.js';

export function openSqlite(file: string, options: OpenOptions = {}): Database {
  return openNodeSqlite(file, options);
}
