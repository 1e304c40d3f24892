// Availability from the registry: `GET <base>domain/<name>` (RFC 9082 §3.1.3) on the RDAP server the
// bootstrap names for the TLD, never on one a user could name. Answers are cached (registered and
// not-found for cacheSeconds, failures for errorCacheSeconds) and concurrent lookups of one name share
// one request; a server that keeps failing is skipped for a while (circuit breaker per origin). Every
// registry failure is an `unknown` answer, quickly: a search never waits past the caller's deadline.
import { LRUCache } from 'lru-cache';
import type { DomainsRdapConfig } from '../../config/schema.js';
import { CircuitBreaker } from '../../net/circuit-breaker.js';
import { OutboundClient } from '../../net/outbound-client.js';
import type { Bootstrap } from './bootstrap.js';
import type { AvailabilityAnswer, AvailabilityProvider, CheckOptions } from './provider.js';
import { interpretAnswer, interpretFailure, type RdapOutcome } from './rdap-answer.js';

export type RdapConfig = Pick<
  DomainsRdapConfig,
  'timeoutMs' | 'cacheSeconds' | 'errorCacheSeconds' | 'breakerFailures' | 'breakerCooldownSeconds' | 'maxAnswerBytes'
>;

/** A registry request that failed, for the log. */
export interface RdapFailure {
  server: string;
  domain: string;
  reason: string;
  detail?: string;
}

export interface RdapProviderOptions {
  bootstrap: { current(): Promise<Bootstrap> };
  /** The outbound client (address policy, caps); see createRdapClient. */
  client: OutboundClient;
  config: RdapConfig;
  /** Unix milliseconds for checkedAt (a date users see); default Date.now. */
  now?: () => number;
  /** A monotonic clock in ms for the cache's TTLs and the breaker's cooldown; default performance.now. */
  elapsed?: () => number;
  /** Names whose answers are held, at most. */
  maxEntries?: number;
  onFailure?: (failure: RdapFailure) => void;
}

interface Lookup {
  domain: string;
  url: string;
  server: string;
}

interface Entry {
  outcome: RdapOutcome;
  server: string;
  checkedAt: number;
}

const ABORTED = Symbol('aborted');
// A registrable name in ASCII: LDH labels (xn-- A-labels included), at least two of them.
const NAME = /^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$/;

/** The outbound client the provider expects, from the domains.rdap settings. */
export function createRdapClient(config: Pick<DomainsRdapConfig, 'timeoutMs' | 'maxAnswerBytes' | 'allowPrivateAddresses'>): OutboundClient {
  return new OutboundClient({
    timeoutMs: config.timeoutMs,
    maxAnswerBytes: config.maxAnswerBytes,
    allowPrivateAddresses: config.allowPrivateAddresses,
    userAgent: 's3edge-rdap',
  });
}

function waitOrAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    void work.then((value) => {
      signal.removeEventListener('abort', onAbort);
      resolve(value);
    });
  });
}

export class RdapProvider implements AvailabilityProvider {
  private readonly now: () => number;
  private readonly breaker: CircuitBreaker;
  private readonly cache: LRUCache<string, Entry, Lookup>;

  constructor(private readonly opts: RdapProviderOptions) {
    this.now = opts.now ?? Date.now;
    // Elapsed time on a monotonic clock: a wall-clock step back would keep answers (and an open breaker) an hour longer.
    const elapsed = opts.elapsed ?? (() => performance.now());
    this.breaker = new CircuitBreaker({
      failures: opts.config.breakerFailures,
      cooldownMs: opts.config.breakerCooldownSeconds * 1000,
      now: elapsed,
    });
    this.cache = new LRUCache<string, Entry, Lookup>({
      max: opts.maxEntries ?? 10_000,
      // Every entry gets its TTL in fetchMethod; this default is never used.
      ttl: 1000,
      ttlAutopurge: false,
      // Every read checks the clock, so the TTLs hold to the millisecond (and to an injected clock).
      ttlResolution: 0,
      perf: { now: elapsed },
      fetchMethod: (_key, _stale, { context, options }) => this.ask(context, options),
    });
  }

  async check(domain: string, tld: string, opts: CheckOptions): Promise<AvailabilityAnswer> {
    const name = domain.toLowerCase().replace(/\.$/, '');
    const suffix = tld.toLowerCase().replace(/^\./, '');
    // Normalisation happens before (normalize.ts); anything else here is a caller's bug, not a registry failure.
    if (!NAME.test(name) || !name.endsWith(`.${suffix}`)) throw new RangeError(`not a registrable ASCII name under .${suffix}: ${domain}`);
    const base = (await this.opts.bootstrap.current()).serversFor(suffix)[0];
    if (!base) return { status: 'unknown', source: 'rdap', cached: false, checkedAt: this.now(), reason: 'no-rdap-server' };
    const url = `${base}domain/${name}`;
    const server = new URL(base).origin;

    const hit = this.cache.get(url);
    if (hit) return this.answer(hit, opts, true);
    if (opts.signal?.aborted) return this.unknown(server, 'timeout');
    if (!this.breaker.allow(server)) return this.unknown(server, 'circuit-open');

    // Shared by everyone asking for this name until it settles; the caller's signal only stops the waiting.
    const status: LRUCache.Status<string, Entry, Lookup> = {};
    const shared = this.cache.fetch(url, { context: { domain: name, url, server }, status }).catch(() => undefined);
    const entry = opts.signal ? await waitOrAbort(shared, opts.signal) : await shared;
    if (entry === ABORTED) return this.unknown(server, 'timeout');
    if (!entry) return this.unknown(server, 'server-error');
    return this.answer(entry, opts, status.fetch === 'hit');
  }

  private async ask(lookup: Lookup, options: LRUCache.FetcherFetchOptions<string, Entry, Lookup>): Promise<Entry> {
    const { config } = this.opts;
    let outcome: RdapOutcome;
    let detail: string | undefined;
    try {
      const res = await this.opts.client.get(lookup.url, {
        headers: { accept: 'application/rdap+json' },
        timeoutMs: config.timeoutMs,
        maxAnswerBytes: config.maxAnswerBytes,
        maxRedirects: 2,
      });
      outcome = interpretAnswer(res.status, res.body, lookup.domain);
      if (outcome.kind === 'unknown') detail = `HTTP ${res.status}`;
    } catch (err) {
      outcome = { kind: 'unknown', reason: interpretFailure(err) };
      detail = err instanceof Error ? err.message : String(err);
    }
    if (outcome.kind === 'unknown') {
      this.breaker.failure(lookup.server);
      this.opts.onFailure?.({ server: lookup.server, domain: lookup.domain, reason: outcome.reason, ...(detail ? { detail } : {}) });
    } else {
      this.breaker.success(lookup.server);
    }
    const seconds = outcome.kind === 'unknown' ? config.errorCacheSeconds : config.cacheSeconds;
    // lru-cache reads a TTL of 0 as "never expires": 0 seconds becomes one millisecond.
    options.ttl = Math.max(1, seconds * 1000);
    return { outcome, server: lookup.server, checkedAt: this.now() };
  }

  private answer(entry: Entry, opts: CheckOptions, cached: boolean): AvailabilityAnswer {
    const base = { source: 'rdap' as const, server: entry.server, cached, checkedAt: entry.checkedAt };
    switch (entry.outcome.kind) {
      case 'registered':
        return { ...base, status: 'registered' };
      case 'not-found':
        // Some registries answer 404 for names they hold but will not show: only trusted TLDs read it as free.
        return opts.notFoundMeansAvailable ? { ...base, status: 'available' } : { ...base, status: 'unknown', reason: 'not-found-unreliable' };
      case 'unknown':
        // Nothing was reached: no server checked it (checkedBy null), so the answer does not read as the registry's.
        if (entry.outcome.reason === 'unreachable') return { source: 'rdap', cached, checkedAt: entry.checkedAt, status: 'unknown', reason: 'unreachable' };
        return { ...base, status: 'unknown', reason: entry.outcome.reason };
    }
  }

  private unknown(server: string, reason: string): AvailabilityAnswer {
    return { status: 'unknown', source: 'rdap', server, cached: false, checkedAt: this.now(), reason };
  }
}
