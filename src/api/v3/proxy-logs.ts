// GET /api/v3/cdn/proxy-logs and GET /api/v3/cdn/anomalies (scope usage:read): a user's edge traffic
// and anomaly events (src/proxy/report.ts). `hostname` names one of the user's hostnames (a project
// hostname or the CDN hostname; another is 404), `hours` the window (default 24, at most the request
// log's retention; lenient like page and limit: a bad value takes the default).
//
// GET /api/v3/cdn/proxy-logs/requests: the request log itself, newest first, a page at a time (`cursor`
// from the previous page's `nextCursor`), filtered by hostname, decision (allowed, blocked, a rule or
// refused), ip, country (ISO code, `unknown`), path (a prefix) and the window `from`..`to` (ISO 8601).
// Filters are strict: a value that cannot match anything is a 400 naming it, not an empty page.
// GET /api/v3/cdn/anomalies/:id: one event and the sources and countries of its span of traffic.
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { badRequest, notFound } from '../errors.js';
import { cursorParam, intParam, textParam, windowParams } from '../query.js';
import { principalOf, type RouteModule } from '../route-module.js';
import {
  ANOMALIES_DEFAULT_LIMIT, ANOMALIES_MAX_LIMIT, DEFAULT_HOURS, ProxyReports, REQUESTS_DEFAULT_LIMIT, REQUESTS_MAX_LIMIT,
  type ReportQuery, type RequestsQuery,
} from '../../proxy/report.js';
import { BLOCK_REASONS, CREDITS_DEPLETED } from '../../db/repos/hostname-model.js';
import type { RequestFilter } from '../../db/repos/edge-traffic.js';
import { Anomaly, AnomalyDetail, ERROR_RESPONSES, LoggedRequests, ProxyLogs } from './schemas.js';

type Query = Record<string, unknown>;

const TAGS = ['proxy-logs'];
const hostnameParam = Type.Optional(Type.String({ description: "One of the caller's hostnames (a project hostname or the CDN hostname; another is 404); default all" }));
const hoursParam = Type.Optional(Type.Integer({ minimum: 1, default: DEFAULT_HOURS, description: `The window in hours up to now; an invalid value means ${DEFAULT_HOURS}, above the log's retention means its retention` }));
const timeParam = (what: string) => Type.Optional(Type.String({ format: 'date-time', description: what }));
const ReportQuery = Type.Object({ hostname: hostnameParam, hours: hoursParam });
const RequestsQuery = Type.Object({
  hostname: hostnameParam,
  from: timeParam(`ISO 8601; default ${DEFAULT_HOURS} hours before to`),
  to: timeParam('ISO 8601; default now'),
  decision: Type.Optional(Type.String({ description: `allowed, blocked, refused, ${CREDITS_DEPLETED} (the owner's credits ran out) or a rule: ${BLOCK_REASONS.join(', ')}` })),
  ip: Type.Optional(Type.String({ description: 'One IPv4 or IPv6 address' })),
  country: Type.Optional(Type.String({ description: "A two-letter ISO 3166 code, or 'unknown'" })),
  path: Type.Optional(Type.String({ description: 'A path prefix, starting with /' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: REQUESTS_MAX_LIMIT, default: REQUESTS_DEFAULT_LIMIT })),
  cursor: Type.Optional(Type.String({ description: "The previous page's nextCursor" })),
});
const AnomaliesQuery = Type.Object({
  hostname: hostnameParam,
  hours: hoursParam,
  state: Type.Optional(Type.Union([Type.Literal('all'), Type.Literal('open')], { default: 'all' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ANOMALIES_MAX_LIMIT, default: ANOMALIES_DEFAULT_LIMIT })),
});
const AnomalyParams = Type.Object({ id: Type.String() });

const unknownHostname = (): Error => notFound('No such hostname among yours');
const DECISIONS = new Set<string>(['allowed', 'blocked', 'refused', CREDITS_DEPLETED, ...BLOCK_REASONS]);

function hostnameOf(query: Query): string | null {
  const raw = typeof query.hostname === 'string' ? query.hostname.trim().toLowerCase().replace(/\.$/, '') : '';
  return raw === '' ? null : raw;
}

/** The filters of a request log listing, checked. */
function requestFilter(query: Query): RequestFilter {
  const filter: RequestFilter = {};
  const decision = textParam(query, 'decision');
  if (decision !== undefined) {
    if (!DECISIONS.has(decision)) throw badRequest(`decision must be one of ${[...DECISIONS].join(', ')}`);
    filter.decision = decision;
  }
  const ip = textParam(query, 'ip');
  if (ip !== undefined) {
    if (isIP(ip) === 0) throw badRequest('ip must be one IPv4 or IPv6 address');
    filter.ip = ip;
  }
  const country = textParam(query, 'country');
  if (country !== undefined) {
    if (country.toLowerCase() === 'unknown') filter.country = '';
    else if (/^[A-Za-z]{2}$/.test(country)) filter.country = country.toUpperCase();
    else throw badRequest("country must be a two-letter ISO 3166 code, like DE, or 'unknown'");
  }
  const path = textParam(query, 'path');
  if (path !== undefined) {
    if (!path.startsWith('/') || path.length > 1024) throw badRequest('path must start with / (it matches the paths that begin with it) and be at most 1024 characters');
    filter.pathPrefix = path;
  }
  return filter;
}

export const proxyLogRoutes: RouteModule = (app, { ctx, requireScope }) => {
  const reports = new ProxyReports(ctx);
  const reportQuery = (query: Query): ReportQuery => ({ hostname: hostnameOf(query), hours: intParam(query.hours, DEFAULT_HOURS, 1, reports.maxHours) });
  const requestsQuery = (query: Query): RequestsQuery => {
    const { fromMs, toMs } = windowParams(query, ctx.clock().getTime(), (to) => to - DEFAULT_HOURS * 3_600_000 + 1);
    return { hostname: hostnameOf(query), fromMs, toMs, filter: requestFilter(query), cursor: cursorParam(query), limit: intParam(query.limit, REQUESTS_DEFAULT_LIMIT, 1, REQUESTS_MAX_LIMIT) };
  };

  app.get<{ Querystring: Query }>(
    '/api/v3/cdn/proxy-logs',
    {
      onRequest: requireScope('usage:read'),
      schema: {
        operationId: 'getProxyLogs',
        summary: 'Edge traffic of the caller\'s hostnames: allowed and blocked counts, risk index, GeoIP concentration, top sources, anomalies',
        tags: TAGS,
        documentedQuery: ReportQuery,
        response: { 200: Type.Object({ success: Type.Boolean(), data: ProxyLogs }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const data = await reports.report(principalOf(request).userId, reportQuery(request.query));
      if (!data) throw unknownHostname();
      return { success: true, data };
    },
  );

  app.get<{ Querystring: Query }>(
    '/api/v3/cdn/proxy-logs/requests',
    {
      onRequest: requireScope('usage:read'),
      schema: {
        operationId: 'listLoggedRequests',
        summary: 'A page of the request log, newest first (filters are strict: a value that matches nothing is a 400)',
        tags: TAGS,
        documentedQuery: RequestsQuery,
        response: { 200: Type.Object({ success: Type.Boolean(), data: LoggedRequests }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const data = await reports.requests(principalOf(request).userId, requestsQuery(request.query));
      if (!data) throw unknownHostname();
      return { success: true, data };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/v3/cdn/anomalies/:id',
    {
      onRequest: requireScope('usage:read'),
      schema: {
        operationId: 'getAnomaly',
        summary: 'One anomaly event and the sources and countries of its span of traffic',
        tags: TAGS,
        params: AnomalyParams,
        response: { 200: Type.Object({ success: Type.Boolean(), data: AnomalyDetail }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const data = await reports.anomaly(principalOf(request).userId, request.params.id);
      if (!data) throw notFound('No such anomaly among yours');
      return { success: true, data };
    },
  );

  app.get<{ Querystring: Query }>(
    '/api/v3/cdn/anomalies',
    {
      onRequest: requireScope('usage:read'),
      schema: {
        operationId: 'listAnomalies',
        summary: "Anomaly events on the caller's hostnames, newest first",
        tags: TAGS,
        documentedQuery: AnomaliesQuery,
        response: { 200: Type.Object({ success: Type.Boolean(), anomalies: Type.Array(Anomaly) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const q = request.query;
      const anomalies = await reports.anomalies(principalOf(request).userId, {
        ...reportQuery(q),
        state: q.state === 'open' ? 'open' : 'all',
        limit: intParam(q.limit, ANOMALIES_DEFAULT_LIMIT, 1, ANOMALIES_MAX_LIMIT),
      });
      if (!anomalies) throw unknownHostname();
      return { success: true, anomalies };
    },
  );
};
