// GET /metrics and /api/v3/metrics of a cluster (docs/SCALE.md): whichever worker a scrape lands on
// answers for the whole server, so counters never jump between scrapes. The worker asks its supervisor,
// which collects every worker's snapshot (and adds its own background jobs' figures: GC, scrub), then
// adds them up: prom-client's AggregatorRegistry for the request and process metrics (sums, and the
// aggregator each default metric names), and per-name sums (or the max, for a database figure) for
// the gateway's own figures.
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { AppContext } from '../context.js';
import { gatewayMetrics, integrityMetrics, type IntegritySource } from './gateway.js';
import { renderPrometheus, type Metric } from './prometheus.js';

/** What one worker reports. */
export interface WorkerMetrics {
  prom: MetricObjectWithValues<MetricValue<string>>[];
  gateway: Metric[];
}

/** The whole cluster's answer. */
export interface ClusterMetrics {
  /** GET /metrics: request and process metrics, then the gateway's figures. */
  text: string;
  /** GET /api/v3/metrics: the gateway's figures only. */
  gateway: string;
}

// The requests' names live with the channel's (the supervisor names them without loading this module).
import { CLUSTER_METRICS } from '../cluster/ipc.js';
export { CLUSTER_METRICS, WORKER_METRICS } from '../cluster/ipc.js';

export async function workerMetrics(ctx: AppContext): Promise<WorkerMetrics> {
  return { prom: await ctx.requestMetrics.json(), gateway: await gatewayMetrics(ctx) };
}

/** The gateway figures of every process added up by name, in the first report's order. */
export function addGatewayMetrics(reports: readonly Metric[][]): Metric[] {
  const byName = new Map<string, Metric>();
  for (const report of reports) {
    for (const m of report) {
      const seen = byName.get(m.name);
      if (!seen) byName.set(m.name, { ...m });
      else seen.value = m.aggregate === 'max' ? Math.max(seen.value, m.value) : seen.value + m.value;
    }
  }
  return [...byName.values()];
}

/** Adds up the workers' reports and the supervisor's own gateway figures. */
export async function clusterMetrics(workers: readonly WorkerMetrics[], supervisorGateway: Metric[]): Promise<ClusterMetrics> {
  const gateway = renderPrometheus([
    ...addGatewayMetrics([supervisorGateway, ...workers.map((w) => w.gateway)]),
    { name: 's3edge_workers_reporting', type: 'gauge', value: workers.length, help: 'Workers whose figures this answer adds up (the others were starting or stopping).' },
  ]);
  // Loaded when first scraped: the supervisor serves nothing else of prom-client.
  const { AggregatorRegistry } = await import('prom-client');
  const registry = AggregatorRegistry.aggregate(workers.map((w) => w.prom));
  return { text: (await registry.metrics()) + gateway, gateway };
}

/** The background jobs' figures: the supervisor's share of a cluster's answer (the rest is the workers'). */
const JOB_METRIC = /^s3edge_(scrub_|blob_gc_|corrupt_blobs$)/;

export async function jobMetrics(ctx: IntegritySource): Promise<Metric[]> {
  return (await integrityMetrics(ctx)).filter((m) => JOB_METRIC.test(m.name));
}

/** This server's metrics: the whole cluster's from a worker (its own if the supervisor does not answer), else this process's. */
export async function serverMetrics(ctx: AppContext): Promise<ClusterMetrics> {
  if (ctx.channel) {
    try {
      return await ctx.channel.request<ClusterMetrics>(CLUSTER_METRICS, null);
    } catch (err) {
      ctx.log.warn({ err }, 'metrics: the supervisor did not answer; this worker answers with its own figures');
    }
  }
  const gateway = renderPrometheus(await gatewayMetrics(ctx));
  return { text: (await ctx.requestMetrics.text()) + gateway, gateway };
}
