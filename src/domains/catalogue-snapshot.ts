// The catalogue as one search reads it: TLDs, promotions, the operator's names and the exchange rate,
// loaded together and kept until another process changes the database (SQLite's data_version, checked
// on every read: a CLI change is still seen by the next request). Only admin commands write these
// tables, so a steady server reads them from memory: one pragma per request instead of a statement per
// TLD, per name and per promotion.
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import type { DomainNameRecord, Promotion, TldRecord } from '../db/repos/tlds.js';
import { exchangeRate } from './catalogue.js';

export interface Catalogue {
  /** Alphabetical. */
  tlds: readonly TldRecord[];
  byTld: ReadonlyMap<string, TldRecord>;
  /** In their order. */
  popular: readonly TldRecord[];
  promotions: ReadonlyMap<string, readonly Promotion[]>;
  names: ReadonlyMap<string, DomainNameRecord>;
  /** Kobo per dollar. */
  rate: number;
}

export class CatalogueSnapshot {
  private version: number | undefined;
  private loaded: Catalogue | undefined;

  constructor(
    private readonly repos: Repos,
    private readonly config: Config,
  ) {}

  async current(): Promise<Catalogue> {
    const version = this.repos.dataVersion();
    if (this.loaded && version === this.version) return this.loaded;
    const rate = await exchangeRate(this.repos, this.config);
    const tlds = this.repos.tlds.list();
    this.loaded = {
      tlds,
      byTld: new Map(tlds.map((t) => [t.tld, t])),
      popular: this.repos.tlds.popular(),
      promotions: this.repos.tlds.promotionsByTld(),
      names: new Map(this.repos.tlds.names().map((n) => [n.name, n])),
      rate,
    };
    this.version = version;
    return this.loaded;
  }
}
