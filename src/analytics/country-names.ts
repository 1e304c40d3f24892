// Country names for analytics: ISO 3166 alpha-2 codes as English names (Intl.DisplayNames).
const names = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'code' });

/** 'DE' -> 'Germany'; anything that is not a known two-letter code is returned as given. */
export function countryName(code: string): string {
  if (!/^[A-Za-z]{2}$/.test(code)) return code;
  try {
    return names.of(code.toUpperCase()) ?? code;
  } catch {
    return code;
  }
}
