// Proxy log data (SPEC.md 2.11; docs/EDGE.md "Proxy logs"): a user's edge traffic over a window —
// the requests the edge proxy handled for their project hostnames and the CDN requests for their
// assets — as allowed and blocked counts (blocked by reason), a time series, a risk index with the
// signals behind it, the GeoIP concentration, the top sources by requests and by bytes with each
// one's own risk, and the anomaly events. Built from the request log; when the log has nothing of
// the user in the window, from their download usage events (`available: false`).
import type { Anomaly, ProxyLogs } from '../api/v3/schemas.js';
import { CDN_REFUSALS, type SeriesRow, type SourceRow, type TrafficGroupRow } from '../db/repos/edge-traffic.js';
import type { UsageEvent } from '../db/repos/usage.js';
import { countryName } from '../analytics/country-names.js';
import { concentration, riskOf, sourceRisk } from './risk.js';

export const TOP_SOURCES = 10;

/** A hostname of the user's that the report lists, with or without traffic. */
export interface ReportedHostname {
  hostname: string;
  kind: 'project' | 'cdn';
  projectId: string | null;
  verified: boolean;
  /** Its certificate's state (a project hostname's own; null for the CDN hostname, which is the operator's). */
  https: HostnameHttps | null;
}

/** A project hostname's certificate as the proxy logs show it beside its traffic. */
export interface HostnameHttps {
  /** The last issuance's state: pending (none yet), issuing, issued, failed (the reason in lastError). */
  state: 'pending' | 'issuing' | 'issued' | 'failed';
  certificate: 'acme' | 'uploaded' | null;
  notAfter: string | null;
  lastError: string | null;
}

/** What the report is made of: from the request log, or rebuilt from usage events. */
export interface TrafficFacts {
  groups: readonly TrafficGroupRow[];
  series: readonly SeriesRow[];
  byRequests: readonly SourceRow[];
  byBytes: readonly SourceRow[];
}

export interface ReportWindow {
  fromMs: number;
  toMs: number;
  hours: number;
  /** Width of a series point. */
  bucketMs: number;
  /** The hostname asked for; null: all of the user's. */
  hostname: string | null;
}

/** Series points: 5 minutes up to a day, hourly beyond. */
/** A source with its own risk, `total` being the requests of the window. */
export function sourceView(s: SourceRow, total: number): ProxyLogs['topSources'][number] {
  return { ...s, risk: sourceRisk(s, total) };
}

/** A series point's width: about 60 to 300 points whatever the window, so a burst keeps its shape. */
export function bucketMsFor(hours: number): number {
  return hours <= 3 ? 60_000 : hours <= 24 ? 5 * 60_000 : 60 * 60_000;
}

export function buildProxyLogs(
  facts: TrafficFacts,
  available: boolean,
  w: ReportWindow,
  hostnames: readonly ReportedHostname[],
  anomalies: readonly Anomaly[],
): ProxyLogs {
  let total = 0;
  let blocked = 0;
  let serverErrors = 0;
  let bytes = 0;
  const blockedBy: Record<string, number> = {};
  const byCountry = new Map<string, number>();
  const byHost = new Map<string, { requests: number; blocked: number }>();
  for (const g of facts.groups) {
    total += g.requests;
    bytes += g.bytes;
    if (g.decision !== 'allowed') {
      blocked += g.requests;
      blockedBy[g.decision] = (blockedBy[g.decision] ?? 0) + g.requests;
    }
    if (g.serverError) serverErrors += g.requests;
    byCountry.set(g.country, (byCountry.get(g.country) ?? 0) + g.requests);
    const h = byHost.get(g.host) ?? { requests: 0, blocked: 0 };
    h.requests += g.requests;
    if (g.decision !== 'allowed') h.blocked += g.requests;
    byHost.set(g.host, h);
  }
  const geo = [...byCountry.entries()]
    .map(([code, requests]) => ({ country: code === '' ? 'Unknown' : countryName(code), code, requests, share: share(requests, total) }))
    .sort((a, b) => b.requests - a.requests || a.country.localeCompare(b.country));
  // Unknown countries say nothing about concentration.
  const known = geo.filter((g) => g.code !== '');
  const top = known[0];
  const knownTotal = known.reduce((n, g) => n + g.requests, 0);
  const geoIndex = concentration(known.map((g) => g.requests));
  const source = (s: SourceRow): ProxyLogs['topSources'][number] => sourceView(s, total);
  return {
    available,
    hostname: w.hostname,
    hours: w.hours,
    from: new Date(w.fromMs).toISOString(),
    to: new Date(w.toMs).toISOString(),
    hostnames: hostnames.map((h) => ({ ...h, ...(byHost.get(h.hostname) ?? { requests: 0, blocked: 0 }) })),
    requests: { total, allowed: total - blocked, blocked, blockedBy, serverErrors },
    bytes,
    series: { bucketSeconds: w.bucketMs / 1000, points: seriesPoints(facts.series, w) },
    risk: riskOf({
      requests: total,
      blocked,
      serverErrors,
      topSourceRequests: facts.byRequests[0]?.requests ?? 0,
      geoConcentration: geoIndex,
      anomalies: anomalies.map((a) => ({ severity: a.severity, ongoing: a.endedAt === null })),
    }),
    geo,
    geoConcentration: { index: geoIndex, topCountry: top ? top.country : null, topShare: top ? share(top.requests, knownTotal) : 0 },
    topSources: facts.byRequests.map(source),
    topSourcesByBytes: facts.byBytes.map(source),
    anomalies: [...anomalies],
  };
}

/** Every bucket of the window, oldest first, zeros where nothing happened. */
function seriesPoints(rows: readonly SeriesRow[], w: ReportWindow): ProxyLogs['series']['points'] {
  const byStart = new Map(rows.map((r) => [r.start, r]));
  const first = Math.floor(w.fromMs / w.bucketMs) * w.bucketMs;
  const points: ProxyLogs['series']['points'] = [];
  for (let start = first; start <= w.toMs; start += w.bucketMs) {
    const r = byStart.get(start);
    const requests = r?.requests ?? 0;
    const blocked = r?.blocked ?? 0;
    points.push({ start: new Date(start).toISOString(), requests, allowed: requests - blocked, blocked, bytes: r?.bytes ?? 0 });
  }
  return points;
}

function share(n: number, total: number): number {
  return total === 0 ? 0 : Math.round((n / total) * 1000) / 1000;
}

/**
 * The fallback's facts: each download usage event (requests that reached an asset) as one request on
 * the CDN hostname; a refusal status counts as blocked ('refused').
 */
export function factsFromUsage(events: readonly UsageEvent[], w: ReportWindow): TrafficFacts {
  const groups = new Map<string, TrafficGroupRow>();
  const series = new Map<number, SeriesRow>();
  const sources = new Map<string, SourceRow>();
  for (const e of events) {
    const decision = CDN_REFUSALS.includes(e.statusCode) ? 'refused' : 'allowed';
    const serverError = decision === 'allowed' && e.statusCode >= 500 ? 1 : 0;
    const key = `${e.hostname}\u0000${decision}\u0000${serverError}\u0000${e.country}`;
    const g = groups.get(key) ?? { host: e.hostname, decision, serverError, country: e.country, requests: 0, bytes: 0 };
    g.requests++;
    g.bytes += e.bytes;
    groups.set(key, g);
    const start = Math.floor(e.createdAt / w.bucketMs) * w.bucketMs;
    const p = series.get(start) ?? { start, requests: 0, blocked: 0, bytes: 0 };
    p.requests++;
    p.bytes += e.bytes;
    if (decision !== 'allowed') p.blocked++;
    series.set(start, p);
    if (e.clientIp !== '') {
      const s = sources.get(e.clientIp) ?? { ip: e.clientIp, requests: 0, bytes: 0, blocked: 0 };
      s.requests++;
      s.bytes += e.bytes;
      if (decision !== 'allowed') s.blocked++;
      sources.set(e.clientIp, s);
    }
  }
  const all = [...sources.values()];
  const byRequests = [...all].sort((a, b) => b.requests - a.requests || b.bytes - a.bytes || a.ip.localeCompare(b.ip)).slice(0, TOP_SOURCES);
  const byBytes = [...all].sort((a, b) => b.bytes - a.bytes || b.requests - a.requests || a.ip.localeCompare(b.ip)).slice(0, TOP_SOURCES);
  return { groups: [...groups.values()], series: [...series.values()], byRequests, byBytes };
}
