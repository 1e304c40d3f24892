// Money in minor units, naira from dollars, promotions by date, and the catalogue file: the rules of
// src/domains/money.ts, promotions.ts and catalogue.ts, table-tested.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Promotion } from '../../src/db/repos/tlds.js';
import { CONFIG_DIR } from '../../src/config/load.js';
import { catalogueFile, parseCatalogue, tldView } from '../../src/domains/catalogue.js';
import { centsToKobo, formatMinor, parseMinor, parseRate, toMajor } from '../../src/domains/money.js';
import { bestActive, isActive, utcDate } from '../../src/domains/promotions.js';

t.test('prices are decimal strings held as integers of minor units', async (t) => {
  for (const [text, minor] of [['12.99', 1299], ['7', 700], ['0.5', 50], ['0.05', 5], [' 10.00 ', 1000], ['0', 0], ['999999999.99', 99999999999]] as const) {
    t.equal(parseMinor(text, Number.MAX_SAFE_INTEGER), minor, text);
  }
  for (const bad of ['', '12.999', '-1', '1e3', '12,99', '.5', '12.', 'NaN', '0x10', '1 000']) t.equal(parseMinor(bad), undefined, `refused: '${bad}'`);
  t.equal(parseMinor('10000000.01'), undefined, 'above the largest price');
  t.equal(formatMinor(1299), '12.99');
  t.equal(formatMinor(5), '0.05');
  t.equal(formatMinor(700), '7.00');
  t.equal(toMajor(1299), 12.99);
  t.equal(parseRate('1550'), 155000);
  t.equal(parseRate('0'), undefined, 'a rate of zero is no rate');
});

t.test('naira from dollars: exact products, rounded half up to the kobo', async (t) => {
  t.equal(centsToKobo(1299, 155000), 2013450, '$12.99 at N1550 = N20,134.50');
  t.equal(centsToKobo(1, 155050), 1551, '1 cent at N1550.50: 1550.5 kobo rounds up');
  t.equal(centsToKobo(1, 155049), 1550, '1550.49 kobo rounds down');
  t.equal(centsToKobo(99999999999, 100000000), 99999999999000000, 'the largest product is exact (no double rounding)');
  t.equal(centsToKobo(0, 155000), 0);
});

function promo(p: Partial<Promotion> & Pick<Promotion, 'endsOn'>): Promotion {
  return { id: 1, tld: 'cv', bonusNgn: null, bonusUsd: null, createdAt: 0, endedAt: null, ...p };
}

t.test('a promotion is active through its ending date (UTC) and gone the day after', async (t) => {
  const p = promo({ endsOn: '2026-11-30', bonusNgn: 500000 });
  t.ok(isActive(p, '2026-11-29'));
  t.ok(isActive(p, '2026-11-30'), 'on its last day');
  t.notOk(isActive(p, '2026-12-01'), 'the day after');
  t.notOk(isActive({ ...p, endedAt: 5 }, '2026-11-01'), 'ended early from the CLI');
  t.equal(utcDate(new Date('2026-11-30T23:59:59.999Z')), '2026-11-30');
  t.equal(utcDate(new Date('2026-12-01T00:00:00.000Z')), '2026-12-01', 'the day turns at UTC midnight');
});

t.test('of several active promotions the best is shown', async (t) => {
  const rate = 150000; // N1500 per dollar
  const ngn = promo({ id: 1, endsOn: '2026-12-31', bonusNgn: 300000 }); // N3000 = $2.00
  const usd = promo({ id: 2, endsOn: '2026-12-15', bonusUsd: 250 }); // $2.50
  const expired = promo({ id: 3, endsOn: '2026-11-01', bonusUsd: 10000 });
  t.equal(bestActive([ngn, usd, expired], '2026-11-25', rate)?.id, 2, 'the largest bonus in dollar terms');
  const sameWorth = promo({ id: 4, endsOn: '2027-01-31', bonusUsd: 250 });
  t.equal(bestActive([usd, sameWorth], '2026-11-25', rate)?.id, 4, 'equal bonuses: the one that lasts longer');
  t.equal(bestActive([expired], '2026-11-25', rate), undefined, 'none active');
});

t.test('the catalogue file: checked entry by entry, round-trips through export', async (t) => {
  const shipped = parseCatalogue(JSON.parse(readFileSync(join(CONFIG_DIR, 'tlds.json'), 'utf8')));
  t.ok(shipped.length >= 60, `the shipped catalogue has ${shipped.length} TLDs`);
  for (const tld of ['com', 'net', 'org', 'app', 'dev', 'io', 'ai', 'xyz', 'ng', 'com.ng', 'cv', 'co', 'uk', 'co.uk', 'de']) {
    t.ok(shipped.some((x) => x.tld === tld), `.${tld} is sold`);
  }
  const popular = shipped.filter((x) => x.popularRank !== null).sort((a, b) => (a.popularRank as number) - (b.popularRank as number));
  t.same(popular.slice(0, 3).map((x) => x.tld), ['com', 'net', 'org'], 'the popular list starts with the classics');
  t.ok(shipped.find((x) => x.tld === 'com.ng')?.registerNgn, '.com.ng has a naira price of its own');
  t.match(shipped.find((x) => x.tld === 'de'), { requiresLocalPresence: true, restrictions: /Germany/ });
  t.equal(shipped.find((x) => x.tld === 'ai')?.minYears, 2, '.ai is registered for two years at least');

  const records = shipped.map((x) => ({ ...x, updatedAt: 0 }));
  t.same(parseCatalogue(JSON.parse(JSON.stringify(catalogueFile(records)))), shipped, 'export then import gives the same catalogue');

  const entry = { tld: 'io', register: '39.98', renew: '59.98', transfer: '49.98' };
  const bad: [unknown, RegExp][] = [
    [{ version: 2, tlds: [] }, /"version": 1/],
    [{ version: 1, tlds: [{ ...entry, register: 39.98 }] }, /tlds\[0\] \(\.io\): register must be a price like "12\.99"/],
    [{ version: 1, tlds: [{ ...entry, tld: 'not a tld' }] }, /tlds\[0\]: tld must be/],
    [{ version: 1, tlds: [{ ...entry, minYears: 3, maxYears: 2 }] }, /maxYears is below minYears/],
    [{ version: 1, tlds: [{ ...entry, surprise: 1 }] }, /unknown field 'surprise'/],
    [{ version: 1, tlds: [entry, entry] }, /\.io appears twice/],
    [{ version: 1, tlds: [{ ...entry, popular: 1 }, { ...entry, tld: 'ai', popular: 1 }] }, /two TLDs have popular place 1/],
    [{ version: 1, tlds: [{ ...entry, restrictions: 'line\nbreak' }] }, /restrictions must be one line/],
  ];
  for (const [doc, message] of bad) t.throws(() => parseCatalogue(doc), { name: 'CatalogueError', message }, String(message));
});

t.test('what the API shows of a TLD: both currencies, two decimals, the active promotion', async (t) => {
  const [io] = parseCatalogue({ version: 1, tlds: [{ tld: 'io', register: '39.98', renew: '59.98', transfer: '49.98', renewNgn: '90000.00' }] });
  const view = tldView({ ...(io as NonNullable<typeof io>), updatedAt: 0 }, [promo({ tld: 'io', endsOn: '2026-12-31', bonusNgn: 500000, bonusUsd: 350 })], 155000, '2026-11-25');
  t.match(view, {
    tld: '.io', extension: 'io', registerDollar: 39.98, registerNaira: 61969, renewNaira: 90000, transferNaira: 77469,
    bonusAmount: 5000, bonusAmountUSD: 3.5, bonusEndingDate: '2026-12-31', popular: false, popularRank: null,
  });
  t.match(tldView({ ...(io as NonNullable<typeof io>), updatedAt: 0 }, [promo({ tld: 'io', endsOn: '2026-11-24', bonusUsd: 350 })], 155000, '2026-11-25'), {
    bonusAmount: null, bonusAmountUSD: null, bonusEndingDate: null,
  }, 'expired yesterday: the fields are null');
});
