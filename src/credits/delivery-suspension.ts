// What a balance at zero stops (issue 37, docs/API.md "Usage and credits"): with credits.atZero
// 'suspend-delivery', once credits.deliveryGraceHours have passed since an owner's balance reached zero
// (credit_accounts.depleted_at, set and cleared by the ledger entry that moves it: db/repos/credits.ts),
// the doors that serve the owner's content to the public refuse it: the CDN (their assets, signed links
// included, and their public buckets' objects) and the edge proxy (their project hostnames), with 402.
// The owner's own S3 and API access goes on, so data can be taken out; uploads stay refused by the 402
// of credits.ts.
//
// Those doors are the hot paths, so this costs them nothing per request beyond a Set lookup: each
// serving process holds the set of suspended owners, read by one query (depleted_at at or before now
// less the grace) at most once a second, and only while requests ask. A top-up (a grant, the monthly
// free credits), made by any process, clears depleted_at: delivery resumes at the next read, within a
// second. With 'refuse-uploads' (the default) there is no instance at all (`deliverySuspensions`
// returns undefined): the doors check that and nothing else.
import type { CreditsConfig } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';

/** How long a read of the suspended owners is used (on the monotonic clock). */
export const SUSPENSIONS_TTL_MS = 1000;

const HOUR_MS = 3_600_000;

/** The one line the CDN and the edge proxy answer for a suspended owner's content (402). */
export const DELIVERY_SUSPENDED_TEXT =
  "Payment Required: the credits of this content's owner have run out, so it is not served. It is served again once the owner adds credits.";

/** credits.deliveryGraceHours in milliseconds. */
export function deliveryGraceMs(config: Pick<CreditsConfig, 'deliveryGraceHours'>): number {
  return Math.round(config.deliveryGraceHours * HOUR_MS);
}

/** Whether a balance at zero suspends delivery under this configuration. */
export function suspendsDelivery(config: Pick<CreditsConfig, 'enabled' | 'atZero'>): boolean {
  return config.enabled && config.atZero === 'suspend-delivery';
}

export interface DeliverySuspensionsDeps {
  repos: Pick<Repos, 'credits'>;
  graceMs: number;
  /** The wall clock in Unix ms (depleted_at is a date). */
  now: () => number;
  /** Elapsed time in ms: how old the held read is. */
  monotonic: () => number;
  /** A read that failed (the last one held is used until the next, a second later). */
  onError?: (err: unknown) => void;
  ttlMs?: number;
}

export class DeliverySuspensions {
  private owners: ReadonlySet<string> = new Set();
  /** When the held read goes stale (monotonic ms); -Infinity before the first. */
  private freshUntil = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  private readonly ttlMs: number;

  constructor(private readonly deps: DeliverySuspensionsDeps) {
    this.ttlMs = deps.ttlMs ?? SUSPENSIONS_TTL_MS;
  }

  /** Whether `ownerId`'s delivery is suspended, by the read held now; undefined when it is stale (has() reads). */
  held(ownerId: string): boolean | undefined {
    return this.deps.monotonic() < this.freshUntil ? this.owners.has(ownerId) : undefined;
  }

  /** Whether `ownerId`'s delivery is suspended; reads the suspended owners when the held read is stale. Never rejects. */
  async has(ownerId: string): Promise<boolean> {
    const held = this.held(ownerId);
    if (held !== undefined) return held;
    await (this.loading ??= this.load().finally(() => (this.loading = undefined)));
    return this.owners.has(ownerId);
  }

  private async load(): Promise<void> {
    try {
      this.owners = new Set(await this.deps.repos.credits.depletedBy(this.deps.now() - this.deps.graceMs));
    } catch (err) {
      // The last read stands until the next try: delivery neither stops nor resumes on a failed read.
      this.deps.onError?.(err);
    }
    this.freshUntil = this.deps.monotonic() + this.ttlMs;
  }
}

/** A serving process's suspensions: undefined unless credits are on and atZero is 'suspend-delivery'. */
export function deliverySuspensions(config: CreditsConfig, deps: Omit<DeliverySuspensionsDeps, 'graceMs'>): DeliverySuspensions | undefined {
  return suspendsDelivery(config) ? new DeliverySuspensions({ ...deps, graceMs: deliveryGraceMs(config) }) : undefined;
}
