// The first thing every serving process does with its data directory, and the only thing a cluster's
// supervisor must do before its workers may open it (docs/SCALE.md): open the metadata store (SQLite's
// migrations run here), check the master key, make sure of the root user and seed the TLD catalogue on a
// new directory. Nothing else: what serves, and what runs the jobs, is built on top (context.ts,
// jobs/jobs-context.ts).
import type { Config } from './config/schema.js';
import { ConfigError } from './config/load.js';
import { openDataDir, type DataDir, type OpenDataDirOptions } from './db/data-dir.js';
import { ensureRoot, type RootCredentials } from './auth/root.js';
import { CatalogueError, seedCatalogue } from './domains/catalogue.js';
import { BootstrapError } from './domains/availability/bootstrap.js';

export interface PreparedDataDir extends DataDir {
  root: RootCredentials;
}

/** Opens the data directory, makes sure of the root user and seeds the TLD catalogue; closes the store on failure. */
export async function prepareDataDir(config: Config, opts: OpenDataDirOptions = {}): Promise<PreparedDataDir> {
  const dir = await openDataDir(config, opts);
  try {
    const root = await ensureRoot(config, dir.repos, dir.masterKey);
    await seedTlds(dir, config);
    return { ...dir, root };
  } catch (err) {
    await dir.store.close();
    throw err;
  }
}

/** The TLD catalogue on the first start of a data directory; a bad seed file is a configuration error. */
async function seedTlds(dir: DataDir, config: Config): Promise<void> {
  try {
    await seedCatalogue(dir.repos, config);
  } catch (err) {
    throw asConfigError('domains.seedFile', err);
  }
}

/** A bad seed or RDAP bootstrap file, as the configuration error naming its key; anything else as it is. */
export function asConfigError(key: string, err: unknown): unknown {
  return err instanceof BootstrapError || err instanceof CatalogueError ? new ConfigError(`config: ${key}: ${err.message}`) : err;
}
