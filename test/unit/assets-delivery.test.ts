// Which answer a GET of an asset gets (conditionals, one range, If-Range), the lenient list query, and
// the upload meter's limits. Pure: no sockets, no storage.
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import t from 'tap';
import { decideDelivery, hostnameOf } from '../../src/assets/delivery.js';
import { parseQueryFirstValue } from '../../src/api/query.js';
import { pageCount, parseAssetListQuery } from '../../src/api/v3/asset-list-query.js';
import { UploadLimitError, UploadMeter } from '../../src/assets/upload-meter.js';
import type { AssetRecord } from '../../src/db/repos/assets.js';

const UPDATED = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const asset: AssetRecord = {
  id: 'a'.repeat(32), userId: 'u', projectId: null, deploymentId: null, blobId: 'blob', crc32c: null, fileName: 'x.txt',
  contentType: 'text/plain', size: 100, sha256: 's', etag: '"abc"', visibility: 'public', kind: 'file', activeContent: false,
  createdAt: UPDATED, updatedAt: UPDATED,
};
const style = { disposition: 'inline' as const, cacheControl: 'public, max-age=3600' };

t.test('a plain GET: 200 with every header', async (t) => {
  const d = decideDelivery(asset, {}, style);
  if (d.kind !== 'body') throw new Error(d.kind);
  t.equal(d.status, 200);
  t.same(d.headers, {
    'content-type': 'text/plain',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'content-disposition': 'inline; filename="x.txt"',
    etag: '"abc"',
    'last-modified': 'Fri, 02 Jan 2026 03:04:05 GMT',
    'accept-ranges': 'bytes',
    'cache-control': 'public, max-age=3600',
    'content-length': '100',
  });
});

t.test('ranges: one range -> 206, unsatisfiable -> 416, nonsense ignored', async (t) => {
  const r = decideDelivery(asset, { range: 'bytes=10-19' }, style);
  t.match(r, { kind: 'body', status: 206, range: { start: 10, end: 19 }, length: 10, headers: { 'content-range': 'bytes 10-19/100', 'content-length': '10' } });
  t.match(decideDelivery(asset, { range: 'bytes=-5' }, style), { status: 206, range: { start: 95, end: 99 } });
  t.match(decideDelivery(asset, { range: 'bytes=90-' }, style), { status: 206, range: { start: 90, end: 99 } });
  t.match(decideDelivery(asset, { range: 'bytes=90-500' }, style), { status: 206, range: { start: 90, end: 99 } });
  t.same(decideDelivery(asset, { range: 'bytes=100-' }, style), { kind: 'range-not-satisfiable', contentRange: 'bytes */100' });
  t.match(decideDelivery(asset, { range: 'bytes=0-1,5-6' }, style), { status: 200 }, 'several ranges: the whole body');
  t.match(decideDelivery(asset, { range: 'items=0-1' }, style), { status: 200 });
  t.same(decideDelivery({ ...asset, size: 0 }, { range: 'bytes=0-' }, style).kind, 'range-not-satisfiable');
});

t.test('If-Range: the range only for the current representation', async (t) => {
  t.match(decideDelivery(asset, { range: 'bytes=0-0', 'if-range': '"abc"' }, style), { status: 206 });
  t.match(decideDelivery(asset, { range: 'bytes=0-0', 'if-range': '"old"' }, style), { status: 200 });
  t.match(decideDelivery(asset, { range: 'bytes=0-0', 'if-range': 'W/"abc"' }, style), { status: 200 });
  t.match(decideDelivery(asset, { range: 'bytes=0-0', 'if-range': 'Fri, 02 Jan 2026 03:04:05 GMT' }, style), { status: 206 });
  t.match(decideDelivery(asset, { range: 'bytes=0-0', 'if-range': 'Fri, 02 Jan 2026 03:04:04 GMT' }, style), { status: 200 });
});

t.test('conditionals: 304 keeps the validators, 412 for a failed If-Match', async (t) => {
  const nm = decideDelivery(asset, { 'if-none-match': '"abc"' }, style);
  t.equal(nm.kind, 'not-modified');
  if (nm.kind === 'not-modified') {
    t.equal(nm.headers['etag'], '"abc"');
    t.equal(nm.headers['cache-control'], 'public, max-age=3600');
    t.notOk('content-length' in nm.headers || 'content-type' in nm.headers);
  }
  t.equal(decideDelivery(asset, { 'if-none-match': 'W/"abc", "x"' }, style).kind, 'not-modified');
  t.equal(decideDelivery(asset, { 'if-none-match': '"other"' }, style).kind, 'body');
  t.equal(decideDelivery(asset, { 'if-modified-since': 'Fri, 02 Jan 2026 03:04:05 GMT' }, style).kind, 'not-modified');
  t.equal(decideDelivery(asset, { 'if-modified-since': 'Fri, 02 Jan 2026 03:04:04 GMT' }, style).kind, 'body');
  t.equal(decideDelivery(asset, { 'if-match': '"other"' }, style).kind, 'precondition-failed');
  t.equal(decideDelivery(asset, { 'if-match': '"abc"' }, style).kind, 'body');
});

t.test('host names without ports', async (t) => {
  t.equal(hostnameOf('Example.com:9000'), 'example.com');
  t.equal(hostnameOf('cdn.localhost'), 'cdn.localhost');
  t.equal(hostnameOf('[::1]:9000'), '[::1]');
  t.equal(hostnameOf(undefined), '');
});

t.test('list query: invalid values fall back to the defaults, limit capped at 200', async (t) => {
  t.same(parseAssetListQuery({}), { page: 1, limit: 20 });
  t.same(parseAssetListQuery(undefined), { page: 1, limit: 20 });
  t.same(parseAssetListQuery({ page: '3', limit: '50', search: 'cat', kind: 'artifact' }), { page: 3, limit: 50, search: 'cat', kind: 'artifact' });
  t.same(parseAssetListQuery({ limit: '1000' }), { page: 1, limit: 200 });
  for (const bad of ['0', '-1', 'abc', '1.5', '1e3', '', ' ', '0x10', '99999999999999999999']) {
    t.same(parseAssetListQuery({ page: bad, limit: bad }), { page: 1, limit: 20 }, `page=limit=${JSON.stringify(bad)}`);
  }
  t.same(parseAssetListQuery(parseQueryFirstValue('page=2&page=5&limit=7&limit=x')), { page: 2, limit: 7 }, 'a repeated key: the first value');
  t.same(parseAssetListQuery({ page: ['2', '5'] }), { page: 1, limit: 20 }, 'an array (never from the API parser) is no value');
  t.same(parseAssetListQuery({ kind: 'folder', search: '' }), { page: 1, limit: 20 }, 'unknown kind and empty search: no filter');
  t.equal(parseAssetListQuery({ search: 'x'.repeat(1000) }).search?.length, 256);
  t.equal(pageCount(0, 20), 0);
  t.equal(pageCount(1, 20), 1);
  t.equal(pageCount(40, 20), 2);
  t.equal(pageCount(41, 20), 3);
});

async function meter(chunks: Buffer[], limits: { maxSize: number; maxPaidBytes: number }): Promise<{ meter: UploadMeter; err?: unknown }> {
  const m = new UploadMeter(limits);
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  try {
    await pipeline(Readable.from(chunks), m, sink);
    return { meter: m };
  } catch (err) {
    return { meter: m, err };
  }
}

t.test('upload meter: size and credit limits, first bytes kept', async (t) => {
  const ok = await meter([Buffer.from('<sv'), Buffer.from('g>'), Buffer.alloc(2000, 1)], { maxSize: 5000, maxPaidBytes: 5000 });
  t.equal(ok.err, undefined);
  t.equal(ok.meter.size, 2005);
  t.equal(ok.meter.head().length, 1024);
  t.equal(ok.meter.head().subarray(0, 5).toString(), '<svg>');
  const big = await meter([Buffer.alloc(400), Buffer.alloc(800)], { maxSize: 1000, maxPaidBytes: 500 });
  t.ok(big.err instanceof UploadLimitError && big.err.limit === 'size' && big.err.size === 1200, 'past both at once: too large wins');
  const poor = await meter([Buffer.alloc(600), Buffer.alloc(600)], { maxSize: 5000, maxPaidBytes: 1000 });
  t.ok(poor.err instanceof UploadLimitError && poor.err.limit === 'credits' && poor.err.size === 1200);
  const exact = await meter([Buffer.alloc(1000)], { maxSize: 1000, maxPaidBytes: 1000 });
  t.equal(exact.err, undefined, 'exactly at the limit is fine');
});
