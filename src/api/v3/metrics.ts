// GET /api/v3/metrics (scope metrics:read): gateway-wide counters in the Prometheus text format 0.0.4:
// the CDN request log (buffered, flushed, dropped) and the edge cache (hits, misses, storage reads, sizes).
// GET /api/v3/cdn/cache (same scope): the edge cache's counters as JSON.
import { serverMetrics } from '../../metrics/cluster-metrics.js';
import { PROMETHEUS_CONTENT_TYPE } from '../../metrics/prometheus.js';
import type { RouteModule } from '../route-module.js';
import { Type } from '@sinclair/typebox';
import { CacheStats, ERROR_RESPONSES } from './schemas.js';

export const metricsRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.get(
    '/api/v3/cdn/cache',
    {
      onRequest: requireScope('metrics:read'),
      schema: {
        operationId: 'getCacheStats',
        summary: "The edge cache's counters and sizes",
        tags: ['metrics'],
        response: { 200: Type.Object({ success: Type.Boolean(), cache: CacheStats }), ...ERROR_RESPONSES },
      },
    },
    async () => ({ success: true, cache: ctx.cdnCache.stats() }),
  );

  const metricsSchema = {
    operationId: 'getMetrics',
    summary: 'Gateway-wide counters, in the Prometheus text format 0.0.4',
    tags: ['metrics'],
    response: {
      // A string with its own content type: Fastify sends it as it is (the schema is the document's).
      200: { description: 'Prometheus text', content: { 'text/plain': { schema: Type.String(), example: '# TYPE s3edge_cdn_cache_hits_total counter\ns3edge_cdn_cache_hits_total 42\n' } } },
      ...ERROR_RESPONSES,
    },
  };
  app.get('/api/v3/metrics', { onRequest: requireScope('metrics:read'), schema: metricsSchema }, async (_request, reply) => {
    void reply.type(PROMETHEUS_CONTENT_TYPE);
    // A cluster's worker answers for every worker (src/metrics/cluster-metrics.ts).
    return (await serverMetrics(ctx)).gateway;
  });
};
