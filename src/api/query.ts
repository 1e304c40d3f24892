// Lenient query parameters: SPEC.md §7 says an invalid page or limit is not an error, defaults apply.

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
