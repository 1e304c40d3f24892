// Proxy log data (SPEC.md 2.11) for the last 24 hours: allowed and blocked requests, a risk index,
// the geographic concentration and the top source IPs. Built from the CDN request log when it has the
// user's requests, else from the download usage events (the requests that reached an asset).
import type { ProxyLogs } from '../api/v3/schemas.js';
import type { OwnerRequests } from '../db/repos/cdn-traffic.js';
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

/** A window's traffic, from either source. */
interface TrafficCounts {
  total: number;
  blocked: number;
  /** Requests by ISO code ('' when unknown). */
  byCountry: ReadonlyMap<string, number>;
  /** The busiest sources, in order. */
  topSources: { ip: string; requests: number; bytes: number }[];
}

function proxyLogs(c: TrafficCounts, available: boolean, fromMs: number, toMs: number, hostname: string): ProxyLogs {
  const geo = new Map<string, number>();
  for (const [code, n] of c.byCountry) {
    const name = code === '' ? 'Unknown' : countryName(code);
    geo.set(name, (geo.get(name) ?? 0) + n);
  }
  const index = riskIndex(c.total, c.blocked, c.topSources[0]?.requests ?? 0);
  return {
    available,
    hostname,
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    requests: { total: c.total, allowed: c.total - c.blocked, blocked: c.blocked },
    risk: { index, rating: rating(index) },
    geo: [...geo.entries()]
      .map(([country, requests]) => ({ country, requests, share: Math.round((requests / c.total) * 1000) / 1000 }))
      .sort((a, b) => b.requests - a.requests || a.country.localeCompare(b.country)),
    topSources: c.topSources,
  };
}

/** The fallback: download usage events (requests that reached an asset), `available: false`. */
export function buildProxyLogs(events: readonly UsageEvent[], fromMs: number, toMs: number, hostname: string): ProxyLogs {
  let blocked = 0;
  const byCountry = new Map<string, number>();
  const bySource = new Map<string, { requests: number; bytes: number }>();
  for (const e of events) {
    if (isBlocked(e.statusCode)) blocked++;
    byCountry.set(e.country, (byCountry.get(e.country) ?? 0) + 1);
    if (e.clientIp !== '') {
      const s = bySource.get(e.clientIp) ?? { requests: 0, bytes: 0 };
      s.requests++;
      s.bytes += e.bytes;
      bySource.set(e.clientIp, s);
    }
  }
  const topSources = [...bySource.entries()]
    .map(([ip, s]) => ({ ip, ...s }))
    .sort((a, b) => b.requests - a.requests || b.bytes - a.bytes || a.ip.localeCompare(b.ip))
    .slice(0, TOP_SOURCES);
  return proxyLogs({ total: events.length, blocked, byCountry, topSources }, false, fromMs, toMs, hostname);
}

/**
 * From the CDN request log: every request to the user's assets and objects (any status), client IPs as
 * resolved through trusted proxies, `available: true`; undefined when the log has none in the window.
 */
export function buildProxyLogsFromLog(log: OwnerRequests, fromMs: number, toMs: number, hostname: string): ProxyLogs | undefined {
  let total = 0;
  let blocked = 0;
  const byCountry = new Map<string, number>();
  for (const row of log.breakdown) {
    total += row.requests;
    if (isBlocked(row.status)) blocked += row.requests;
    byCountry.set(row.country, (byCountry.get(row.country) ?? 0) + row.requests);
  }
  if (total === 0) return undefined;
  return proxyLogs({ total, blocked, byCountry, topSources: log.topSources }, true, fromMs, toMs, hostname);
}
