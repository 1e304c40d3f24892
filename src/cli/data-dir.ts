// Opens a data directory: creates it (0700), loads the master key, opens <dataDir>/meta.db.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
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
}

function verifyMasterKey(repos: Repos, masterKey: Buffer): void {
  repos.transaction(() => {
    const check = repos.settings.get(MASTER_KEY_CHECK);
    if (check === undefined) {
      repos.settings.set(MASTER_KEY_CHECK, encryptSecret(masterKey, CHECK_PLAINTEXT));
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

export function openDataDir(config: Config): DataDir {
  try {
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new ConfigError(`config: dataDir: cannot create ${config.dataDir}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const masterKey = loadMasterKey(config);
  let db: Db;
  try {
    db = openDatabase(join(config.dataDir, META_DB_FILE));
  } catch (err) {
    throw new ConfigError(`config: dataDir: cannot open ${join(config.dataDir, META_DB_FILE)}: ${(err as Error).message}`);
  }
  try {
    const repos = createRepos(db);
    verifyMasterKey(repos, masterKey);
    return { db, repos, masterKey };
  } catch (err) {
    db.close();
    throw err;
  }
}
