// Summary analytics (SPEC.md 2.4) from the CDN request log. The window is the 24 hourly points of the
// series (the current hour and the 23 before it), so the totals are exactly the sums of the series.
// cachedBytes: bytes sent with cache status HIT; cacheHitRatio: HIT requests / requests that reached
// the cache (any cache status), 0 when none did. Countries by English name; unknown ones left out.
import type { Analytics } from '../api/v3/schemas.js';
import { countryName } from './country-names.js';
import { HOUR_MS, hourOf, type HourTraffic } from '../db/repos/traffic.js';
import { hourlyBuckets } from './usage-fallback.js';

/** The start of the window: the first hourly point of the series. */
export function windowStart(nowMs: number): number {
  return hourOf(nowMs) - 23 * HOUR_MS;
}

/** Analytics from the user's hourly traffic, or undefined when the log has no request of theirs in the window. */
export function logAnalytics(hours: readonly HourTraffic[], nowMs: number, hostname: string): Analytics | undefined {
  const first = windowStart(nowMs);
  const series = hourlyBuckets(nowMs).map((start) => ({ timestamp: new Date(start).toISOString(), requests: 0, bytes: 0, cachedBytes: 0 }));
  const statusCodes: Record<string, number> = {};
  const countries: Record<string, number> = {};
  let requests = 0;
  let bytes = 0;
  let cachedBytes = 0;
  let hits = 0;
  let lookups = 0;
  for (const h of hours) {
    const point = series[(h.hour - first) / HOUR_MS];
    if (!point || h.requests === 0) continue;
    point.requests += h.requests;
    point.bytes += h.bytes;
    point.cachedBytes += h.cachedBytes;
    requests += h.requests;
    bytes += h.bytes;
    cachedBytes += h.cachedBytes;
    hits += h.hits;
    lookups += h.cacheLookups;
    for (const [status, n] of Object.entries(h.statusCounts)) statusCodes[status] = (statusCodes[status] ?? 0) + n;
    for (const [code, n] of Object.entries(h.countryCounts)) {
      const name = countryName(code);
      countries[name] = (countries[name] ?? 0) + n;
    }
  }
  if (requests === 0) return undefined;
  return {
    enabled: true,
    available: true,
    hostname,
    requests,
    bytes,
    cachedBytes,
    cacheHitRatio: lookups === 0 ? 0 : hits / lookups,
    statusCodes,
    countries,
    series,
  };
}
