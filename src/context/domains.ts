// The domain reseller's part of a serving process: the domain search (TLD catalogue queries and registry
// lookups over RDAP), made on its first use (domains/lazy-search.ts), over the RDAP bootstrap read now.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import { asConfigError } from '../data-dir-setup.js';
import { BootstrapSource } from '../domains/availability/bootstrap-source.js';
import { lazyDomainSearch, type LazyDomainSearch } from '../domains/lazy-search.js';

/** The domain search, made on first use; a bad domains.rdap.bootstrapFile is a configuration error now. */
export function domainSearch(config: Config, repos: Repos, opts: { clock: () => Date; monotonic: () => number; log: Logger }): LazyDomainSearch {
  const { clock, monotonic, log } = opts;
  const bootstrap = rdapBootstrap(config, repos, log);
  return lazyDomainSearch({ repos, config, clock, monotonic, bootstrap, log });
}

/**
 * Where RDAP servers come from (domains/availability/bootstrap-source.ts): domains.rdap.bootstrapFile,
 * read now so that a bad one is a configuration error at start, else the refreshed or shipped copy.
 */
function rdapBootstrap(config: Config, repos: Repos, log: Logger): BootstrapSource {
  const file = config.domains.rdap.bootstrapFile;
  try {
    return new BootstrapSource({
      ...(file === '' ? {} : { file }),
      settings: repos.settings,
      onInvalid: (err) => log.warn({ err }, 'domains: the stored RDAP bootstrap is not valid; the shipped one serves'),
    });
  } catch (err) {
    throw asConfigError('domains.rdap.bootstrapFile', err);
  }
}
