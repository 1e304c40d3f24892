// Both metadata stores for a contract test (test/contract/*): a migrated SQLite file in a temp dir and a
// migrated database of its own on the test file's PostgreSQL (test/helpers/postgres.ts). A contract
// test runs its checks once per store with `storeMatrix(t).each`.
import { join } from 'node:path';
import type { Test } from 'tap';
import { openDatabase } from '../../src/db/open.js';
import { openPgStore } from '../../src/db/store/open-pg.js';
import { PgStore } from '../../src/db/store/pg-store.js';
import { migratePostgres } from '../../src/db/pg/migrate.js';
import { createPgPool } from '../../src/db/pg/pool.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import type { SqlStore } from '../../src/db/store/types.js';
import { startPostgres, type RunningPostgres } from './postgres.js';
import { tempDir } from './temp-data.js';

export type StoreKind = 'sqlite' | 'postgres';

export interface StoreFactory {
  /** A fresh, migrated, empty store of this kind, closed on t's teardown. */
  (t: Test): Promise<SqlStore>;
}

/** A new SQLite store on a migrated file of its own. */
export async function sqliteStore(t: Test): Promise<SqliteStore> {
  const store = new SqliteStore(openDatabase(join(tempDir(t), 'meta.db')));
  t.teardown(() => store.close());
  return store;
}

/** A new PostgreSQL store (pool, migrations, change feed) on a database of its own on `server`, or on `url`. */
export async function pgStore(server: RunningPostgres, t: Test, url?: string): Promise<PgStore> {
  const store = await openPgStore(url ?? (await server.database()), { max: 4 });
  t.teardown(() => store.close());
  return store;
}

/**
 * Runs `body` as one subtest per store: SQLite, then PostgreSQL (started once per test file, on the
 * first call). Returns what each subtest gets.
 */
export function storeMatrix(root: Test): {
  each(name: string, body: (t: Test, open: StoreFactory, kind: StoreKind) => Promise<void>): void;
  /** The test file's PostgreSQL, started on first use. */
  postgres(): Promise<RunningPostgres>;
  /** Two stores of `kind` on one fresh migrated database, as two processes (or nodes) would have. */
  pair(t: Test, kind: StoreKind): Promise<[SqlStore, SqlStore]>;
} {
  let server: Promise<RunningPostgres> | undefined;
  const postgres = (): Promise<RunningPostgres> => (server ??= startPostgres(root));
  return {
    postgres,
    async pair(t, kind) {
      if (kind === 'sqlite') {
        const file = join(tempDir(t), 'meta.db');
        const stores = [new SqliteStore(openDatabase(file)), new SqliteStore(openDatabase(file))] as const;
        t.teardown(async () => {
          for (const s of stores) await s.close();
        });
        return [...stores];
      }
      const url = await (await postgres()).database();
      const first = createPgPool(url, { max: 4 });
      await migratePostgres(first);
      const stores = [new PgStore(first), new PgStore(createPgPool(url, { max: 4 }))] as const;
      t.teardown(async () => {
        for (const s of stores) await s.close();
      });
      return [...stores];
    },
    each(name, body) {
      root.test(`${name} [sqlite]`, (t) => body(t, sqliteStore, 'sqlite'));
      root.test(`${name} [postgres]`, async (t) => {
        const s = await postgres();
        await body(t, (tt) => pgStore(s, tt), 'postgres');
      });
    },
  };
}
