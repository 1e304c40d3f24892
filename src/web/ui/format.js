// Numbers, bytes, credits, money and times as people read them.
const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
const BINARY_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** `n` in the largest of `units` (steps of `base`) it reaches, with `digits(v)` to show. */
function scaled(n, base, units, digits) {
  if (!Number.isFinite(n)) return '–';
  let v = n;
  let i = 0;
  while (Math.abs(v) >= base && i < units.length - 1) {
    v /= base;
    i++;
  }
  return `${i === 0 ? v : digits(v)} ${units[i]}`;
}

export function bytes(n) {
  return scaled(n, 1000, UNITS, (v) => v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0));
}

/** Bytes in 1024-based units, as storage quotas are set (`10GiB`): `1.5 GiB`. */
export function binaryBytes(n) {
  return scaled(n, 1024, BINARY_UNITS, (v) => Number(v.toFixed(2)));
}

/** "Stored 7 GiB of 10 GiB quota (70%)", or "Stored 7 GiB (no quota)". */
export function storedText(stored, quota) {
  if (quota === null || quota === undefined) return `Stored ${binaryBytes(stored)} (no quota)`;
  const share = quota > 0 ? ` (${percent(stored / quota)})` : '';
  return `Stored ${binaryBytes(stored)} of ${binaryBytes(quota)} quota${share}`;
}

export function count(n) {
  return Number.isFinite(n) ? n.toLocaleString('en-US') : '–';
}

/**
 * An amount of credits: whole thousands grouped, small amounts with enough digits to be seen (a day of
 * storing a few megabytes costs thousandths of a credit, which must not read as 0).
 */
export function credits(n) {
  if (!Number.isFinite(n)) return '–';
  const abs = Math.abs(n);
  if (abs === 0 || abs >= 1) return n.toLocaleString('en-US', { maximumFractionDigits: 2 });
  if (abs < 0.0001) return n > 0 ? '< 0.0001' : '> −0.0001';
  return n.toLocaleString('en-US', { maximumSignificantDigits: 2 });
}

/** A ledger amount from the user's side: a grant adds (+), a charge takes away (−). */
export function ledgerCredits(charged) {
  if (!Number.isFinite(charged) || charged === 0) return credits(charged);
  return charged < 0 ? `+${credits(-charged)}` : `−${credits(charged)}`;
}

export function percent(ratio) {
  return Number.isFinite(ratio) ? `${(ratio * 100).toFixed(ratio >= 0.1 || ratio === 0 ? 0 : 1)}%` : '–';
}

export function dateTime(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' });
}

/**
 * A time in the reader's own locale and time zone (the browser's), for dates a user plans by, such as a
 * certificate's expiry: "12 Mar 2026, 10:00" in en-GB, "Mar 12, 2026, 10:00 AM" in en-US.
 */
export function localDateTime(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** The ISO times (2026-03-12T10:00:00.000Z) in a server's sentence as localDateTime. */
export function localTimesIn(text) {
  return text.replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b/g, (m) => localDateTime(m));
}

const SPANS = [['year', 365 * 86400], ['month', 30 * 86400], ['day', 86400], ['hour', 3600], ['minute', 60], ['second', 1]];

/** How far a time is from now in words: "in 89 days", "3 hours ago", "now". */
export function fromNow(iso, now = Date.now()) {
  const ms = new Date(iso).getTime();
  if (!Number.isFinite(ms)) return '';
  const seconds = (ms - now) / 1000;
  const [unit, size] = SPANS.find(([, size]) => Math.abs(seconds) >= size) ?? SPANS.at(-1);
  return new Intl.RelativeTimeFormat('en', { numeric: 'auto' }).format(Math.round(seconds / size), unit);
}

/** A length of time in seconds as words: "5 minutes", "1 year", "182.5 days". */
export function duration(seconds) {
  if (!Number.isFinite(seconds)) return '–';
  const year = 365 * 86400;
  const plural = (n, unit) => `${Number(n.toFixed(1)).toLocaleString('en-US')} ${n === 1 ? unit : `${unit}s`}`;
  if (seconds >= year && seconds % year === 0) return plural(seconds / year, 'year');
  if (seconds >= 86400) return plural(seconds / 86400, 'day');
  if (seconds >= 3600) return plural(seconds / 3600, 'hour');
  if (seconds >= 60) return plural(seconds / 60, 'minute');
  return plural(seconds, 'second');
}

/** Money with its currency's own sign: ₦17,019 and $12.50 (naira has no kobo in prices). */
export function money(amount, currency) {
  if (amount === null || amount === undefined) return '–';
  return new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency,
    currencyDisplay: 'narrowSymbol',
    maximumFractionDigits: currency === 'NGN' ? 0 : 2,
  }).format(amount);
}
