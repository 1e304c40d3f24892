// Summary analytics (SPEC.md 2.4) from usage events: the fallback when the CDN request log has none of
// the user's requests in the window. Every download event of the last 24 hours counts as one request; nothing of it
// came from a cache, so cachedBytes and cacheHitRatio are 0, and `available` is false to say so.
import type { Analytics } from '../api/v3/schemas.js';
import type { UsageEvent } from '../db/repos/usage.js';
import { countryName } from './country-names.js';
import { HOUR_MS, hourOf } from '../db/repos/traffic.js';

export const WINDOW_MS = 24 * HOUR_MS;

/** The 24 hourly buckets ending with the current hour, oldest first, keyed by their start. */
export function hourlyBuckets(nowMs: number): number[] {
  const current = hourOf(nowMs);
  return Array.from({ length: 24 }, (_, i) => current - (23 - i) * HOUR_MS);
}

export function usageFallbackAnalytics(downloads: readonly UsageEvent[], nowMs: number, hostname: string): Analytics {
  const starts = hourlyBuckets(nowMs);
  const first = starts[0] as number;
  const series = starts.map((start) => ({ timestamp: new Date(start).toISOString(), requests: 0, bytes: 0, cachedBytes: 0 }));
  const statusCodes: Record<string, number> = {};
  const countries: Record<string, number> = {};
  let requests = 0;
  let bytes = 0;
  for (const e of downloads) {
    if (e.createdAt <= nowMs - WINDOW_MS || e.createdAt > nowMs) continue;
    requests++;
    bytes += e.bytes;
    const point = series[Math.floor((e.createdAt - first) / HOUR_MS)];
    if (point) {
      point.requests++;
      point.bytes += e.bytes;
    }
    const status = String(e.statusCode);
    statusCodes[status] = (statusCodes[status] ?? 0) + 1;
    if (e.country !== '') {
      const name = countryName(e.country);
      countries[name] = (countries[name] ?? 0) + 1;
    }
  }
  return { enabled: true, available: false, hostname, requests, bytes, cachedBytes: 0, cacheHitRatio: 0, statusCodes, countries, series };
}
