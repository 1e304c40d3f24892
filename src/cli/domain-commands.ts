// Admin commands of the domain reseller (docs/API.md "Domains"): the TLD catalogue and its prices, the
// popular list, promotions, the exchange rate, the operator's own names and the RDAP bootstrap. They
// write the database the server reads on every request, so a change is seen by the next one.
import { readFileSync, writeFileSync } from 'node:fs';
import type { Repos } from '../db/repos/index.js';
import { UnknownTld, type DomainNameStatus, type Promotion, type TldRecord } from '../db/repos/tlds.js';
import {
  catalogueFile, CatalogueError, exchangeRate, parseCatalogue, parseEntry, seedCatalogue, setExchangeRate, TLD_PATTERN,
} from '../domains/catalogue.js';
import { centsToKobo, formatMinor, parseMinor } from '../domains/money.js';
import { DomainQueryError, normalizeQuery } from '../domains/normalize.js';
import { bestActive, isActive, utcDate } from '../domains/promotions.js';
import type { Config } from '../config/schema.js';
import { Bootstrap, BootstrapError } from '../domains/availability/bootstrap.js';
import { BOOTSTRAP_SETTING, readBootstrapFile, refreshBootstrap, SHIPPED_BOOTSTRAP_FILE } from '../domains/availability/bootstrap-source.js';
import { createRdapClient } from '../domains/availability/rdap.js';
import { OutboundError } from '../net/outbound-client.js';
import { AdminError, iso, type Command, type RunContext } from './command.js';

/** The flags these commands take (all valued), with the placeholder their synopsis shows. */
export const DOMAIN_FLAGS: Readonly<Record<string, string>> = {
  register: 'USD',
  renew: 'USD',
  transfer: 'USD',
  'register-ngn': 'NGN',
  'renew-ngn': 'NGN',
  'transfer-ngn': 'NGN',
  'min-years': 'N',
  'max-years': 'N',
  restrictions: 'TEXT',
  'local-presence': 'yes|no',
  'rdap-404': 'reliable|unreliable',
  'bonus-ngn': 'NGN',
  'bonus-usd': 'USD',
  ends: 'YYYY-MM-DD',
  tld: 'TLD',
  status: 'reserved|sold|premium',
  price: 'USD',
  'price-ngn': 'NGN',
  note: 'TEXT',
  out: 'FILE',
  url: 'URL',
};

export const DOMAIN_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  tlds: { section: 'Domains', summary: 'the TLD catalogue: prices (USD, optional NGN), limits, restrictions, the popular list' },
  promotions: { section: 'Domains', summary: 'promotions on a TLD: a naira and/or dollar bonus until a date' },
  'exchange-rate': { section: 'Domains', summary: 'naira per US dollar for prices without a naira price of their own' },
  'domain-names': { section: 'Domains', summary: 'names the operator reserved, sold or prices as premium' },
  'rdap-bootstrap': { section: 'Domains', summary: "IANA's list of registry RDAP servers the domain search asks" },
};

/** The catalogue as the server seeds it: a command on a fresh data directory sees the same TLDs. */
async function catalogue({ repos, config }: Pick<RunContext, 'repos' | 'config'>): Promise<Repos> {
  try {
    await seedCatalogue(repos, config);
  } catch (err) {
    if (err instanceof CatalogueError) throw new AdminError('InvalidCatalogue', err.message);
    throw err;
  }
  return repos;
}

function tldArg(raw: string | undefined): string {
  const tld = (raw ?? '').trim().toLowerCase().replace(/^\./, '');
  if (!TLD_PATTERN.test(tld)) throw new AdminError('InvalidTld', `'${raw ?? ''}' is not a TLD like com or co.uk (ASCII, punycode for IDN)`);
  return tld;
}

async function requireTld(repos: Repos, raw: string | undefined): Promise<TldRecord> {
  const tld = tldArg(raw);
  const found = await repos.tlds.get(tld);
  if (!found) throw new AdminError('NoSuchTld', `no TLD '.${tld}' in the catalogue (see s3edge tlds list)`);
  return found;
}

function money(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const minor = parseMinor(raw);
  if (minor === undefined) throw new AdminError('InvalidPrice', `--${flag} must be an amount like 12.99 (at most two decimals; got '${raw}')`);
  return minor;
}

function yesNo(flag: string, raw: string | undefined, yes: string, no: string): boolean | undefined {
  if (raw === undefined) return undefined;
  if (raw === yes) return true;
  if (raw === no) return false;
  throw new AdminError('InvalidArgument', `--${flag} must be '${yes}' or '${no}' (got '${raw}')`);
}

/** A TLD as the CLI shows it: exact decimal strings, naira with where they come from. */
function tldRow(t: TldRecord, promotions: readonly Promotion[], rate: number, today: string): Record<string, unknown> {
  const ngn = (own: number | null, usd: number): string => (own === null ? `${formatMinor(centsToKobo(usd, rate))} (rate)` : formatMinor(own));
  const promo = bestActive(promotions, today, rate);
  return {
    tld: `.${t.tld}`,
    register: formatMinor(t.registerUsd),
    renew: formatMinor(t.renewUsd),
    transfer: formatMinor(t.transferUsd),
    registerNgn: ngn(t.registerNgn, t.registerUsd),
    renewNgn: ngn(t.renewNgn, t.renewUsd),
    transferNgn: ngn(t.transferNgn, t.transferUsd),
    years: `${t.minYears}-${t.maxYears}`,
    localPresence: t.requiresLocalPresence,
    rdap404: t.rdapNotFoundReliable ? 'reliable' : 'unreliable',
    popular: t.popularRank ?? '',
    promotion: promo ? promotionText(promo) : '',
    restrictions: t.restrictions,
  };
}

function promotionText(p: Promotion): string {
  const parts = [p.bonusNgn === null ? '' : `NGN ${formatMinor(p.bonusNgn)}`, p.bonusUsd === null ? '' : `USD ${formatMinor(p.bonusUsd)}`].filter((x) => x !== '');
  return `${parts.join(' + ')} until ${p.endsOn}`;
}

function promotionRow(p: Promotion, today: string): Record<string, unknown> {
  return {
    id: p.id,
    tld: `.${p.tld}`,
    bonusNgn: p.bonusNgn === null ? '' : formatMinor(p.bonusNgn),
    bonusUsd: p.bonusUsd === null ? '' : formatMinor(p.bonusUsd),
    endsOn: p.endsOn,
    state: p.endedAt !== null ? 'ended' : isActive(p, today) ? 'active' : 'expired',
    createdAt: iso(p.createdAt),
  };
}

/** A real calendar date `YYYY-MM-DD`. */
function dateArg(raw: string | undefined): string {
  const v = raw ?? '';
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`)) || utcDate(new Date(`${v}T00:00:00Z`)) !== v) {
    throw new AdminError('InvalidDate', `--ends must be a date like 2026-12-31 (got '${v}')`);
  }
  return v;
}

function today(): string {
  return utcDate(new Date());
}

async function setTld({ repos, config, args, flags }: RunContext): Promise<Record<string, unknown>> {
  const db = await catalogue({ repos, config });
  const tld = tldArg(args.TLD);
  const current = await db.tlds.get(tld);
  const pick = (flag: string, fallback: number | null | undefined): number | null | undefined => {
    const v = money(flag, flags[flag]);
    return v === undefined ? fallback : v;
  };
  if (!current && (flags.register === undefined || flags.renew === undefined || flags.transfer === undefined)) {
    throw new AdminError('MissingPrice', `.${tld} is new: give --register, --renew and --transfer (US dollars a year)`);
  }
  const minYears = flags['min-years'] ?? current?.minYears;
  const maxYears = flags['max-years'] ?? current?.maxYears;
  let entry;
  try {
    // One validation for the file and the CLI: the entry as the catalogue file would carry it.
    entry = parseEntry(
      {
        tld,
        register: formatMinor(pick('register', current?.registerUsd) as number),
        renew: formatMinor(pick('renew', current?.renewUsd) as number),
        transfer: formatMinor(pick('transfer', current?.transferUsd) as number),
        ...optionalNgn('registerNgn', pick('register-ngn', current?.registerNgn)),
        ...optionalNgn('renewNgn', pick('renew-ngn', current?.renewNgn)),
        ...optionalNgn('transferNgn', pick('transfer-ngn', current?.transferNgn)),
        ...(minYears === undefined ? {} : { minYears: Number(minYears) }),
        ...(maxYears === undefined ? {} : { maxYears: Number(maxYears) }),
        restrictions: flags.restrictions ?? current?.restrictions ?? '',
        requiresLocalPresence: yesNo('local-presence', flags['local-presence'], 'yes', 'no') ?? current?.requiresLocalPresence ?? false,
        rdapNotFoundReliable: yesNo('rdap-404', flags['rdap-404'], 'reliable', 'unreliable') ?? current?.rdapNotFoundReliable ?? false,
      },
      `.${tld}`,
    );
  } catch (err) {
    if (err instanceof CatalogueError) throw new AdminError('InvalidTld', err.message);
    throw err;
  }
  await db.tlds.upsert([{ ...entry, popularRank: current?.popularRank ?? null }]);
  return tldRow((await db.tlds.get(tld)) as TldRecord, await db.tlds.promotions(tld), await exchangeRate(db, config), today());
}

function optionalNgn(field: string, value: number | null | undefined): Record<string, string> {
  return value === null || value === undefined ? {} : { [field]: formatMinor(value) };
}

async function listTlds({ repos, config }: RunContext): Promise<Record<string, unknown>[]> {
  const db = await catalogue({ repos, config });
  const rate = await exchangeRate(db, config);
  const promotions = await db.tlds.promotionsByTld();
  return (await db.tlds.list()).map((t) => tldRow(t, promotions.get(t.tld) ?? [], rate, today()));
}

async function importTlds({ repos, config, args }: RunContext): Promise<Record<string, unknown>> {
  const db = await catalogue({ repos, config });
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(args.FILE as string, 'utf8'));
  } catch (err) {
    throw new AdminError('InvalidCatalogue', `${args.FILE}: ${(err as Error).message}`);
  }
  let tlds;
  try {
    tlds = parseCatalogue(raw);
  } catch (err) {
    if (err instanceof CatalogueError) throw new AdminError('InvalidCatalogue', `${args.FILE}: ${err.message}`);
    throw err;
  }
  // A file with popular places sets the whole popular list; one without leaves it as it is.
  const setsPopular = tlds.some((t) => t.popularRank !== null);
  await db.transact(async (r) => {
    const kept = setsPopular ? tlds : await Promise.all(tlds.map(async (t) => ({ ...t, popularRank: (await r.tlds.get(t.tld))?.popularRank ?? null })));
    await r.tlds.upsert(kept);
    if (setsPopular) {
      const ordered = tlds.filter((t) => t.popularRank !== null).sort((a, b) => (a.popularRank as number) - (b.popularRank as number));
      await r.tlds.setPopular(ordered.map((t) => t.tld));
    }
  });
  return { imported: tlds.length, popularListSet: setsPopular, total: await db.tlds.count() };
}

async function setPopular({ repos, config, args }: RunContext): Promise<Record<string, unknown>[]> {
  const db = await catalogue({ repos, config });
  const tlds = (args.TLDS as string).split(',').map((t) => tldArg(t));
  if (new Set(tlds).size !== tlds.length) throw new AdminError('InvalidArgument', 'a TLD appears twice in the list');
  try {
    await db.tlds.setPopular(tlds);
  } catch (err) {
    if (err instanceof UnknownTld) throw new AdminError('NoSuchTld', err.message);
    throw err;
  }
  return (await db.tlds.popular()).map((t) => ({ rank: t.popularRank, tld: `.${t.tld}` }));
}

async function nameArg(raw: string | undefined, db: Repos): Promise<{ name: string; tld: string }> {
  let q;
  try {
    q = normalizeQuery(raw ?? '');
  } catch (err) {
    if (err instanceof DomainQueryError) throw new AdminError('InvalidName', err.message);
    throw err;
  }
  if (q.kind !== 'domain') throw new AdminError('InvalidName', `give a full name such as ${q.ascii}.com`);
  if (!(await db.tlds.get(q.suffix))) throw new AdminError('NoSuchTld', `no TLD '.${q.suffix}' in the catalogue`);
  return { name: q.registrable, tld: q.suffix };
}

const STATUSES: readonly DomainNameStatus[] = ['reserved', 'sold', 'premium'];

export const DOMAIN_COMMANDS: Record<string, Record<string, Command>> = {
  tlds: {
    list: {
      args: [],
      flags: [],
      summary: 'every TLD with its yearly prices (naira from the exchange rate where none is set), limits and promotion',
      example: 's3edge tlds list',
      run: listTlds,
    },
    set: {
      args: ['TLD'],
      flags: ['register', 'renew', 'transfer', 'register-ngn', 'renew-ngn', 'transfer-ngn', 'min-years', 'max-years', 'restrictions', 'local-presence', 'rdap-404'],
      summary: 'add a TLD or change what is given (prices per year in USD, or NGN of its own); the API sees it at once',
      example: 's3edge tlds set io --register 39.98 --renew 59.98 --transfer 49.98',
      run: setTld,
    },
    remove: {
      args: ['TLD'],
      flags: [],
      summary: 'take a TLD out of the catalogue, with its promotions',
      example: 's3edge tlds remove mobi',
      run: async ({ repos, config, args }) => {
        const db = await catalogue({ repos, config });
        const tld = (await requireTld(db, args.TLD)).tld;
        await db.tlds.delete(tld);
        return { removed: `.${tld}` };
      },
    },
    import: {
      args: ['FILE'],
      flags: [],
      summary: 'add or update TLDs from a catalogue file (the format of config/tlds.json and tlds export)',
      example: 's3edge tlds import prices.json',
      run: importTlds,
    },
    export: {
      args: [],
      flags: ['out'],
      summary: 'the catalogue as a file to edit and import (JSON; to standard output or --out FILE)',
      example: 's3edge tlds export --out prices.json',
      run: async ({ repos, config, flags }) => {
        const file = catalogueFile(await (await catalogue({ repos, config })).tlds.list());
        if (flags.out === undefined) return file;
        writeFileSync(flags.out, JSON.stringify(file, null, 1) + '\n');
        return { exported: file.tlds.length, file: flags.out };
      },
    },
    popular: {
      args: ['TLDS'],
      flags: [],
      summary: 'set the popular list, in order (comma-separated); a bare-label search looks under these',
      example: 's3edge tlds popular com,net,org,io,ai,ng,com.ng',
      run: setPopular,
    },
  },
  promotions: {
    create: {
      args: ['TLD'],
      flags: ['ends', 'bonus-ngn', 'bonus-usd'],
      required: ['ends'],
      summary: 'a bonus on a TLD (naira and/or dollars) through a date (UTC, inclusive)',
      example: 's3edge promotions create cv --bonus-ngn 5000 --bonus-usd 3.50 --ends 2026-12-31',
      run: async ({ repos, config, args, flags }) => {
        const db = await catalogue({ repos, config });
        const tld = (await requireTld(db, args.TLD)).tld;
        const bonusNgn = money('bonus-ngn', flags['bonus-ngn']) ?? null;
        const bonusUsd = money('bonus-usd', flags['bonus-usd']) ?? null;
        if ((bonusNgn ?? 0) <= 0 && (bonusUsd ?? 0) <= 0) throw new AdminError('InvalidArgument', 'give --bonus-ngn and/or --bonus-usd, above zero');
        const p = await db.tlds.addPromotion({ tld, bonusNgn: bonusNgn || null, bonusUsd: bonusUsd || null, endsOn: dateArg(flags.ends) });
        return promotionRow(p, today());
      },
    },
    list: {
      args: [],
      flags: ['tld'],
      summary: 'promotions (active, expired, ended), of one TLD with --tld',
      example: 's3edge promotions list --tld cv',
      run: async ({ repos, config, flags }) => {
        const db = await catalogue({ repos, config });
        const tld = flags.tld === undefined ? undefined : (await requireTld(db, flags.tld)).tld;
        return (await db.tlds.promotions(tld)).map((p) => promotionRow(p, today()));
      },
    },
    end: {
      args: ['ID'],
      flags: [],
      summary: 'end a promotion now',
      example: 's3edge promotions end 3',
      run: async ({ repos, config, args }) => {
        const db = await catalogue({ repos, config });
        const id = Number(args.ID);
        if (!Number.isSafeInteger(id) || !(await db.tlds.endPromotion(id))) throw new AdminError('NoSuchPromotion', `no running promotion ${args.ID}`);
        return promotionRow((await db.tlds.getPromotion(id)) as Promotion, today());
      },
    },
  },
  'exchange-rate': {
    show: {
      args: [],
      flags: [],
      summary: 'the naira per dollar in use, and where it comes from',
      example: 's3edge exchange-rate show',
      run: async ({ repos, config }) => rateView(repos, config),
    },
    set: {
      args: ['NGN_PER_USD'],
      flags: [],
      summary: 'set the naira per dollar (two decimals at most); the API uses it at once',
      example: 's3edge exchange-rate set 1580.50',
      run: async ({ repos, config, args }) => {
        if (!(await setExchangeRate(repos, args.NGN_PER_USD as string))) {
          throw new AdminError('InvalidRate', `the rate must be a positive amount like 1580.50 (got '${args.NGN_PER_USD}')`);
        }
        return rateView(repos, config);
      },
    },
  },
  'domain-names': {
    add: {
      args: ['NAME'],
      flags: ['status', 'price', 'price-ngn', 'note'],
      required: ['status'],
      summary: 'reserve a name, record it as sold, or offer it as premium at its own yearly price',
      example: 's3edge domain-names add gold.io --status premium --price 2500.00',
      run: async ({ repos, config, args, flags }) => {
        const db = await catalogue({ repos, config });
        const { name } = await nameArg(args.NAME, db);
        const status = STATUSES.find((s) => s === flags.status);
        if (!status) throw new AdminError('InvalidArgument', `--status must be reserved, sold or premium (got '${flags.status ?? ''}')`);
        const priceUsd = money('price', flags.price) ?? null;
        const priceNgn = money('price-ngn', flags['price-ngn']) ?? null;
        if (status === 'premium' && priceUsd === null) throw new AdminError('MissingPrice', 'a premium name needs --price (US dollars a year)');
        if (status !== 'premium' && (priceUsd !== null || priceNgn !== null)) throw new AdminError('InvalidArgument', 'only a premium name has a price');
        const note = flags.note ?? '';
        if (note.length > 200 || /[\u0000-\u001f\u007f]/.test(note)) throw new AdminError('InvalidArgument', '--note must be one line of at most 200 characters');
        return nameRow(await db.tlds.putName({ name, status, priceUsd, priceNgn, note }));
      },
    },
    list: {
      args: [],
      flags: [],
      summary: 'the names on the operator\'s list',
      example: 's3edge domain-names list',
      run: async ({ repos, config }) => (await (await catalogue({ repos, config })).tlds.names()).map(nameRow),
    },
    remove: {
      args: ['NAME'],
      flags: [],
      summary: 'take a name off the list: the registry answers for it again',
      example: 's3edge domain-names remove gold.io',
      run: async ({ repos, config, args }) => {
        const db = await catalogue({ repos, config });
        const { name } = await nameArg(args.NAME, db);
        if (!(await db.tlds.deleteName(name))) throw new AdminError('NoSuchName', `'${name}' is not on the list`);
        return { removed: name };
      },
    },
  },
  'rdap-bootstrap': {
    show: {
      args: [],
      flags: [],
      summary: 'the bootstrap in use: where it comes from, its publication date, how many TLDs it covers',
      example: 's3edge rdap-bootstrap show',
      run: async (ctx) => {
        try {
          return await bootstrapView(ctx);
        } catch (err) {
          if (err instanceof BootstrapError) throw new AdminError('InvalidBootstrap', err.message);
          throw err;
        }
      },
    },
    refresh: {
      args: [],
      flags: ['url'],
      summary: 'download it again (from domains.rdap.bootstrapUrl, or --url); a running server uses it within a second',
      example: 's3edge rdap-bootstrap refresh',
      run: async ({ repos, config, flags }) => {
        const client = createRdapClient(config.domains.rdap);
        try {
          return await refreshBootstrap(flags.url ?? config.domains.rdap.bootstrapUrl, client, repos.settings);
        } catch (err) {
          if (err instanceof BootstrapError || err instanceof OutboundError) throw new AdminError('RefreshFailed', `the bootstrap was not refreshed: ${err.message}`);
          throw err;
        } finally {
          await client.close();
        }
      },
    },
  },
};

/** Which RDAP bootstrap the server uses: the configured file, a refreshed copy, or the one shipped. */
async function bootstrapView({ repos, config }: Pick<RunContext, 'repos' | 'config'>): Promise<Record<string, unknown>> {
  const configured = config.domains.rdap.bootstrapFile;
  const stored = await repos.settings.get(BOOTSTRAP_SETTING);
  const source = configured !== '' ? `configured file ${configured}` : stored !== undefined ? 'refreshed copy in the data directory' : `shipped file ${SHIPPED_BOOTSTRAP_FILE}`;
  const bootstrap = configured !== '' ? readBootstrapFile(configured) : stored !== undefined ? Bootstrap.parse(stored) : readBootstrapFile(SHIPPED_BOOTSTRAP_FILE);
  return { source, publication: bootstrap.publication, services: bootstrap.serviceCount, entries: bootstrap.entryCount };
}

async function rateView(repos: Repos, config: Config): Promise<Record<string, unknown>> {
  const set = await repos.settings.get('domains.ngnPerUsd');
  return { ngnPerUsd: formatMinor(await exchangeRate(repos, config)), source: set === undefined ? 'configuration (domains.ngnPerUsd)' : 'set with s3edge exchange-rate set' };
}

function nameRow(n: { name: string; status: string; priceUsd: number | null; priceNgn: number | null; note: string; createdAt: number }): Record<string, unknown> {
  return {
    name: n.name,
    status: n.status,
    price: n.priceUsd === null ? '' : formatMinor(n.priceUsd),
    priceNgn: n.priceNgn === null ? '' : formatMinor(n.priceNgn),
    note: n.note,
    createdAt: iso(n.createdAt),
  };
}
