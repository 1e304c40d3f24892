// The domain search (POST /api/v3/domains/search) and the TLD queries of the catalogue. A full name is
// looked up under its public suffix; a bare label under every popular TLD at once, all within one
// deadline. The operator's own list answers first (reserved, sold, premium names); the registry
// (RDAP, behind a cache) answers the rest. Prices come from the catalogue at request time.
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import type { DomainNameRecord, TldRecord } from '../db/repos/tlds.js';
import type { AvailabilityAnswer, AvailabilityProvider, AvailabilityStatus } from './availability/provider.js';
import { NO_PROMOTION, promotionFields, tldView, yearlyPrices, type PromotionFields, type TldView, type YearlyPrices } from './catalogue.js';
import { CatalogueSnapshot, type Catalogue } from './catalogue-snapshot.js';
import { DomainQueryError, normalizeExtension, normalizeQuery } from './normalize.js';
import { bestActive, utcDate } from './promotions.js';

export type PurchaseType = 'standard' | 'premium' | 'unavailable';

export interface DomainResult extends YearlyPrices, PromotionFields {
  /** The registrable name in ASCII (punycode for IDN). */
  domain: string;
  /** The same name in Unicode (equal to `domain` when it is ASCII). */
  domainUnicode: string;
  tld: string;
  available: boolean;
  status: AvailabilityStatus;
  purchaseType: PurchaseType;
  /** Who answered: the operator's list or the registry. */
  provider: 'local' | 'rdap';
  /** The registry's RDAP server that answered, when it did. */
  checkedBy: string | null;
  /** ISO 8601: when the answer was obtained from its source. */
  checkedAt: string;
  /** Reused from the cache. */
  cached: boolean;
  /** Why the status is unknown (timeout, rate-limited, ...); null otherwise. */
  reason: string | null;
}

export interface SearchResult {
  /** The query as normalized: a registrable name, or a bare label. */
  query: string;
  kind: 'domain' | 'label';
  results: DomainResult[];
}

export type TldMatch = 'exact' | 'label' | 'prefix';

export interface DomainSearchOptions {
  repos: Repos;
  config: Config;
  clock: () => Date;
  availability: AvailabilityProvider;
}

export class DomainSearch {
  private readonly catalogue: CatalogueSnapshot;

  constructor(private readonly o: DomainSearchOptions) {
    this.catalogue = new CatalogueSnapshot(o.repos, o.config);
  }

  private today(): string {
    return utcDate(this.o.clock());
  }

  /** Every TLD of the catalogue with its prices and active promotion. */
  async tlds(): Promise<TldView[]> {
    const c = await this.catalogue.current();
    return this.views(c, c.tlds);
  }

  /** The popular list, in its order. */
  async popular(): Promise<TldView[]> {
    const c = await this.catalogue.current();
    return this.views(c, c.popular);
  }

  /**
   * TLDs matching an extension (`io`, `.io`, `co`): the TLD itself first, then TLDs with it as a label
   * (`co` finds `co.uk`, `com.co`), then TLDs with a label starting with it (`onl` finds `online`); each
   * group in popular order, then alphabetically. Throws DomainQueryError for text that is no extension.
   */
  async searchTlds(raw: string): Promise<{ query: string; tlds: (TldView & { match: TldMatch })[] }> {
    const ext = normalizeExtension(raw);
    const rank = (t: TldRecord): TldMatch | undefined => {
      if (t.tld === ext) return 'exact';
      const labels = t.tld.split('.');
      if (ext.includes('.') ? t.tld.endsWith(`.${ext}`) || t.tld.startsWith(`${ext}.`) : labels.includes(ext)) return 'label';
      return labels.some((l) => l.startsWith(ext)) || t.tld.startsWith(ext) ? 'prefix' : undefined;
    };
    const order: Record<TldMatch, number> = { exact: 0, label: 1, prefix: 2 };
    const c = await this.catalogue.current();
    const matched = c.tlds
      .flatMap((t) => {
        const match = rank(t);
        return match ? [{ t, match }] : [];
      })
      .sort((a, b) => order[a.match] - order[b.match] || (a.t.popularRank ?? Infinity) - (b.t.popularRank ?? Infinity) || (a.t.tld < b.t.tld ? -1 : 1));
    const views = this.views(c, matched.map((m) => m.t));
    return { query: ext, tlds: views.map((v, i) => ({ ...v, match: (matched[i] as { match: TldMatch }).match })) };
  }

  private views(c: Catalogue, tlds: readonly TldRecord[]): TldView[] {
    const today = this.today();
    return tlds.map((t) => tldView(t, c.promotions.get(t.tld) ?? [], c.rate, today));
  }

  /** POST /api/v3/domains/search: rejects with DomainQueryError for a query that cannot be searched. */
  async search(raw: string): Promise<SearchResult> {
    const q = normalizeQuery(raw);
    const c = await this.catalogue.current();
    const today = this.today();
    // One deadline for the whole search, however many registries it asks.
    const signal = AbortSignal.timeout(this.o.config.domains.rdap.searchDeadlineMs);
    if (q.kind === 'domain') {
      const tld = c.byTld.get(q.suffix);
      if (!tld) throw new DomainQueryError(`We do not sell .${q.suffix} names`);
      return { query: q.registrable, kind: 'domain', results: [await this.lookup(c, today, q.registrable, q.registrableUnicode, tld, signal)] };
    }
    const results = await Promise.all(c.popular.map((tld) => this.lookup(c, today, `${q.ascii}.${tld.tld}`, `${q.unicode}.${tld.tld}`, tld, signal)));
    return { query: q.ascii, kind: 'label', results };
  }

  private async lookup(c: Catalogue, today: string, domain: string, unicode: string, tld: TldRecord, signal: AbortSignal): Promise<DomainResult> {
    const own = c.names.get(domain);
    const answer = own ? localAnswer(own, this.o.clock().getTime()) : await this.o.availability.check(domain, tld.tld, { notFoundMeansAvailable: tld.rdapNotFoundReliable, signal });
    const { rate } = c;
    const premium = own?.status === 'premium';
    const available = answer.status === 'available';
    // A premium name is sold at its own price: the TLD's promotion does not apply to it.
    const promotion = available && !premium ? promotionFields(bestActive(c.promotions.get(tld.tld) ?? [], today, rate)) : NO_PROMOTION;
    return {
      domain,
      domainUnicode: unicode,
      tld: `.${tld.tld}`,
      available,
      status: answer.status,
      purchaseType: !available ? 'unavailable' : premium ? 'premium' : 'standard',
      // A premium name is registered at its own price; renewals and transfers are the TLD's.
      ...yearlyPrices(tld, rate, premium ? { usd: own.priceUsd ?? tld.registerUsd, ngn: own.priceNgn } : undefined),
      ...promotion,
      provider: answer.source,
      checkedBy: answer.server ?? null,
      checkedAt: new Date(answer.checkedAt).toISOString(),
      cached: answer.cached,
      reason: answer.reason ?? null,
    };
  }
}

/** The operator's list: reserved names are reserved, sold ones registered, premium ones available. */
function localAnswer(own: DomainNameRecord, now: number): AvailabilityAnswer {
  const status: AvailabilityStatus = own.status === 'reserved' ? 'reserved' : own.status === 'sold' ? 'registered' : 'available';
  return { status, source: 'local', cached: false, checkedAt: now };
}
