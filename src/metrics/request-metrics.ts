// Prometheus metrics of every request the gateway answers, by surface (s3, api, cdn, proxy), operation
// (the S3 operation, the API route, the CDN or proxied method) and status, with latency histograms and
// body bytes; plus prom-client's standard process and Node.js metrics (CPU, memory, event loop lag,
// GC, handles). Rendered at GET /metrics (src/metrics/endpoint.ts) after the gateway's own figures.
//
// Counted exactly, published when read: a request adds to plain numbers of its series (surface,
// operation, status), found through nested maps without building a key, and a scrape folds them into
// the metrics (prom-client's `collect`). prom-client hashes and validates a label set on every inc()
// or observe(), several µs a request on the CDN's and S3's hot paths; here that happens once per
// series and scrape. So prom-client itself (with the OpenTelemetry API its default metrics load: about
// 90 modules) loads with the first scrape, not with the server; its process metrics count from then
// (the CPU total from the process's start: it is read from the process).
import type { Counter, Metric, MetricObjectWithValues, MetricValue, MetricValueWithName, Registry } from 'prom-client';

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

/** prom-client's Registry.PROMETHEUS_CONTENT_TYPE, for an answer given before it has loaded. */
const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

/** What one series has counted since the last scrape. */
interface Pending {
  readonly labels: { surface: Surface; operation: string; status: string };
  requests: number;
  bytesIn: number;
  bytesOut: number;
}

/** One (surface, operation) latency histogram: counts per bucket (not cumulative), sum and count. */
interface Buckets {
  readonly labels: { surface: Surface; operation: string };
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

const DURATION_NAME = 's3edge_request_duration_seconds';

/**
 * The latency histogram, as prom-client's Histogram writes it (`_bucket` with `le`, cumulative, `+Inf`,
 * `_sum`, `_count`; aggregated across workers by summing), observed without a label lookup: the caller
 * holds its series. A metric of prom-client's registry by the shape the registry reads.
 */
class DurationHistogram {
  readonly name = DURATION_NAME;
  readonly help = 'From the request to the end of its answer, by surface and operation.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Buckets>();

  seriesOf(surface: Surface, operation: string): Buckets {
    const id = `${surface}\u0000${operation}`;
    let s = this.series.get(id);
    if (s === undefined) {
      s = { labels: { surface, operation }, counts: new Float64Array(DURATION_BUCKETS.length), sum: 0, count: 0 };
      this.series.set(id, s);
    }
    return s;
  }

  static observe(s: Buckets, seconds: number): void {
    s.sum += seconds;
    s.count++;
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (seconds <= (DURATION_BUCKETS[i] as number)) {
        s.counts[i] = (s.counts[i] as number) + 1;
        return;
      }
    }
  }

  /** The shape prom-client's Registry reads (getMetricsAsJSON, metrics(); AggregatorRegistry). */
  async get(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    const values: MetricValueWithName<string>[] = [];
    const bucket = `${DURATION_NAME}_bucket`;
    for (const s of this.series.values()) {
      let acc = 0;
      DURATION_BUCKETS.forEach((le, i) => {
        acc += s.counts[i] as number;
        values.push({ labels: { ...s.labels, le }, value: acc, metricName: bucket });
      });
      values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: bucket });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${DURATION_NAME}_sum` });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${DURATION_NAME}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values } as unknown as MetricObjectWithValues<MetricValueWithName<string>>;
  }

  reset(): void {
    this.series.clear();
  }
}

/** A request's series: its counters' pending figures and its latency histogram. */
interface Series {
  pending: Pending;
  buckets: Buckets;
}

/** The prom-client side, made once the package has loaded. */
interface PromMetrics {
  registry: Registry;
  requests: Counter<'surface' | 'operation' | 'status'>;
  received: Counter<'surface'>;
  sent: Counter<'surface'>;
}

export class RequestMetrics {
  private readonly duration = new DurationHistogram();
  private readonly series = new Map<Surface, Map<string, Map<number | null, Series>>>();
  private readonly all: Series[] = [];
  private prom: PromMetrics | undefined;
  private loading: Promise<PromMetrics> | undefined;

  observe(o: RequestObservation): void {
    this.count(o.surface, o.operation, o.status, o.durationMs, o.bytesIn, o.bytesOut);
  }

  /** observe() without the object: the hot paths' (one request, one call). */
  count(surface: Surface, operation: string, status: number | null, durationMs: number, bytesIn: number, bytesOut: number): void {
    const series = this.seriesOf(surface, operation, status);
    series.pending.requests++;
    if (bytesIn > 0) series.pending.bytesIn += bytesIn;
    if (bytesOut > 0) series.pending.bytesOut += bytesOut;
    DurationHistogram.observe(series.buckets, durationMs / 1000);
  }

  /** Bounded as the labels are (surfaces x operations x statuses). Nested maps: no key string made per request. */
  private seriesOf(surface: Surface, operation: string, status: number | null): Series {
    let bySurface = this.series.get(surface);
    if (bySurface === undefined) this.series.set(surface, (bySurface = new Map()));
    let byOperation = bySurface.get(operation);
    if (byOperation === undefined) bySurface.set(operation, (byOperation = new Map()));
    let series = byOperation.get(status);
    if (series === undefined) {
      series = {
        pending: { labels: { surface, operation, status: status === null ? 'none' : String(status) }, requests: 0, bytesIn: 0, bytesOut: 0 },
        buckets: this.duration.seriesOf(surface, operation),
      };
      byOperation.set(status, series);
      this.all.push(series);
    }
    return series;
  }

  /** prom-client and the metrics, loaded by the first scrape (every later one gets the same). */
  private load(): Promise<PromMetrics> {
    this.loading ??= import('prom-client').then(({ collectDefaultMetrics, Counter, Registry }) => {
      const registry = new Registry();
      collectDefaultMetrics({ register: registry });
      const registers = [registry];
      // Whichever counter a scrape reads first folds every series' pending figures into all three.
      const collect = (): void => this.publish();
      const requests = new Counter({
        name: 's3edge_requests_total',
        help: 'Requests answered, by surface, operation and status (status "none": the client left before an answer).',
        labelNames: ['surface', 'operation', 'status'],
        registers,
        collect,
      });
      registry.registerMetric(this.duration as unknown as Metric);
      const received = new Counter({ name: 's3edge_request_body_bytes_total', help: 'Request body bytes received, by surface.', labelNames: ['surface'], registers, collect });
      const sent = new Counter({ name: 's3edge_response_body_bytes_total', help: 'Response body bytes sent, by surface.', labelNames: ['surface'], registers, collect });
      this.prom = { registry, requests, received, sent };
      return this.prom;
    });
    return this.loading;
  }

  /** Moves what the series counted since the last scrape into the counters. */
  private publish(): void {
    const prom = this.prom;
    if (!prom) return;
    for (const { pending: p } of this.all) {
      if (p.requests > 0) prom.requests.inc(p.labels, p.requests);
      if (p.bytesIn > 0) prom.received.inc({ surface: p.labels.surface }, p.bytesIn);
      if (p.bytesOut > 0) prom.sent.inc({ surface: p.labels.surface }, p.bytesOut);
      p.requests = 0;
      p.bytesIn = 0;
      p.bytesOut = 0;
    }
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
