// The better-sqlite3 backend: its Database object is the adapter (types.ts is a subset of its API).
import BetterSqlite3 from 'better-sqlite3';
import type { Database, OpenOptions } from './types.js';

export function openBetterSqlite3(file: string, options: OpenOptions = {}): Database {
  return new BetterSqlite3(file, { readonly: options.readonly ?? false, fileMustExist: options.fileMustExist ?? false });
}
