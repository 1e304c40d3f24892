// Proxy logs and anomaly events for one user (GET /api/v3/cdn/proxy-logs, GET /api/v3/cdn/anomalies):
// which hostnames are theirs, the window, and the reads behind buildProxyLogs. The request log is
// flushed and the anomaly monitor evaluated first, so a report includes the requests just served and
// the buckets that have just closed.
import type { Anomaly, AnomalyDetail, LoggedRequests, ProxyLogs } from '../api/v3/schemas.js';
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import type { RequestLog } from '../analytics/request-log.js';
import type { TrafficMonitor } from './detect/monitor.js';
import type { AnomalyEvent } from '../db/repos/anomaly-event.js';
import { EdgeTrafficRepo, type EdgeTrafficQuery, type RequestFilter } from '../db/repos/edge-traffic.js';
import { cursorText, type PageCursor } from '../db/repos/page-cursor.js';
import { bucketMsFor, buildProxyLogs, factsFromUsage, sourceView, TOP_SOURCES, type ReportedHostname, type ReportWindow } from './proxy-logs.js';
import { countryName } from '../analytics/country-names.js';

export const DEFAULT_HOURS = 24;
export const ANOMALIES_DEFAULT_LIMIT = 100;
export const ANOMALIES_MAX_LIMIT = 500;

export interface ReportQuery {
  /** A hostname of the user's (a project hostname or the CDN hostname); null: all of them. */
  hostname: string | null;
  hours: number;
}

export const REQUESTS_DEFAULT_LIMIT = 50;
export const REQUESTS_MAX_LIMIT = 500;
/** Sources and countries an anomaly's detail names. */
const ANOMALY_SOURCES = 5;
/** More than there are ISO 3166 codes (and the unknown one): no country left out. */
const COUNTRY_CODES = 300;

/** A page of the request log: the window (Unix ms, both ends included), a filter, where to go on from. */
export interface RequestsQuery {
  hostname: string | null;
  fromMs: number;
  toMs: number;
  filter: RequestFilter;
  cursor: PageCursor | null;
  limit: number;
}

export function anomalyView(e: AnomalyEvent): Anomaly {
  return {
    id: e.id,
    hostname: e.hostname,
    kind: e.kind,
    severity: e.severity,
    startedAt: new Date(e.startedAt).toISOString(),
    endedAt: e.endedAt === null ? null : new Date(e.endedAt).toISOString(),
    observed: e.observed,
    baseline: e.baseline,
    detail: e.detail,
  };
}

/** What the reports read (the context has it): the request log flushed first, the monitor's open events evaluated. */
export interface ProxyReportDeps {
  config: Pick<Config, 'cdn'>;
  repos: Pick<Repos, 'store' | 'projects' | 'usage' | 'anomalies' | 'hostnameTls'>;
  requestLog: Pick<RequestLog, 'flush'>;
  edgeMonitor: Pick<TrafficMonitor, 'evaluate'>;
  clock: () => Date;
}

export class ProxyReports {
  private readonly traffic: EdgeTrafficRepo;

  constructor(private readonly ctx: ProxyReportDeps) {
    this.traffic = new EdgeTrafficRepo(ctx.repos.store);
  }

  /** The longest window a report may ask for: what the request log keeps. */
  get maxHours(): number {
    return this.ctx.config.cdn.log.retentionDays * 24;
  }

  /** The user's project hostnames (verified or not) and the CDN hostname. */
  async hostnamesOf(userId: string): Promise<ReportedHostname[]> {
    const tls = await this.ctx.repos.hostnameTls.ofUser(userId);
    const projects = (await this.ctx.repos.projects.hostnamesOfUser(userId)).map((h) => {
      const t = tls.get(h.id);
      return {
        hostname: h.hostname,
        kind: 'project' as const,
        projectId: h.projectId,
        verified: h.verifiedAt !== null,
        https: {
          state: t?.state ?? 'pending',
          certificate: t?.certificate?.source ?? null,
          notAfter: t?.certificate ? new Date(t.certificate.notAfter).toISOString() : null,
          lastError: t?.lastError ?? null,
        },
      };
    });
    return [...projects, { hostname: this.ctx.config.cdn.hostname, kind: 'cdn', projectId: null, verified: true, https: null }];
  }

  /** Whether `hostname` is one of the user's project hostnames or the CDN hostname (no TLS rows read). */
  private async isTheirs(userId: string, hostname: string): Promise<boolean> {
    return hostname === this.ctx.config.cdn.hostname || (await this.ctx.repos.projects.hostnamesOfUser(userId)).some((h) => h.hostname === hostname);
  }

  /** Undefined when `q.hostname` is not one of the user's. */
  async report(userId: string, q: ReportQuery): Promise<ProxyLogs | undefined> {
    const hostnames = await this.hostnamesOf(userId);
    if (q.hostname !== null && !hostnames.some((h) => h.hostname === q.hostname)) return undefined;
    const listed = q.hostname === null ? hostnames : hostnames.filter((h) => h.hostname === q.hostname);
    const w = this.window(q);
    const query: EdgeTrafficQuery = { ownerId: userId, fromMs: w.fromMs, toMs: w.toMs, hostname: q.hostname ?? '' };
    await this.ctx.requestLog.flush();
    const anomalies = await this.events(userId, query, 'all', ANOMALIES_MAX_LIMIT);
    const groups = await this.traffic.groups(query);
    if (groups.length > 0) {
      const facts = {
        groups,
        series: await this.traffic.series(query, w.bucketMs),
        byRequests: await this.traffic.topSources(query, 'requests', TOP_SOURCES),
        byBytes: await this.traffic.topSources(query, 'bytes', TOP_SOURCES),
      };
      return buildProxyLogs(facts, true, w, listed, anomalies);
    }
    // Nothing in the log: downloads recorded as usage events (CDN traffic only), if the CDN is asked for.
    const cdnAsked = q.hostname === null || q.hostname === this.ctx.config.cdn.hostname;
    const downloads = cdnAsked ? (await this.ctx.repos.usage.since(userId, 'download', w.fromMs)).filter((e) => e.createdAt <= w.toMs) : [];
    return buildProxyLogs(factsFromUsage(downloads, w), false, w, listed, anomalies);
  }

  /** Anomaly events overlapping the window, newest first; undefined when the hostname is not one of the user's. */
  async anomalies(userId: string, q: ReportQuery & { state: 'open' | 'all'; limit: number }): Promise<Anomaly[] | undefined> {
    if (q.hostname !== null && !(await this.isTheirs(userId, q.hostname))) return undefined;
    const w = this.window(q);
    return this.events(userId, { ownerId: userId, fromMs: w.fromMs, toMs: w.toMs, hostname: q.hostname ?? '' }, q.state, q.limit);
  }

  /** The window's requests, newest first; undefined when the hostname is not one of the user's. */
  async requests(userId: string, q: RequestsQuery): Promise<LoggedRequests | undefined> {
    if (q.hostname !== null && !(await this.isTheirs(userId, q.hostname))) return undefined;
    const fromMs = Math.max(q.fromMs, this.ctx.clock().getTime() - this.maxHours * 3_600_000);
    await this.ctx.requestLog.flush();
    const query: EdgeTrafficQuery = { ownerId: userId, fromMs, toMs: q.toMs, hostname: q.hostname ?? '' };
    // One more than asked says whether there is a next page.
    const rows = await this.traffic.requests(query, q.filter, q.cursor, q.limit + 1);
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      from: new Date(fromMs).toISOString(),
      to: new Date(q.toMs).toISOString(),
      requests: page.map((r) => ({ ...r, time: new Date(r.time).toISOString(), countryName: r.country === '' ? 'Unknown' : countryName(r.country) })),
      nextCursor: rows.length > q.limit && last ? cursorText(last) : null,
    };
  }

  /** One anomaly with what its span of traffic came from; undefined for another user's or none. */
  async anomaly(userId: string, id: string): Promise<AnomalyDetail | undefined> {
    await this.ctx.edgeMonitor.evaluate();
    const event = await this.ctx.repos.anomalies.byId(userId, id);
    if (!event) return undefined;
    await this.ctx.requestLog.flush();
    const toMs = event.endedAt ?? this.ctx.clock().getTime();
    const query: EdgeTrafficQuery = { ownerId: userId, fromMs: event.startedAt, toMs, hostname: event.hostname };
    // Every country of the span (a few hundred at most): their sum is the span's requests, the top ones are shown.
    const [sources, allCountries] = await Promise.all([this.traffic.topSources(query, 'requests', ANOMALY_SOURCES), this.traffic.countries(query, COUNTRY_CODES)]);
    const total = allCountries.reduce((n, c) => n + c.requests, 0);
    const countries = allCountries.slice(0, ANOMALY_SOURCES);
    return {
      anomaly: anomalyView(event),
      requests: total,
      sources: sources.map((r) => sourceView(r, total)),
      countries: countries.map((c) => ({ code: c.country, country: c.country === '' ? 'Unknown' : countryName(c.country), requests: c.requests, blocked: c.blocked, share: total === 0 ? 0 : c.requests / total })),
    };
  }

  private async events(userId: string, q: EdgeTrafficQuery, state: 'open' | 'all', limit: number): Promise<Anomaly[]> {
    // A cluster worker's monitor asks the supervisor's (which sees every worker's traffic) to evaluate.
    await this.ctx.edgeMonitor.evaluate();
    const events = await this.ctx.repos.anomalies.list({
      ownerId: userId,
      fromMs: q.fromMs,
      toMs: q.toMs,
      limit,
      ...(q.hostname === '' ? {} : { hostname: q.hostname }),
    });
    return (state === 'open' ? events.filter((e) => e.endedAt === null) : events).map(anomalyView);
  }

  private window(q: ReportQuery): ReportWindow {
    const toMs = this.ctx.clock().getTime();
    const hours = Math.min(q.hours, this.maxHours);
    return { fromMs: toMs - hours * 3_600_000 + 1, toMs, hours, bucketMs: bucketMsFor(hours), hostname: q.hostname };
  }
}
