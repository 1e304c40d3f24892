// Money as integers in minor units: US cents and kobo (1/100 naira), never floats. A price is typed as
// a decimal string ("12.99") and rendered as a number with at most two decimals (12.99), computed from
// the integer. Naira from dollars: cents x (kobo per dollar) / 100, rounded half up to the kobo, in
// BigInt so that no product is ever rounded by a double.

/** Largest price we hold: $10,000,000.00 (or naira), far above any registry's. */
const MAX_MINOR = 1_000_000_000;
/** Largest exchange rate: 1,000,000 naira per dollar, in kobo. */
const MAX_RATE_MINOR = 100_000_000;

const DECIMAL = /^(\d{1,9})(?:\.(\d{1,2}))?$/;

/** `"12.99"` -> 1299; `"7"` -> 700. Undefined when it is not a decimal with at most two places within range. */
export function parseMinor(text: string, max = MAX_MINOR): number | undefined {
  const m = DECIMAL.exec(text.trim());
  if (!m) return undefined;
  const minor = Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
  return minor <= max ? minor : undefined;
}

/** The naira-per-dollar rate in kobo per dollar (`"1550.00"` -> 155000); undefined when not a positive rate. */
export function parseRate(text: string): number | undefined {
  const rate = parseMinor(text, MAX_RATE_MINOR);
  return rate !== undefined && rate > 0 ? rate : undefined;
}

/** 1299 -> 12.99: the JSON number of a minor-unit amount. */
export function toMajor(minor: number): number {
  return minor / 100;
}

/** 1299 -> "12.99": for the CLI and the catalogue file. */
export function formatMinor(minor: number): string {
  return `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, '0')}`;
}

/** Kobo for `cents` at `koboPerDollar`, rounded half up: 1299 cents at 155000 -> 2013450 kobo (N20,134.50). */
export function centsToKobo(cents: number, koboPerDollar: number): number {
  return Number((BigInt(cents) * BigInt(koboPerDollar) + 50n) / 100n);
}
