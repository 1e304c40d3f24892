// Opens a data directory: creates it (0700) unless told it must exist, loads the master key, opens <dataDir>/meta.db.
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { openDatabase, type Db } from '../db/open.js';
import { createRepos, type Repos } from '../db/repos/index.js';
import { decryptSecret, encryptSecret, loadMasterKey } from '../auth/secrets.js';

export const META_DB_FILE = 'meta.db';
/** Settings row holding a value sealed with the master key, to detect a wrong or lost key early. */
const MASTER_KEY_CHECK = 'master_key_check';
const CHECK_PLAINTEXT = 's3edge master key check';

export interface DataDir {
  db: Db;
  repos: Repos;
  masterKey: Buffer;
  /** This call made meta.db: the directory was new (or held no metadata). */
  created: boolean;
}

/** `mustExist` and no meta.db in the data directory: nothing was created. */
export class NoDataDirError extends Error {
  constructor(readonly dir: string) {
    super(
      `no s3edge data directory at ${dir} (no ${META_DB_FILE} there): point at the server's with --data-dir DIR or S3EDGE_DATA_DIR, or start the server first (s3edge serve)`,
    );
    this.name = 'NoDataDirError';
  }
}

export interface OpenDataDirOptions {
  /** Refuse (NoDataDirError) rather than create a data directory that holds no meta.db yet. */
  mustExist?: boolean;
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
        'config: the master key does not match this data directory (its secrets were sealed with another key: restore master.key or set masterKey)',
      );
    }
  });
}

export async function openDataDir(config: Config, options: OpenDataDirOptions = {}): Promise<DataDir> {
  // A configured master key is checked first: a bad one is the mistake to report, whatever the directory.
  const configuredKey = config.masterKey !== '' ? loadMasterKey(config) : undefined;
  const created = !existsSync(join(config.dataDir, META_DB_FILE));
  if (created && options.mustExist) throw new NoDataDirError(resolve(config.dataDir));
  try {
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new ConfigError(`config: dataDir: cannot create ${config.dataDir}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const masterKey = configuredKey ?? loadMasterKey(config);
  let db: Db;
  try {
    db = openDatabase(join(config.dataDir, META_DB_FILE), config.sqliteDriver);
  } catch (err) {
    throw new ConfigError(`config: dataDir: cannot open ${join(config.dataDir, META_DB_FILE)}: ${(err as Error).message}`);
  }
  try {
    const repos = createRepos(db);
    await verifyMasterKey(repos, masterKey);
    return { db, repos, masterKey, created };
  } catch (err) {
    db.close();
    throw err;
  }
}
