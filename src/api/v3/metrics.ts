// GET /api/v3/metrics (scope metrics:read): gateway-wide counters in the Prometheus text format 0.0.4:
// the CDN request log (buffered, flushed, dropped) and, when the edge cache reports them, its counters.
import type { AppContext } from '../../context.js';
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus, snakeCase, type Metric } from '../../metrics/prometheus.js';
import type { RouteModule } from '../plugin.js';
import { ERROR_RESPONSES } from './schemas.js';

/** Edge cache counters we know the meaning of; any other numeric field is exported untyped. */
const CACHE_METRICS = new Map<string, Omit<Metric, 'value'>>([
  ['hits', { name: 's3edge_cdn_cache_hits_total', type: 'counter', help: 'CDN requests answered from the edge cache.' }],
  ['misses', { name: 's3edge_cdn_cache_misses_total', type: 'counter', help: 'CDN requests the edge cache had to fetch.' }],
  ['storageReads', { name: 's3edge_cdn_cache_storage_reads_total', type: 'counter', help: 'Reads of the storage backend by the edge cache.' }],
  ['memoryBytes', { name: 's3edge_cdn_cache_memory_bytes', type: 'gauge', help: 'Bytes held by the memory tier of the edge cache.' }],
  ['diskBytes', { name: 's3edge_cdn_cache_disk_bytes', type: 'gauge', help: 'Bytes held by the disk tier of the edge cache.' }],
]);

/**
 * The edge cache's counters, if it has a stats() method.
 * TODO(merge): the edge cache branch adds EdgeCache.stats(); once merged, call it typed and drop the probe.
 */
function edgeStats(edge: object): Record<string, number> {
  const stats = (edge as { stats?: unknown }).stats;
  if (typeof stats !== 'function') return {};
  const value: unknown = stats.call(edge);
  const out: Record<string, number> = {};
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) if (typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  }
  return out;
}

export function collectMetrics(ctx: AppContext): Metric[] {
  const log = ctx.requestLog.stats();
  const metrics: Metric[] = [
    { name: 's3edge_cdn_log_buffered', type: 'gauge', value: log.buffered, help: 'CDN request log records waiting for the next flush.' },
    { name: 's3edge_cdn_log_buffer_capacity', type: 'gauge', value: log.capacity, help: 'Records the request log buffer holds before it drops (cdn.log.bufferSize).' },
    { name: 's3edge_cdn_log_dropped_total', type: 'counter', value: log.dropped, help: 'CDN request log records lost because the buffer was full (or the log closed).' },
    { name: 's3edge_cdn_log_flushed_total', type: 'counter', value: log.flushed, help: 'CDN request log records written to the database.' },
    { name: 's3edge_cdn_log_flushes_total', type: 'counter', value: log.flushes, help: 'Flush transactions of the CDN request log.' },
    { name: 's3edge_cdn_log_flush_errors_total', type: 'counter', value: log.flushErrors, help: 'Flushes of the CDN request log that failed (records kept for the next).' },
  ];
  for (const [key, value] of Object.entries(edgeStats(ctx.edge))) {
    const known = CACHE_METRICS.get(key);
    metrics.push(
      known
        ? { ...known, value }
        : { name: `s3edge_cdn_cache_${snakeCase(key)}`, type: 'untyped', value, help: `Edge cache statistic ${key}.` },
    );
  }
  return metrics;
}

export const metricsRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.get('/api/v3/metrics', { onRequest: requireScope('metrics:read'), schema: { response: { ...ERROR_RESPONSES } } }, async (_request, reply) => {
    void reply.type(PROMETHEUS_CONTENT_TYPE);
    return renderPrometheus(collectMetrics(ctx));
  });
};
