// The catalogue as one search reads it: TLDs, promotions, the operator's names and the exchange rate,
// loaded together and kept until another process changes the database (the store's change version,
// checked on every read: a CLI change is still seen by the next request). Only admin commands write these
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
  /** The reload in progress: one at a time. */
  private reloading: Promise<unknown> | undefined;

  constructor(
    private readonly repos: Repos,
    private readonly config: Config,
  ) {}

  /** The catalogue: from memory while the store's change version holds still, else reloaded. */
  async current(): Promise<Catalogue> {
    if (this.loaded && this.repos.dataVersion() === this.version) return this.loaded;
    while (this.reloading !== undefined) await this.reloading.catch(() => undefined);
    if (this.loaded && this.repos.dataVersion() === this.version) return this.loaded;
    const reload = this.load();
    this.reloading = reload;
    try {
      return await reload;
    } finally {
      this.reloading = undefined;
    }
  }

  private async load(): Promise<Catalogue> {
    // The version first: a change committed while loading moves it again, so the next read reloads.
    const version = this.repos.dataVersion();
    const tlds = await this.repos.tlds.list();
    const loaded: Catalogue = {
      tlds,
      byTld: new Map(tlds.map((t) => [t.tld, t])),
      popular: await this.repos.tlds.popular(),
      promotions: await this.repos.tlds.promotionsByTld(),
      names: new Map((await this.repos.tlds.names()).map((n) => [n.name, n])),
      rate: await exchangeRate(this.repos, this.config),
    };
    this.loaded = loaded;
    this.version = version;
    return loaded;
  }
}
