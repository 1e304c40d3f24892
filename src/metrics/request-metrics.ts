// Prometheus metrics of every request the gateway answers, by surface (s3, api, cdn, proxy), operation
// (the S3 operation, the API route, the CDN or proxied method) and status, with latency histograms and
// body bytes; plus prom-client's standard process and Node.js metrics (CPU, memory, event loop lag,
// GC, handles). Rendered at GET /metrics (src/metrics/endpoint.ts) after the gateway's own figures.
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

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

export class RequestMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'surface' | 'operation' | 'status'>;
  private readonly duration: Histogram<'surface' | 'operation'>;
  private readonly received: Counter<'surface'>;
  private readonly sent: Counter<'surface'>;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.requests = new Counter({
      name: 's3edge_requests_total',
      help: 'Requests answered, by surface, operation and status (status "none": the client left before an answer).',
      labelNames: ['surface', 'operation', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 's3edge_request_duration_seconds',
      help: 'From the request to the end of its answer, by surface and operation.',
      labelNames: ['surface', 'operation'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.received = new Counter({ name: 's3edge_request_body_bytes_total', help: 'Request body bytes received, by surface.', labelNames: ['surface'], registers });
    this.sent = new Counter({ name: 's3edge_response_body_bytes_total', help: 'Response body bytes sent, by surface.', labelNames: ['surface'], registers });
  }

  observe(o: RequestObservation): void {
    this.requests.inc({ surface: o.surface, operation: o.operation, status: o.status === null ? 'none' : String(o.status) });
    this.duration.observe({ surface: o.surface, operation: o.operation }, o.durationMs / 1000);
    if (o.bytesIn > 0) this.received.inc({ surface: o.surface }, o.bytesIn);
    if (o.bytesOut > 0) this.sent.inc({ surface: o.surface }, o.bytesOut);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
