// Hourly traffic aggregates of the CDN request log: what a roll-up row holds, built from groups of raw
// rows (same owner, hour, status, country and cache status) or from single records. Pure: the roll-up,
// the late records of a flush and the summary's read of the current hours all add up the same way.
import type { CacheStatus } from './request-records.js';

export const HOUR_MS = 3_600_000;

export function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

export interface HourTraffic {
  /** '' for requests that named nothing known. */
  ownerId: string;
  /** Unix ms of the hour's start. */
  hour: number;
  requests: number;
  bytes: number;
  /** Bytes sent by requests with cache status HIT. */
  cachedBytes: number;
  hits: number;
  /** Requests that reached the cache (any cache status). */
  cacheLookups: number;
  /** HTTP status (as a string) -> requests. */
  statusCounts: Record<string, number>;
  /** ISO 3166 alpha-2 code -> requests; requests of unknown country are not counted here. */
  countryCounts: Record<string, number>;
}

/** Requests that share owner, hour, status, country and cache status. */
export interface TrafficGroup {
  ownerId: string;
  hour: number;
  status: number;
  country: string;
  cacheStatus: CacheStatus | null;
  requests: number;
  bytes: number;
}

export function emptyHour(ownerId: string, hour: number): HourTraffic {
  return { ownerId, hour, requests: 0, bytes: 0, cachedBytes: 0, hits: 0, cacheLookups: 0, statusCounts: {}, countryCounts: {} };
}

function bump(counts: Record<string, number>, key: string, n: number): void {
  counts[key] = (Object.hasOwn(counts, key) ? (counts[key] as number) : 0) + n;
}

function addGroup(h: HourTraffic, g: TrafficGroup): void {
  h.requests += g.requests;
  h.bytes += g.bytes;
  if (g.cacheStatus !== null) h.cacheLookups += g.requests;
  if (g.cacheStatus === 'HIT') {
    h.hits += g.requests;
    h.cachedBytes += g.bytes;
  }
  bump(h.statusCounts, String(g.status), g.requests);
  if (g.country !== '') bump(h.countryCounts, g.country, g.requests);
}

export function mergeHour(into: HourTraffic, from: HourTraffic): void {
  into.requests += from.requests;
  into.bytes += from.bytes;
  into.cachedBytes += from.cachedBytes;
  into.hits += from.hits;
  into.cacheLookups += from.cacheLookups;
  for (const [k, n] of Object.entries(from.statusCounts)) bump(into.statusCounts, k, n);
  for (const [k, n] of Object.entries(from.countryCounts)) bump(into.countryCounts, k, n);
}

/** Groups (in any order) -> one aggregate per owner and hour. */
export function hoursOf(groups: Iterable<TrafficGroup>): HourTraffic[] {
  const byKey = new Map<string, HourTraffic>();
  for (const g of groups) {
    const key = `${g.hour}\u0000${g.ownerId}`;
    let h = byKey.get(key);
    if (!h) {
      h = emptyHour(g.ownerId, g.hour);
      byKey.set(key, h);
    }
    addGroup(h, g);
  }
  return [...byKey.values()];
}
