// Proxy log data (SPEC.md 2.11) for the last 24 hours: allowed and blocked requests, a risk index,
// the geographic concentration and the top source IPs. Built from the download usage events (the
// requests that reached an asset) until the edge request log exists.
import type { ProxyLogs } from '../api/v3/schemas.js';
import type { UsageEvent } from '../db/repos/usage.js';
import { countryName } from '../analytics/country-names.js';

export const TOP_SOURCES = 10;

/** Statuses that mean the edge refused the request (rather than the object being absent). */
function isBlocked(status: number): boolean {
  return status === 401 || status === 403 || status === 429 || status === 451;
}

/**
 * Risk index 0..1: the blocked share, raised when traffic concentrates on one source (a single IP
 * sending most requests looks like scraping or a flood). Rating: < 0.1 low, < 0.4 medium, else high.
 */
export function riskIndex(total: number, blocked: number, topSourceRequests: number): number {
  if (total === 0) return 0;
  const blockedShare = blocked / total;
  const concentration = total >= 20 ? topSourceRequests / total : 0;
  return Math.round(Math.min(1, blockedShare + 0.5 * Math.max(0, concentration - 0.5)) * 1000) / 1000;
}

function rating(index: number): 'low' | 'medium' | 'high' {
  return index < 0.1 ? 'low' : index < 0.4 ? 'medium' : 'high';
}

export function buildProxyLogs(events: readonly UsageEvent[], fromMs: number, toMs: number, hostname: string): ProxyLogs {
  let blocked = 0;
  const byCountry = new Map<string, number>();
  const bySource = new Map<string, { requests: number; bytes: number }>();
  for (const e of events) {
    if (isBlocked(e.statusCode)) blocked++;
    const country = e.country === '' ? 'Unknown' : countryName(e.country);
    byCountry.set(country, (byCountry.get(country) ?? 0) + 1);
    if (e.clientIp !== '') {
      const s = bySource.get(e.clientIp) ?? { requests: 0, bytes: 0 };
      s.requests++;
      s.bytes += e.bytes;
      bySource.set(e.clientIp, s);
    }
  }
  const total = events.length;
  const topSources = [...bySource.entries()]
    .map(([ip, s]) => ({ ip, ...s }))
    .sort((a, b) => b.requests - a.requests || b.bytes - a.bytes || a.ip.localeCompare(b.ip))
    .slice(0, TOP_SOURCES);
  const index = riskIndex(total, blocked, topSources[0]?.requests ?? 0);
  return {
    available: false,
    hostname,
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    requests: { total, allowed: total - blocked, blocked },
    risk: { index, rating: rating(index) },
    geo: [...byCountry.entries()]
      .map(([country, requests]) => ({ country, requests, share: Math.round((requests / total) * 1000) / 1000 }))
      .sort((a, b) => b.requests - a.requests || a.country.localeCompare(b.country)),
    topSources,
  };
}
