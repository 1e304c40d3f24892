// The TLD catalogue, its promotions and the operator's own names (migration 011). Amounts are minor
// units (cents, kobo); what they mean to a buyer is src/domains/catalogue.ts's business.
import type { SqlExecutor } from '../store/types.js';

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

const ALL = `SELECT ${TLD_COLUMNS} FROM tlds ORDER BY tld`;
const GET = `SELECT ${TLD_COLUMNS} FROM tlds WHERE tld = ?`;
const POPULAR = `SELECT ${TLD_COLUMNS} FROM tlds WHERE popular_rank IS NOT NULL ORDER BY popular_rank, tld`;
const UPSERT = `INSERT INTO tlds (${TLD_COLUMNS}) VALUES (@tld, @register_usd, @renew_usd, @transfer_usd,
    @register_ngn, @renew_ngn, @transfer_ngn, @min_years, @max_years, @restrictions, @requires_local_presence,
    @rdap_not_found_reliable, @popular_rank, @updated_at)
  ON CONFLICT (tld) DO UPDATE SET register_usd = excluded.register_usd, renew_usd = excluded.renew_usd,
    transfer_usd = excluded.transfer_usd, register_ngn = excluded.register_ngn, renew_ngn = excluded.renew_ngn,
    transfer_ngn = excluded.transfer_ngn, min_years = excluded.min_years, max_years = excluded.max_years,
    restrictions = excluded.restrictions, requires_local_presence = excluded.requires_local_presence,
    rdap_not_found_reliable = excluded.rdap_not_found_reliable, popular_rank = excluded.popular_rank,
    updated_at = excluded.updated_at`;
const DELETE = 'DELETE FROM tlds WHERE tld = ?';
const COUNT = 'SELECT count(*) AS n FROM tlds';
const CLEAR_POPULAR = 'UPDATE tlds SET popular_rank = NULL, updated_at = ? WHERE popular_rank IS NOT NULL';
const SET_RANK = 'UPDATE tlds SET popular_rank = ?, updated_at = ? WHERE tld = ?';
const PROMOTION_COLUMNS = 'id, tld, bonus_ngn, bonus_usd, ends_on, created_at, ended_at';
const PROMOTIONS = `SELECT ${PROMOTION_COLUMNS} FROM tld_promotions ORDER BY tld, id`;
const PROMOTIONS_OF = `SELECT ${PROMOTION_COLUMNS} FROM tld_promotions WHERE tld = ? ORDER BY id`;
const ADD_PROMOTION = `INSERT INTO tld_promotions (tld, bonus_ngn, bonus_usd, ends_on, created_at) VALUES (?, ?, ?, ?, ?)
  RETURNING ${PROMOTION_COLUMNS}`;
const END_PROMOTION = 'UPDATE tld_promotions SET ended_at = ? WHERE id = ? AND ended_at IS NULL';
const GET_PROMOTION = `SELECT ${PROMOTION_COLUMNS} FROM tld_promotions WHERE id = ?`;
const NAME_COLUMNS = 'name, status, price_usd, price_ngn, note, created_at';
const NAME = `SELECT ${NAME_COLUMNS} FROM domain_names WHERE name = ?`;
const NAMES = `SELECT ${NAME_COLUMNS} FROM domain_names ORDER BY name`;
const PUT_NAME = `INSERT INTO domain_names (${NAME_COLUMNS}) VALUES (@name, @status, @price_usd, @price_ngn, @note, @created_at)
  ON CONFLICT (name) DO UPDATE SET status = excluded.status, price_usd = excluded.price_usd,
    price_ngn = excluded.price_ngn, note = excluded.note
  RETURNING ${NAME_COLUMNS}`;
const DELETE_NAME = 'DELETE FROM domain_names WHERE name = ?';

export class TldsRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  async list(): Promise<TldRecord[]> {
    return (await this.db.all<TldRow>(ALL)).map(toTld);
  }

  async get(tld: string): Promise<TldRecord | undefined> {
    const r = await this.db.get<TldRow>(GET, [tld]);
    return r && toTld(r);
  }

  /** The popular list, in its order. */
  async popular(): Promise<TldRecord[]> {
    return (await this.db.all<TldRow>(POPULAR)).map(toTld);
  }

  async count(): Promise<number> {
    return (await this.db.get<{ n: number }>(COUNT))?.n ?? 0;
  }

  /** Inserts or replaces every TLD given, in one transaction; updatedAt is now. */
  async upsert(tlds: readonly Omit<TldRecord, 'updatedAt'>[]): Promise<void> {
    const now = this.clock();
    await this.db.transaction(async (tx) => {
      for (const t of tlds) {
        await tx.run(UPSERT, {
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
    });
  }

  /** Removes a TLD and its promotions; false when there was none. */
  async delete(tld: string): Promise<boolean> {
    return (await this.db.run(DELETE, [tld])).changes > 0;
  }

  /** Makes `tlds` the popular list, in that order (every other TLD leaves it); UnknownTld (nothing changed) if one is not in the catalogue. */
  async setPopular(tlds: readonly string[]): Promise<boolean> {
    const now = this.clock();
    return this.db.transaction(async (tx) => {
      await tx.run(CLEAR_POPULAR, [now]);
      for (const [i, tld] of tlds.entries()) {
        if ((await tx.run(SET_RANK, [i + 1, now, tld])).changes === 0) throw new UnknownTld(tld);
      }
      return true;
    });
  }

  async promotions(tld?: string): Promise<Promotion[]> {
    const rows = tld === undefined ? await this.db.all<PromotionRow>(PROMOTIONS) : await this.db.all<PromotionRow>(PROMOTIONS_OF, [tld]);
    return rows.map(toPromotion);
  }

  /** Every promotion, grouped by TLD (for a whole-catalogue answer: one statement). */
  async promotionsByTld(): Promise<Map<string, Promotion[]>> {
    const out = new Map<string, Promotion[]>();
    for (const p of await this.promotions()) {
      const list = out.get(p.tld);
      if (list) list.push(p);
      else out.set(p.tld, [p]);
    }
    return out;
  }

  async addPromotion(p: { tld: string; bonusNgn: number | null; bonusUsd: number | null; endsOn: string }): Promise<Promotion> {
    const r = await this.db.get<PromotionRow>(ADD_PROMOTION, [p.tld, p.bonusNgn, p.bonusUsd, p.endsOn, this.clock()]);
    return toPromotion(r as PromotionRow);
  }

  async getPromotion(id: number): Promise<Promotion | undefined> {
    const r = await this.db.get<PromotionRow>(GET_PROMOTION, [id]);
    return r && toPromotion(r);
  }

  /** Ends a promotion now; false when there is none with that id still running. */
  async endPromotion(id: number): Promise<boolean> {
    return (await this.db.run(END_PROMOTION, [this.clock(), id])).changes > 0;
  }

  async name(name: string): Promise<DomainNameRecord | undefined> {
    const r = await this.db.get<NameRow>(NAME, [name]);
    return r && toName(r);
  }

  async names(): Promise<DomainNameRecord[]> {
    return (await this.db.all<NameRow>(NAMES)).map(toName);
  }

  async putName(n: Omit<DomainNameRecord, 'createdAt'>): Promise<DomainNameRecord> {
    const r = await this.db.get<NameRow>(PUT_NAME, { name: n.name, status: n.status, price_usd: n.priceUsd, price_ngn: n.priceNgn, note: n.note, created_at: this.clock() });
    return toName(r as NameRow);
  }

  async deleteName(name: string): Promise<boolean> {
    return (await this.db.run(DELETE_NAME, [name])).changes > 0;
  }
}

/** setPopular named a TLD the catalogue does not have. */
export class UnknownTld extends Error {
  constructor(readonly tld: string) {
    super(`no TLD '.${tld}' in the catalogue`);
    this.name = 'UnknownTld';
  }
}
