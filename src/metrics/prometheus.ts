// The Prometheus text exposition format 0.0.4: `# HELP`, `# TYPE` and one sample line per metric.
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface Metric {
  /** [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total. */
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'untyped';
  value: number;
  /**
   * How a cluster adds up the workers' values (src/metrics/cluster-metrics.ts): `sum` (the default: each
   * worker's own count or share) or `max` (a figure each process reads from the shared database).
   */
  aggregate?: 'sum' | 'max';
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

function escapeHelp(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return String(n);
}

/** The exposition text; a metric with an invalid name is a programming error and throws. */
export function renderPrometheus(metrics: readonly Metric[]): string {
  const lines: string[] = [];
  for (const m of metrics) {
    if (!NAME.test(m.name)) throw new Error(`invalid metric name ${m.name}`);
    lines.push(`# HELP ${m.name} ${escapeHelp(m.help)}`, `# TYPE ${m.name} ${m.type}`, `${m.name} ${formatValue(m.value)}`);
  }
  return lines.join('\n') + '\n';
}
