// The request metrics load prom-client with the first observation or scrape (not with the server): the
// requests observed before it has loaded are counted, none lost, and a scrape waits for it.
import t from 'tap';
import { RequestMetrics } from '../../src/metrics/request-metrics.js';

t.test('observations made before prom-client has loaded are all counted', async (t) => {
  const metrics = new RequestMetrics();
  for (let i = 0; i < 5; i++) metrics.observe({ surface: 's3', operation: 'GetObject', status: 200, durationMs: 1, bytesIn: 0, bytesOut: 10 });
  metrics.observe({ surface: 'cdn', operation: 'GET', status: null, durationMs: 2, bytesIn: 3, bytesOut: 0 });
  const text = await metrics.text();
  t.match(text, /^s3edge_requests_total\{surface="s3",operation="GetObject",status="200"\} 5$/m, 'the five S3 requests');
  t.match(text, /^s3edge_requests_total\{surface="cdn",operation="GET",status="none"\} 1$/m, 'the one the client left');
  t.match(text, /^s3edge_response_body_bytes_total\{surface="s3"\} 50$/m, 'their bytes');
  t.match(text, /^s3edge_request_body_bytes_total\{surface="cdn"\} 3$/m);
  t.match(text, /^process_cpu_seconds_total /m, 'with the process metrics');
  t.match(metrics.contentType, /^text\/plain/);
  metrics.observe({ surface: 's3', operation: 'GetObject', status: 200, durationMs: 1, bytesIn: 0, bytesOut: 10 });
  t.match(await metrics.text(), /^s3edge_requests_total\{surface="s3",operation="GetObject",status="200"\} 6$/m, 'and those after');
  const json = await metrics.json();
  t.ok(json.some((m) => m.name === 's3edge_requests_total'), 'the JSON a cluster adds up');
});

t.test('a scrape before any request loads them', async (t) => {
  const metrics = new RequestMetrics();
  t.match(await metrics.text(), /^# HELP s3edge_requests_total /m);
});
