// Numbers, bytes and times as people read them.
const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];

export function bytes(n) {
  if (!Number.isFinite(n)) return '–';
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1000 && i < UNITS.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0)} ${UNITS[i]}`;
}

export function count(n) {
  return Number.isFinite(n) ? n.toLocaleString('en-US') : '–';
}

export function percent(ratio) {
  return Number.isFinite(ratio) ? `${(ratio * 100).toFixed(ratio >= 0.1 || ratio === 0 ? 0 : 1)}%` : '–';
}

export function dateTime(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' });
}

export function money(amount, currency) {
  if (amount === null || amount === undefined) return '–';
  return new Intl.NumberFormat('en-US', { style: 'currency', currency, maximumFractionDigits: currency === 'NGN' ? 0 : 2 }).format(amount);
}
