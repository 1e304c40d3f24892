// The TLD catalogue, its promotions and the operator's own names (migration 011). Amounts are minor
// units (cents, kobo); what they mean to a buyer is src/domains/catalogue.ts's business.
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';

export interface TldRecord {
  /** ASCII, no leading dot: 'com', 'co.uk'. */
  tld: string;
  registerUsd: number;
  renewUsd: number;
  transferUsd: number;
  /** A naira price of its own (kobo); null: from the exchange rate. */
  registerNgn: number | null;
  renewNgn: number | null;
  transferNgn: number | null;
  minYears: number;
  maxYears: number;
  restrictions: string;
  requiresLocalPresence: boolean;
  rdapNotFoundReliable: boolean;
  /** 1 first; null: not in the popular list. */
  popularRank: number | null;
  updatedAt: number;
}

export interface Promotion {
  id: number;
  tld: string;
  /** Kobo. */
  bonusNgn: number | null;
  /** Cents. */
  bonusUsd: number | null;
  /** `YYYY-MM-DD`, UTC, the last day it applies. */
  endsOn: string;
  createdAt: number;
  /** Ended from the CLI before its date. */
  endedAt: number | null;
}

export type DomainNameStatus = 'reserved' | 'sold' | 'premium';

export interface DomainNameRecord {
  /** ASCII registrable name. */
  name: string;
  status: DomainNameStatus;
  /** A premium name's own yearly price (cents, and optionally kobo). */
  priceUsd: number | null;
  priceNgn: number | null;
  note: string;
  createdAt: number;
}

interface TldRow {
  tld: string;
  register_usd: number;
  renew_usd: number;
  transfer_usd: number;
  register_ngn: number | null;
  renew_ngn: number | null;
  transfer_ngn: number | null;
  min_years: number;
  max_years: number;
  restrictions: string;
  requires_local_presence: 0 | 1;
  rdap_not_found_reliable: 0 | 1;
  popular_rank: number | null;
  updated_at: number;
}

interface PromotionRow {
  id: number;
  tld: string;
  bonus_ngn: number | null;
  bonus_usd: number | null;
  ends_on: string;
  created_at: number;
  ended_at: number | null;
}

interface NameRow {
  name: string;
  status: DomainNameStatus;
  price_usd: number | null;
  price_ngn: number | null;
  note: string;
  created_at: number;
}

function toTld(r: TldRow): TldRecord {
  return {
    tld: r.tld,
    registerUsd: r.register_usd,
    renewUsd: r.renew_usd,
    transferUsd: r.transfer_usd,
    registerNgn: r.register_ngn,
    renewNgn: r.renew_ngn,
    transferNgn: r.transfer_ngn,
    minYears: r.min_years,
    maxYears: r.max_years,
    restrictions: r.restrictions,
    requiresLocalPresence: r.requires_local_presence === 1,
    rdapNotFoundReliable: r.rdap_not_found_reliable === 1,
    popularRank: r.popular_rank,
    updatedAt: r.updated_at,
  };
}

function toPromotion(r: PromotionRow): Promotion {
  return { id: r.id, tld: r.tld, bonusNgn: r.bonus_ngn, bonusUsd: r.bonus_usd, endsOn: r.ends_on, createdAt: r.created_at, endedAt: r.ended_at };
}

function toName(r: NameRow): DomainNameRecord {
  return { name: r.name, status: r.status, priceUsd: r.price_usd, priceNgn: r.price_ngn, note: r.note, createdAt: r.created_at };
}

const TLD_COLUMNS = `tld, register_usd, renew_usd, transfer_usd, register_ngn, renew_ngn, transfer_ngn, min_years, max_years,
  restrictions, requires_local_presence, rdap_not_found_reliable, popular_rank, updated_at`;

export class TldsRepo {
  private readonly allStmt: Statement<[], TldRow>;
  private readonly getStmt: Statement<[string], TldRow>;
  private readonly popularStmt: Statement<[], TldRow>;
  private readonly upsertStmt: Statement<TldRow>;
  private readonly deleteStmt: Statement<[string]>;
  private readonly countStmt: Statement<[], { n: number }>;
  private readonly clearPopularStmt: Statement<[number]>;
  private readonly setRankStmt: Statement<[number, number, string]>;
  private readonly promotionsStmt: Statement<[], PromotionRow>;
  private readonly promotionsOfStmt: Statement<[string], PromotionRow>;
  private readonly addPromotionStmt: Statement<[string, number | null, number | null, string, number]>;
  private readonly endPromotionStmt: Statement<[number, number]>;
  private readonly getPromotionStmt: Statement<[number], PromotionRow>;
  private readonly nameStmt: Statement<[string], NameRow>;
  private readonly namesStmt: Statement<[], NameRow>;
  private readonly upsertNameStmt: Statement<NameRow>;
  private readonly deleteNameStmt: Statement<[string]>;

  constructor(
    private readonly db: Db,
    private readonly clock: () => number = Date.now,
  ) {
    this.allStmt = db.prepare(`SELECT ${TLD_COLUMNS} FROM tlds ORDER BY tld`);
    this.getStmt = db.prepare(`SELECT ${TLD_COLUMNS} FROM tlds WHERE tld = ?`);
    this.popularStmt = db.prepare(`SELECT ${TLD_COLUMNS} FROM tlds WHERE popular_rank IS NOT NULL ORDER BY popular_rank, tld`);
    this.upsertStmt = db.prepare(`INSERT INTO tlds (${TLD_COLUMNS}) VALUES (@tld, @register_usd, @renew_usd, @transfer_usd,
        @register_ngn, @renew_ngn, @transfer_ngn, @min_years, @max_years, @restrictions, @requires_local_presence,
        @rdap_not_found_reliable, @popular_rank, @updated_at)
      ON CONFLICT (tld) DO UPDATE SET register_usd = excluded.register_usd, renew_usd = excluded.renew_usd,
        transfer_usd = excluded.transfer_usd, register_ngn = excluded.register_ngn, renew_ngn = excluded.renew_ngn,
        transfer_ngn = excluded.transfer_ngn, min_years = excluded.min_years, max_years = excluded.max_years,
        restrictions = excluded.restrictions, requires_local_presence = excluded.requires_local_presence,
        rdap_not_found_reliable = excluded.rdap_not_found_reliable, popular_rank = excluded.popular_rank,
        updated_at = excluded.updated_at`);
    this.deleteStmt = db.prepare('DELETE FROM tlds WHERE tld = ?');
    this.countStmt = db.prepare('SELECT count(*) AS n FROM tlds');
    this.clearPopularStmt = db.prepare('UPDATE tlds SET popular_rank = NULL, updated_at = ? WHERE popular_rank IS NOT NULL');
    this.setRankStmt = db.prepare('UPDATE tlds SET popular_rank = ?, updated_at = ? WHERE tld = ?');
    this.promotionsStmt = db.prepare('SELECT * FROM tld_promotions ORDER BY tld, id');
    this.promotionsOfStmt = db.prepare('SELECT * FROM tld_promotions WHERE tld = ? ORDER BY id');
    this.addPromotionStmt = db.prepare('INSERT INTO tld_promotions (tld, bonus_ngn, bonus_usd, ends_on, created_at) VALUES (?, ?, ?, ?, ?)');
    this.endPromotionStmt = db.prepare('UPDATE tld_promotions SET ended_at = ? WHERE id = ? AND ended_at IS NULL');
    this.getPromotionStmt = db.prepare('SELECT * FROM tld_promotions WHERE id = ?');
    this.nameStmt = db.prepare('SELECT * FROM domain_names WHERE name = ?');
    this.namesStmt = db.prepare('SELECT * FROM domain_names ORDER BY name');
    this.upsertNameStmt = db.prepare(`INSERT INTO domain_names (name, status, price_usd, price_ngn, note, created_at)
      VALUES (@name, @status, @price_usd, @price_ngn, @note, @created_at)
      ON CONFLICT (name) DO UPDATE SET status = excluded.status, price_usd = excluded.price_usd,
        price_ngn = excluded.price_ngn, note = excluded.note`);
    this.deleteNameStmt = db.prepare('DELETE FROM domain_names WHERE name = ?');
  }

  list(): TldRecord[] {
    return this.allStmt.all().map(toTld);
  }

  get(tld: string): TldRecord | undefined {
    const r = this.getStmt.get(tld);
    return r && toTld(r);
  }

  /** The popular list, in its order. */
  popular(): TldRecord[] {
    return this.popularStmt.all().map(toTld);
  }

  count(): number {
    return this.countStmt.get()?.n ?? 0;
  }

  /** Inserts or replaces every TLD given, in one transaction; updatedAt is now. */
  upsert(tlds: readonly Omit<TldRecord, 'updatedAt'>[]): void {
    const now = this.clock();
    this.db.transaction(() => {
      for (const t of tlds) {
        this.upsertStmt.run({
          tld: t.tld,
          register_usd: t.registerUsd,
          renew_usd: t.renewUsd,
          transfer_usd: t.transferUsd,
          register_ngn: t.registerNgn,
          renew_ngn: t.renewNgn,
          transfer_ngn: t.transferNgn,
          min_years: t.minYears,
          max_years: t.maxYears,
          restrictions: t.restrictions,
          requires_local_presence: t.requiresLocalPresence ? 1 : 0,
          rdap_not_found_reliable: t.rdapNotFoundReliable ? 1 : 0,
          popular_rank: t.popularRank,
          updated_at: now,
        });
      }
    }).immediate();
  }

  /** Removes a TLD and its promotions; false when there was none. */
  delete(tld: string): boolean {
    return this.deleteStmt.run(tld).changes > 0;
  }

  /** Makes `tlds` the popular list, in that order (every other TLD leaves it); false if one is not in the catalogue. */
  setPopular(tlds: readonly string[]): boolean {
    const now = this.clock();
    return this.db.transaction(() => {
      this.clearPopularStmt.run(now);
      for (const [i, tld] of tlds.entries()) {
        if (this.setRankStmt.run(i + 1, now, tld).changes === 0) throw new UnknownTld(tld);
      }
      return true;
    }).immediate();
  }

  promotions(tld?: string): Promotion[] {
    return (tld === undefined ? this.promotionsStmt.all() : this.promotionsOfStmt.all(tld)).map(toPromotion);
  }

  /** Every promotion, grouped by TLD (for a whole-catalogue answer: one statement). */
  promotionsByTld(): Map<string, Promotion[]> {
    const out = new Map<string, Promotion[]>();
    for (const p of this.promotions()) {
      const list = out.get(p.tld);
      if (list) list.push(p);
      else out.set(p.tld, [p]);
    }
    return out;
  }

  addPromotion(p: { tld: string; bonusNgn: number | null; bonusUsd: number | null; endsOn: string }): Promotion {
    const id = Number(this.addPromotionStmt.run(p.tld, p.bonusNgn, p.bonusUsd, p.endsOn, this.clock()).lastInsertRowid);
    return this.getPromotion(id) as Promotion;
  }

  getPromotion(id: number): Promotion | undefined {
    const r = this.getPromotionStmt.get(id);
    return r && toPromotion(r);
  }

  /** Ends a promotion now; false when there is none with that id still running. */
  endPromotion(id: number): boolean {
    return this.endPromotionStmt.run(this.clock(), id).changes > 0;
  }

  name(name: string): DomainNameRecord | undefined {
    const r = this.nameStmt.get(name);
    return r && toName(r);
  }

  names(): DomainNameRecord[] {
    return this.namesStmt.all().map(toName);
  }

  putName(n: Omit<DomainNameRecord, 'createdAt'>): DomainNameRecord {
    this.upsertNameStmt.run({ name: n.name, status: n.status, price_usd: n.priceUsd, price_ngn: n.priceNgn, note: n.note, created_at: this.clock() });
    return this.name(n.name) as DomainNameRecord;
  }

  deleteName(name: string): boolean {
    return this.deleteNameStmt.run(name).changes > 0;
  }
}

/** setPopular named a TLD the catalogue does not have. */
export class UnknownTld extends Error {
  constructor(readonly tld: string) {
    super(`no TLD '.${tld}' in the catalogue`);
    this.name = 'UnknownTld';
  }
}
