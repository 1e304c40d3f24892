// Where the domain search learns whether a name can be registered: the operator's own list first
// (reserved, sold and premium names, local.ts), then the registry (RDAP, rdap.ts), behind a cache.

export type AvailabilityStatus = 'available' | 'registered' | 'reserved' | 'unknown';

export interface AvailabilityAnswer {
  status: AvailabilityStatus;
  /** Who answered: the operator's list, or the registry's RDAP server. */
  source: 'local' | 'rdap';
  /** The RDAP server's origin (`https://rdap.example`) when source is rdap and one was asked. */
  server?: string;
  /** Reused from the cache rather than asked now. */
  cached: boolean;
  /** When the source gave this answer (unix ms). */
  checkedAt: number;
  /** Why the status is unknown: timeout, rate-limited, server-error, bad-answer, address-refused, unreachable, no-rdap-server, circuit-open, not-found-unreliable. */
  reason?: string;
}

export interface CheckOptions {
  /** The registry's 404 means the name is free (known for this TLD); otherwise a 404 is `unknown`. */
  notFoundMeansAvailable: boolean;
  signal?: AbortSignal;
}

export interface AvailabilityProvider {
  /**
   * Whether `domain` (the registrable name in ASCII, `example.co.uk`) can be registered under `tld`
   * (its public suffix as sold, `co.uk`). Never rejects for the registry's failures: those are `unknown`.
   */
  check(domain: string, tld: string, opts: CheckOptions): Promise<AvailabilityAnswer>;
}
