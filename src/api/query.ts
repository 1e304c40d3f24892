// Lenient query parameters: SPEC.md §7 says an invalid page or limit is not an error, defaults apply.

/** A whole number in [min, max] from a query value; anything else (absent, text, out of range) -> fallback. Values above max are capped. */
export function intParam(raw: unknown, fallback: number, min: number, max: number): number {
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw.trim())) return fallback;
  const n = Number(raw.trim());
  if (n < min) return fallback;
  return Math.min(n, max);
}
