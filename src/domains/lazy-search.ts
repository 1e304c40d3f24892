// The domain search (domains/search.ts, over RDAP: domains/availability/rdap.ts) made on its first use:
// only the management API's domain routes use it, and its code (the public suffix list, the RDAP
// client's HTTP stack) is not what a start should wait for. The RDAP bootstrap source is the caller's,
// read at start (a bad domains.rdap.bootstrapFile still fails the start).
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import type { OutboundClient } from '../net/outbound-client.js';
import type { BootstrapSource } from './availability/bootstrap-source.js';
import type { DomainSearch } from './search.js';

export interface LazyDomainSearchDeps {
  repos: Repos;
  config: Config;
  clock: () => Date;
  /** Monotonic ms for the RDAP cache's TTLs and breaker; default performance.now. */
  monotonic?: () => number;
  bootstrap: BootstrapSource;
  log: Pick<Logger, 'debug'>;
}

export interface LazyDomainSearch {
  /** The search, made by the first call (every later call gets the same one). */
  get(): Promise<DomainSearch>;
  /** Closes the RDAP client, if the search was made. */
  close(): Promise<void>;
}

export function lazyDomainSearch(deps: LazyDomainSearchDeps): LazyDomainSearch {
  let made: Promise<{ search: DomainSearch; client: OutboundClient }> | undefined;
  const make = async (): Promise<{ search: DomainSearch; client: OutboundClient }> => {
    const [{ DomainSearch }, { createRdapClient, RdapProvider }] = await Promise.all([import('./search.js'), import('./availability/rdap.js')]);
    const { config, clock, log } = deps;
    // Registry lookups go out through this client only: the address policy, timeouts, answer cap (src/net/).
    const client = createRdapClient(config.domains.rdap);
    const search = new DomainSearch({
      repos: deps.repos,
      config,
      clock,
      availability: new RdapProvider({
        bootstrap: deps.bootstrap,
        client,
        config: config.domains.rdap,
        now: () => clock().getTime(),
        ...(deps.monotonic ? { elapsed: deps.monotonic } : {}),
        onFailure: (failure) => log.debug({ ...failure }, 'domains: an RDAP lookup failed'),
      }),
    });
    return { search, client };
  };
  return {
    get: async () => (await (made ??= make())).search,
    async close() {
      const m = await made?.catch(() => undefined);
      await m?.client.close();
    },
  };
}
