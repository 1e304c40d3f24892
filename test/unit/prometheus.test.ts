// The Prometheus text format 0.0.4 as /api/v3/metrics writes it.
import t from 'tap';
import { renderPrometheus } from '../../src/metrics/prometheus.js';

t.test('HELP, TYPE and a sample per metric; help text escaped; special values', async (t) => {
  const text = renderPrometheus([
    { name: 's3edge_cdn_log_dropped_total', type: 'counter', help: 'Dropped.\nSecond line \\ backslash', value: 3 },
    { name: 's3edge_cdn_log_buffered', type: 'gauge', help: 'Buffered.', value: 0 },
    { name: 'x_inf', type: 'untyped', help: 'h', value: Infinity },
    { name: 'x_nan', type: 'untyped', help: 'h', value: Number.NaN },
  ]);
  t.equal(
    text,
    [
      '# HELP s3edge_cdn_log_dropped_total Dropped.\\nSecond line \\\\ backslash',
      '# TYPE s3edge_cdn_log_dropped_total counter',
      's3edge_cdn_log_dropped_total 3',
      '# HELP s3edge_cdn_log_buffered Buffered.',
      '# TYPE s3edge_cdn_log_buffered gauge',
      's3edge_cdn_log_buffered 0',
      '# HELP x_inf h',
      '# TYPE x_inf untyped',
      'x_inf +Inf',
      '# HELP x_nan h',
      '# TYPE x_nan untyped',
      'x_nan NaN',
      '',
    ].join('\n'),
  );
  t.throws(() => renderPrometheus([{ name: 'bad-name', type: 'gauge', help: '', value: 1 }]), /invalid metric name/);
});
