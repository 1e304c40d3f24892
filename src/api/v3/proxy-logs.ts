// GET /api/v3/cdn/proxy-logs (scope usage:read): edge traffic of the last 24 hours (src/proxy).
import { Type } from '@sinclair/typebox';
import { WINDOW_MS } from '../../analytics/usage-fallback.js';
import { buildProxyLogs } from '../../proxy/proxy-logs.js';
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
      const events = ctx.repos.usage.since(userId, 'download', from);
      return { success: true, data: buildProxyLogs(events, from, now, ctx.config.cdn.hostname) };
    },
  );
};
