// Prometheus metrics of every request the gateway answers, by surface (s3, api, cdn, proxy), operation
// (the S3 operation, the API route, the CDN or proxied method) and status, with latency histograms and
// body bytes; plus prom-client's standard process and Node.js metrics (CPU, memory, event loop lag,
// GC, handles). Rendered at GET /metrics (src/metrics/endpoint.ts) after the gateway's own figures.
// prom-client (with the OpenTelemetry API its default metrics load: about 90 modules) loads with the
// first request observed or the first scrape, not with the server: the observations made meanwhile are
// kept and counted once it has. Its process metrics count from then (the CPU total from the process's
// start: it is read from the process).
import type { Counter, Histogram, MetricObjectWithValues, MetricValue, Registry } from 'prom-client';

export type Surface = 's3' | 'api' | 'cdn' | 'proxy';

export interface RequestObservation {
  surface: Surface;
  /** A bounded set: S3 operation names, API route patterns, HTTP methods. */
  operation: string;
  /** null when the client left before an answer was started. */
  status: number | null;
  durationMs: number;
  bytesIn: number;
  bytesOut: number;
}

// From a cached 4 KiB GET (under a millisecond) to a multi-gigabyte upload.
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Methods kept as themselves on the method-labelled surfaces; anything else is `other` (labels stay bounded). */
const METHODS = new Set(['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'PATCH']);

export function methodLabel(method: string | undefined): string {
  return method !== undefined && METHODS.has(method) ? method : 'other';
}

/** The prom-client objects, made once the package has loaded. */
interface PromMetrics {
  registry: Registry;
  requests: Counter<'surface' | 'operation' | 'status'>;
  duration: Histogram<'surface' | 'operation'>;
  received: Counter<'surface'>;
  sent: Counter<'surface'>;
}

/** prom-client's Registry.PROMETHEUS_CONTENT_TYPE, for an answer given before it has loaded. */
const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

async function loadPromMetrics(): Promise<PromMetrics> {
  const { collectDefaultMetrics, Counter, Histogram, Registry } = await import('prom-client');
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    requests: new Counter({
      name: 's3edge_requests_total',
      help: 'Requests answered, by surface, operation and status (status "none": the client left before an answer).',
      labelNames: ['surface', 'operation', 'status'],
      registers,
    }),
    duration: new Histogram({
      name: 's3edge_request_duration_seconds',
      help: 'From the request to the end of its answer, by surface and operation.',
      labelNames: ['surface', 'operation'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    received: new Counter({ name: 's3edge_request_body_bytes_total', help: 'Request body bytes received, by surface.', labelNames: ['surface'], registers }),
    sent: new Counter({ name: 's3edge_response_body_bytes_total', help: 'Response body bytes sent, by surface.', labelNames: ['surface'], registers }),
  };
}

function record(m: PromMetrics, o: RequestObservation): void {
  m.requests.inc({ surface: o.surface, operation: o.operation, status: o.status === null ? 'none' : String(o.status) });
  m.duration.observe({ surface: o.surface, operation: o.operation }, o.durationMs / 1000);
  if (o.bytesIn > 0) m.received.inc({ surface: o.surface }, o.bytesIn);
  if (o.bytesOut > 0) m.sent.inc({ surface: o.surface }, o.bytesOut);
}

export class RequestMetrics {
  private prom: PromMetrics | undefined;
  private loading: Promise<PromMetrics> | undefined;
  /** Observations made before prom-client had loaded, counted once it has. */
  private early: RequestObservation[] = [];

  observe(o: RequestObservation): void {
    if (this.prom) return record(this.prom, o);
    this.early.push(o);
    void this.load();
  }

  /** prom-client and the metrics, loaded by the first call (every later one gets the same). */
  private load(): Promise<PromMetrics> {
    this.loading ??= loadPromMetrics().then((m) => {
      this.prom = m;
      for (const o of this.early) record(m, o);
      this.early = [];
      return m;
    });
    return this.loading;
  }

  get contentType(): string {
    return this.prom?.registry.contentType ?? PROMETHEUS_TEXT;
  }

  async text(): Promise<string> {
    return (await this.load()).registry.metrics();
  }

  /** The metrics as prom-client's JSON, for a cluster's supervisor to add up (cluster-metrics.ts). */
  async json(): Promise<MetricObjectWithValues<MetricValue<string>>[]> {
    return (await this.load()).registry.getMetricsAsJSON();
  }
}
