// The request log's batch as it crosses to the writer thread (src/analytics/record-batch.ts): every
// field the table gets comes back as it was, optional ones absent stay absent (a null downloadKey would
// be a download), and the request id, which only the log line carries, stays behind.
import t from 'tap';
import { decodeRecordBatch, encodeRecordBatch } from '../../src/analytics/record-batch.js';
import type { CdnRequestRecord } from '../../src/db/repos/request-records.js';

const cdnHit: CdnRequestRecord = {
  method: 'GET', path: '/a1/logo.png', time: 1_767_225_600_123, host: 'cdn.example.com', assetId: 'a1', bucket: null, key: null,
  ownerId: 'u1', status: 200, bytesSent: 4096, cacheStatus: 'HIT', clientIp: '203.0.113.9', country: 'DE', userAgent: 'curl/8.5.0',
  durationMs: 0.125, downloadKey: 'logo.png',
};
const bucketObject: CdnRequestRecord = {
  surface: 'cdn', method: 'HEAD', path: '/b/dir/ü "quoted"\\n.txt', time: 1_767_225_600_456, host: 'b.cdn.example.com', assetId: null,
  bucket: 'b', key: 'dir/ü "quoted"\\n.txt', ownerId: 'u2', status: 304, bytesSent: 0, cacheStatus: null, clientIp: '2001:db8::1',
  country: '', userAgent: 'Mozilla/5.0 (X11; Linux x86_64)\u2028', durationMs: 3,
};
const proxied: CdnRequestRecord = {
  surface: 'proxy', requestId: '6f1c2a3e-0000-4000-8000-000000000000', method: 'POST', path: '/api/upload', bytesIn: 1_048_576,
  decision: 'body-too-large', time: 1_767_225_601_000, host: 'app.example.org', assetId: null, bucket: null, key: null, ownerId: null,
  status: 413, bytesSent: 10, cacheStatus: null, clientIp: '198.51.100.7', country: 'US', userAgent: '', durationMs: 12.5,
};

t.test('a batch comes back field for field, without the request id', async (t) => {
  const decoded = decodeRecordBatch(encodeRecordBatch([cdnHit, bucketObject, proxied]));
  const { requestId: _dropped, ...proxiedRow } = proxied;
  t.strictSame(decoded, [cdnHit, bucketObject, proxiedRow]);
  t.notOk('downloadKey' in (decoded[1] as CdnRequestRecord), 'a record that served no body is no download after the trip');
  t.notOk('surface' in (decoded[0] as CdnRequestRecord), 'an absent surface stays absent (the table defaults it)');
  t.strictSame(decodeRecordBatch(encodeRecordBatch([])), []);
});

t.test('shorter than the records as JSON objects', async (t) => {
  const batch = Array.from({ length: 64 }, (_, i) => ({ ...cdnHit, time: cdnHit.time + i }));
  t.ok(encodeRecordBatch(batch).length < JSON.stringify(batch).length * 0.7);
});
