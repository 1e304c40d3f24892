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
