// GET /api/v3/cdn/proxy-logs (scope usage:read): edge traffic of the last 24 hours (src/proxy), from the
// CDN request log (buffer flushed first) when it has the user's requests, else from usage events.
import { Type } from '@sinclair/typebox';
import { WINDOW_MS } from '../../analytics/usage-fallback.js';
import { buildProxyLogs, buildProxyLogsFromLog, TOP_SOURCES } from '../../proxy/proxy-logs.js';
import { principalOf, type RouteModule } from '../plugin.js';
import { ERROR_RESPONSES, ProxyLogs } from './schemas.js';

export const proxyLogRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.get(
    '/api/v3/cdn/proxy-logs',
    { onRequest: requireScope('usage:read'), schema: { response: { 200: Type.Object({ success: Type.Boolean(), data: ProxyLogs }), ...ERROR_RESPONSES } } },
    async (request) => {
      const { userId } = principalOf(request);
      const now = ctx.clock().getTime();
      const from = now - WINDOW_MS + 1;
      const hostname = ctx.config.cdn.hostname;
      ctx.requestLog.flush();
      const fromLog = buildProxyLogsFromLog(ctx.requestLog.traffic.ownerRequests(userId, from, now, TOP_SOURCES), from, now, hostname);
      const data = fromLog ?? buildProxyLogs(ctx.repos.usage.since(userId, 'download', from), from, now, hostname);
      return { success: true, data };
    },
  );
};
