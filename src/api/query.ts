// Lenient query parameters: SPEC.md §7 says an invalid page or limit is not an error, defaults apply.

/**
 * The management API's query string parser: every key maps to one string, the first value given
 * (`page=2&page=3` is page 2 on every route), so no route sees an array it was not written for.
 * A null-prototype object: `__proto__` or `constructor` are ordinary keys.
 */
export function parseQueryFirstValue(raw: string): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [key, value] of new URLSearchParams(raw)) if (!(key in out)) out[key] = value;
  return out;
}

/** A positive decimal integer (no sign, fraction or exponent) from one query value; else undefined. */
export function positiveInt(raw: unknown): number | undefined {
  if (typeof raw !== 'string') return undefined;
  const s = raw.trim();
  if (!/^\d{1,15}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 ? n : undefined;
}

/** A whole number in [min, max] from a query value; anything else (absent, text, out of range) -> fallback. Values above max are capped. */
export function intParam(raw: unknown, fallback: number, min: number, max: number): number {
  const n = positiveInt(raw);
  if (n === undefined || n < min) return fallback;
  return Math.min(n, max);
}
