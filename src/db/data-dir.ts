// Opens a data directory: creates it (0700) unless told it must exist, loads the master key, opens the
// metadata store: <dataDir>/meta.db (SQLite), or the PostgreSQL database of the `metadata` setting, which
// many nodes share (each with a data directory of its own for its caches; docs/DEPLOYMENT.md).
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { openDatabase, type Db } from './open.js';
import { isPostgresUrl, redactUrl } from './pg/url.js';
import { createRepos, type Repos } from './repos/index.js';
import type { OpenPgStoreOptions } from './store/open-pg.js';
import { SqliteStore } from './store/sqlite-store.js';
import type { SqlStore } from './store/types.js';
import { decryptSecret, encryptSecret, loadMasterKey } from '../auth/secrets.js';

export const META_DB_FILE = 'meta.db';
/** Settings row holding a value sealed with the master key, to detect a wrong or lost key early. */
const MASTER_KEY_CHECK = 'master_key_check';
const CHECK_PLAINTEXT = 's3edge master key check';

export interface DataDir {
  /** The SQLite connection under the store; absent when the metadata is PostgreSQL. */
  db?: Db;
  store: SqlStore;
  repos: Repos;
  masterKey: Buffer;
  /** This call made meta.db: the directory was new (or held no metadata). Never for PostgreSQL. */
  created: boolean;
}

/** `mustExist` and no meta.db in the data directory: nothing was created. */
export class NoDataDirError extends Error {
  constructor(readonly dir: string) {
    super(
      `no s3edge data directory at ${dir} (no ${META_DB_FILE} there): point at the server's with --data-dir DIR or S3EDGE_DATA_DIR; a deployment on PostgreSQL at its database with --metadata postgres://... or S3EDGE_METADATA(_FILE); or start the server first (s3edge serve)`,
    );
    this.name = 'NoDataDirError';
  }
}

export interface OpenDataDirOptions {
  /** Refuse (NoDataDirError) rather than create a data directory that holds no meta.db yet (SQLite only). */
  mustExist?: boolean;
  /** PostgreSQL: the pool's size, where connection errors go (the server's log), this process's share of the row cache. */
  postgres?: OpenPgStoreOptions;
  /** SQLite: this serving process's share of the row cache (db/metadata-cache.ts); absent or 0, none (admin commands). */
  sqliteReadCacheBytes?: number;
  /**
   * SQLite: how long a statement waits for another connection's lock, on timers rather than on the event
   * loop (SqliteStore's `busyWaitMs`): serving processes. Absent: SQLite's busy_timeout (admin commands).
   */
  sqliteBusyWaitMs?: number;
}

async function verifyMasterKey(repos: Repos, masterKey: Buffer): Promise<void> {
  await repos.transact(async (r) => {
    const check = await r.settings.get(MASTER_KEY_CHECK);
    if (check === undefined) {
      await r.settings.set(MASTER_KEY_CHECK, encryptSecret(masterKey, CHECK_PLAINTEXT));
      return;
    }
    let ok = false;
    try {
      ok = decryptSecret(masterKey, check) === CHECK_PLAINTEXT;
    } catch {
      ok = false;
    }
    if (!ok) {
      throw new ConfigError(
        'config: the master key does not match this metadata (its secrets were sealed with another key: restore master.key or set masterKey; every node of one database needs the same)',
      );
    }
  });
}

export async function openDataDir(config: Config, options: OpenDataDirOptions = {}): Promise<DataDir> {
  // A configured master key is checked first: a bad one is the mistake to report, whatever the directory.
  const configuredKey = config.masterKey !== '' ? loadMasterKey(config) : undefined;
  const postgres = isPostgresUrl(config.metadata);
  const created = !postgres && !existsSync(join(config.dataDir, META_DB_FILE));
  if (created && options.mustExist) throw new NoDataDirError(resolve(config.dataDir));
  try {
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new ConfigError(`config: dataDir: cannot create ${config.dataDir}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const masterKey = configuredKey ?? loadMasterKey(config);
  let db: Db | undefined;
  let store: SqlStore;
  if (postgres) {
    try {
      // The PostgreSQL driver loads only for a node on PostgreSQL: on SQLite it would only slow the start.
      const { openPgStore } = await import('./store/open-pg.js');
      // metadataCacheBytes 0 (on every node: docs/DEPLOYMENT.md) turns the row cache and its write lease off.
      const cached = config.metadataCacheBytes > 0;
      store = await openPgStore(config.metadata, { readCacheBytes: config.metadataCacheBytes, coherenceLease: cached, ...options.postgres });
    } catch (err) {
      // pg's errors name the host and database, never the password; the URL is shown redacted.
      throw new ConfigError(`config: metadata: cannot open ${redactUrl(config.metadata)}: ${(err as Error).message}`);
    }
  } else {
    try {
      db = openDatabase(join(config.dataDir, META_DB_FILE));
    } catch (err) {
      throw new ConfigError(`config: dataDir: cannot open ${join(config.dataDir, META_DB_FILE)}: ${(err as Error).message}`);
    }
    // Every process of the data directory holds its writes of cached rows for the servers' row caches
    // (db/metadata-cache.ts), whether or not it caches itself; metadataCacheBytes 0 turns both off.
    store = new SqliteStore(db, {
      readCacheBytes: options.sqliteReadCacheBytes ?? 0,
      coherenceLease: config.metadataCacheBytes > 0,
      ...(options.sqliteBusyWaitMs !== undefined ? { busyWaitMs: options.sqliteBusyWaitMs } : {}),
    });
  }
  try {
    const repos = createRepos(store);
    await verifyMasterKey(repos, masterKey);
    return { ...(db ? { db } : {}), store, repos, masterKey, created };
  } catch (err) {
    await store.close();
    throw err;
  }
}
