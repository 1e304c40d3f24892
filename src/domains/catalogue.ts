// The TLD catalogue: the file format (config/tlds.json, `s3edge tlds import` / `export`), seeding it into
// the database on first start, the exchange rate, and what a buyer sees of a TLD (prices in dollars
// and naira, limits, restrictions, the active promotion). Everything is read from the database on each
// request, so a CLI change (another process) is seen by the next one.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_DIR } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import type { Promotion, TldRecord } from '../db/repos/tlds.js';
import { centsToKobo, formatMinor, parseMinor, parseRate, toMajor } from './money.js';
import { bestActive } from './promotions.js';

/** One TLD in the catalogue file: prices per year as decimal strings, never floats. */
export interface CatalogueEntry {
  tld: string;
  register: string;
  renew: string;
  transfer: string;
  registerNgn?: string;
  renewNgn?: string;
  transferNgn?: string;
  minYears?: number;
  maxYears?: number;
  restrictions?: string;
  requiresLocalPresence?: boolean;
  rdapNotFoundReliable?: boolean;
  /** Place in the popular list, 1 first. */
  popular?: number;
}

export interface CatalogueFile {
  description?: string;
  version: 1;
  tlds: CatalogueEntry[];
}

export type NewTld = Omit<TldRecord, 'updatedAt'>;

/** A catalogue file that cannot be taken: the message names the entry and field. */
export class CatalogueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CatalogueError';
  }
}

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
/** A TLD as the catalogue holds it: lowercase ASCII labels (punycode for IDN), no leading dot. */
export const TLD_PATTERN = new RegExp(`^${LABEL}(?:\\.${LABEL}){0,2}$`);
const MAX_RESTRICTIONS = 500;

const SEEDED = 'domains.seeded';
const RATE = 'domains.ngnPerUsd';

function price(where: string, field: string, value: unknown, optional: boolean): number | null {
  if (value === undefined && optional) return null;
  const minor = typeof value === 'string' ? parseMinor(value) : undefined;
  if (minor === undefined) throw new CatalogueError(`${where}: ${field} must be a price like "12.99" (a string, at most two decimals)`);
  return minor;
}

function years(where: string, field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 10) throw new CatalogueError(`${where}: ${field} must be a whole number of years from 1 to 10`);
  return value as number;
}

function flag(where: string, field: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new CatalogueError(`${where}: ${field} must be true or false`);
  return value;
}

/** One entry, checked; `where` names it in errors. */
export function parseEntry(raw: unknown, where: string): NewTld {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CatalogueError(`${where}: must be an object`);
  const e = raw as Record<string, unknown>;
  const known = new Set(['tld', 'register', 'renew', 'transfer', 'registerNgn', 'renewNgn', 'transferNgn', 'minYears', 'maxYears', 'restrictions', 'requiresLocalPresence', 'rdapNotFoundReliable', 'popular']);
  const extra = Object.keys(e).find((k) => !known.has(k));
  if (extra !== undefined) throw new CatalogueError(`${where}: unknown field '${extra}'`);
  const tld = typeof e.tld === 'string' ? e.tld.trim().toLowerCase().replace(/^\./, '') : '';
  if (!TLD_PATTERN.test(tld)) throw new CatalogueError(`${where}: tld must be an extension like "com" or "co.uk" (ASCII, punycode for IDN)`);
  const at = `${where} (.${tld})`;
  const minYears = years(at, 'minYears', e.minYears, 1);
  const maxYears = years(at, 'maxYears', e.maxYears, 10);
  if (maxYears < minYears) throw new CatalogueError(`${at}: maxYears is below minYears`);
  const restrictions = e.restrictions ?? '';
  if (typeof restrictions !== 'string' || restrictions.length > MAX_RESTRICTIONS || /[\u0000-\u001f\u007f]/.test(restrictions)) {
    throw new CatalogueError(`${at}: restrictions must be one line of text of at most ${MAX_RESTRICTIONS} characters`);
  }
  const popular = e.popular;
  if (popular !== undefined && (!Number.isInteger(popular) || (popular as number) < 1 || (popular as number) > 1000)) {
    throw new CatalogueError(`${at}: popular must be a place in the popular list, 1 to 1000`);
  }
  return {
    tld,
    registerUsd: price(at, 'register', e.register, false) as number,
    renewUsd: price(at, 'renew', e.renew, false) as number,
    transferUsd: price(at, 'transfer', e.transfer, false) as number,
    registerNgn: price(at, 'registerNgn', e.registerNgn, true),
    renewNgn: price(at, 'renewNgn', e.renewNgn, true),
    transferNgn: price(at, 'transferNgn', e.transferNgn, true),
    minYears,
    maxYears,
    restrictions,
    requiresLocalPresence: flag(at, 'requiresLocalPresence', e.requiresLocalPresence),
    rdapNotFoundReliable: flag(at, 'rdapNotFoundReliable', e.rdapNotFoundReliable),
    popularRank: (popular as number | undefined) ?? null,
  };
}

/** A whole catalogue file, checked: TLDs unique, popular places unique. */
export function parseCatalogue(raw: unknown): NewTld[] {
  const doc = raw as Partial<CatalogueFile> | null;
  if (typeof doc !== 'object' || doc === null || doc.version !== 1 || !Array.isArray(doc.tlds)) {
    throw new CatalogueError('a catalogue is an object with "version": 1 and a "tlds" array');
  }
  const out = doc.tlds.map((e, i) => parseEntry(e, `tlds[${i}]`));
  const seen = new Set<string>();
  const ranks = new Set<number>();
  for (const t of out) {
    if (seen.has(t.tld)) throw new CatalogueError(`.${t.tld} appears twice`);
    seen.add(t.tld);
    if (t.popularRank !== null) {
      if (ranks.has(t.popularRank)) throw new CatalogueError(`two TLDs have popular place ${t.popularRank}`);
      ranks.add(t.popularRank);
    }
  }
  return out;
}

/** The catalogue in its file format (what `tlds export` writes and `tlds import` reads). */
export function catalogueFile(tlds: readonly TldRecord[]): CatalogueFile {
  return {
    version: 1,
    tlds: tlds.map((t) => ({
      tld: t.tld,
      register: formatMinor(t.registerUsd),
      renew: formatMinor(t.renewUsd),
      transfer: formatMinor(t.transferUsd),
      ...(t.registerNgn === null ? {} : { registerNgn: formatMinor(t.registerNgn) }),
      ...(t.renewNgn === null ? {} : { renewNgn: formatMinor(t.renewNgn) }),
      ...(t.transferNgn === null ? {} : { transferNgn: formatMinor(t.transferNgn) }),
      minYears: t.minYears,
      maxYears: t.maxYears,
      ...(t.restrictions === '' ? {} : { restrictions: t.restrictions }),
      ...(t.requiresLocalPresence ? { requiresLocalPresence: true } : {}),
      rdapNotFoundReliable: t.rdapNotFoundReliable,
      ...(t.popularRank === null ? {} : { popular: t.popularRank }),
    })),
  };
}

function readCatalogueFile(path: string): NewTld[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new CatalogueError(`${path}: ${(err as Error).message}`);
  }
  return parseCatalogue(raw);
}

/** The catalogue file the server seeds from: domains.seedFile, else the one shipped in config/. */
function seedFilePath(config: Config): string {
  return config.domains.seedFile !== '' ? config.domains.seedFile : join(CONFIG_DIR, 'tlds.json');
}

/**
 * Seeds the catalogue on the first start of a data directory (once: a catalogue the operator emptied
 * stays empty). Returns how many TLDs were seeded, 0 when it had been done.
 */
export async function seedCatalogue(repos: Repos, config: Config): Promise<number> {
  if ((await repos.settings.get(SEEDED)) !== undefined) return 0;
  const tlds = readCatalogueFile(seedFilePath(config));
  const at = new Date().toISOString();
  await repos.transact(async (r) => {
    await r.tlds.upsert(tlds);
    await r.settings.set(SEEDED, at);
  });
  return tlds.length;
}

/** Kobo per dollar: the rate set at run time (`s3edge exchange-rate set`), else domains.ngnPerUsd. */
export async function exchangeRate(repos: Pick<Repos, 'settings'>, config: Config): Promise<number> {
  const set = await repos.settings.get(RATE);
  return (set !== undefined ? parseRate(set) : undefined) ?? (parseRate(config.domains.ngnPerUsd) as number);
}

/** Sets the run-time rate (`"1600.50"`); false when it is not a positive amount with at most two decimals. */
export async function setExchangeRate(repos: Pick<Repos, 'settings'>, text: string): Promise<boolean> {
  const rate = parseRate(text);
  if (rate === undefined) return false;
  await repos.settings.set(RATE, formatMinor(rate));
  return true;
}

export interface PromotionFields {
  /** Naira (a number with two decimals), or null. */
  bonusAmount: number | null;
  bonusAmountUSD: number | null;
  /** `YYYY-MM-DD`, or null. */
  bonusEndingDate: string | null;
}

export const NO_PROMOTION: PromotionFields = { bonusAmount: null, bonusAmountUSD: null, bonusEndingDate: null };

/** SPEC.md §2.10's promotion fields of one promotion (or all null). */
export function promotionFields(p: Promotion | undefined): PromotionFields {
  if (!p) return NO_PROMOTION;
  return {
    bonusAmount: p.bonusNgn === null ? null : toMajor(p.bonusNgn),
    bonusAmountUSD: p.bonusUsd === null ? null : toMajor(p.bonusUsd),
    bonusEndingDate: p.endsOn,
  };
}

/** A price per year in both currencies: naira of its own, else from the rate. */
function bothCurrencies(usd: number, ngn: number | null, koboPerDollar: number): { dollar: number; naira: number } {
  return { dollar: toMajor(usd), naira: toMajor(ngn ?? centsToKobo(usd, koboPerDollar)) };
}

/** What a TLD costs a year, in both currencies, and what it allows: shown for a TLD and for a name under it. */
export interface YearlyPrices {
  registerDollar: number;
  registerNaira: number;
  renewDollar: number;
  renewNaira: number;
  transferDollar: number;
  transferNaira: number;
  minYears: number;
  maxYears: number;
  restrictions: { text: string; requiresLocalPresence: boolean };
}

/** A TLD's yearly prices at `koboPerDollar`; `register` replaces its registration price (a premium name's own). */
export function yearlyPrices(t: TldRecord, koboPerDollar: number, register?: { usd: number; ngn: number | null }): YearlyPrices {
  const reg = bothCurrencies(register?.usd ?? t.registerUsd, register ? register.ngn : t.registerNgn, koboPerDollar);
  const renew = bothCurrencies(t.renewUsd, t.renewNgn, koboPerDollar);
  const transfer = bothCurrencies(t.transferUsd, t.transferNgn, koboPerDollar);
  return {
    registerDollar: reg.dollar,
    registerNaira: reg.naira,
    renewDollar: renew.dollar,
    renewNaira: renew.naira,
    transferDollar: transfer.dollar,
    transferNaira: transfer.naira,
    minYears: t.minYears,
    maxYears: t.maxYears,
    restrictions: { text: t.restrictions, requiresLocalPresence: t.requiresLocalPresence },
  };
}

export interface TldView extends YearlyPrices, PromotionFields {
  /** `.co.uk` */
  tld: string;
  /** `co.uk` */
  extension: string;
  popular: boolean;
  popularRank: number | null;
}

/** What the API shows of a TLD, with the best promotion active `today` (UTC `YYYY-MM-DD`). */
export function tldView(t: TldRecord, promotions: readonly Promotion[], koboPerDollar: number, today: string): TldView {
  return {
    tld: `.${t.tld}`,
    extension: t.tld,
    ...yearlyPrices(t, koboPerDollar),
    popular: t.popularRank !== null,
    popularRank: t.popularRank,
    ...promotionFields(bestActive(promotions, today, koboPerDollar)),
  };
}
