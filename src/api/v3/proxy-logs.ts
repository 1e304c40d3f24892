// GET /api/v3/cdn/proxy-logs and GET /api/v3/cdn/anomalies (scope usage:read): a user's edge traffic
// and anomaly events (src/proxy/report.ts). `hostname` names one of the user's hostnames (a project
// hostname or the CDN hostname; another is 404), `hours` the window (default 24, at most the request
// log's retention; lenient like page and limit: a bad value takes the default).
import { Type } from '@sinclair/typebox';
import { notFound } from '../errors.js';
import { intParam } from '../query.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { ANOMALIES_DEFAULT_LIMIT, ANOMALIES_MAX_LIMIT, DEFAULT_HOURS, ProxyReports, type ReportQuery } from '../../proxy/report.js';
import { Anomaly, ERROR_RESPONSES, ProxyLogs } from './schemas.js';

type Query = Record<string, unknown>;

const unknownHostname = (): Error => notFound('No such hostname among yours');

export const proxyLogRoutes: RouteModule = (app, { ctx, requireScope }) => {
  const reports = new ProxyReports(ctx);
  const reportQuery = (query: Query): ReportQuery => {
    const raw = typeof query.hostname === 'string' ? query.hostname.trim().toLowerCase().replace(/\.$/, '') : '';
    return { hostname: raw === '' ? null : raw, hours: intParam(query.hours, DEFAULT_HOURS, 1, reports.maxHours) };
  };

  app.get<{ Querystring: Query }>(
    '/api/v3/cdn/proxy-logs',
    { onRequest: requireScope('usage:read'), schema: { response: { 200: Type.Object({ success: Type.Boolean(), data: ProxyLogs }), ...ERROR_RESPONSES } } },
    async (request) => {
      const data = await reports.report(principalOf(request).userId, reportQuery(request.query));
      if (!data) throw unknownHostname();
      return { success: true, data };
    },
  );

  app.get<{ Querystring: Query }>(
    '/api/v3/cdn/anomalies',
    {
      onRequest: requireScope('usage:read'),
      schema: { response: { 200: Type.Object({ success: Type.Boolean(), anomalies: Type.Array(Anomaly) }), ...ERROR_RESPONSES } },
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
