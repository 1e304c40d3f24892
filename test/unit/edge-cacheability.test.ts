// The edge proxy's caching rules (src/edge/cacheability.ts), table-tested from RFC 9111 (shared cache)
// and RFC 9110 (conditionals, ranges). Pure: no sockets, no clock but the one given.
import t from 'tap';
import type { IncomingHttpHeaders } from 'node:http';
import {
  currentAge,
  deltaSeconds,
  freshnessLifetime,
  hasOriginPreconditions,
  ifRangeHolds,
  isFresh,
  isNotModified,
  notModifiedHeaders,
  parseCacheControl,
  requestPolicy,
  storability,
  storedHeaders,
  validatorsOf,
  varyNames,
  type NotStoredReason,
} from '../../src/edge/cacheability.js';

const NOW = Date.UTC(2026, 2, 1, 12, 0, 0);
const DATE = new Date(NOW).toUTCString();

t.test('Cache-Control parsing: case, quotes, commas inside quotes, first occurrence wins', async (t) => {
  t.same([...parseCacheControl('Public, MAX-AGE=60, s-maxage="120"')], [['public', null], ['max-age', '60'], ['s-maxage', '120']]);
  t.same([...parseCacheControl(['no-cache="set-cookie, x-a"', 'max-age=5'])], [['no-cache', 'set-cookie, x-a'], ['max-age', '5']]);
  t.same(parseCacheControl('max-age=10, max-age=20').get('max-age'), '10', '§4.2.1: the first occurrence');
  t.same([...parseCacheControl(' , ,')], [], 'empty members are nothing');
  t.same([...parseCacheControl(undefined)], []);
});

t.test('delta-seconds (§1.2.2): non-negative integers, capped at 2^31', async (t) => {
  const rows: Array<[string | null | undefined, number | undefined]> = [
    ['0', 0], ['60', 60], ['99999999999', 2 ** 31], ['-1', undefined], ['1.5', undefined], ['', undefined], [' 5', undefined], [null, undefined], [undefined, undefined],
  ];
  for (const [input, want] of rows) t.equal(deltaSeconds(input), want, String(input));
});

t.test('request policy: which requests may be answered from the cache, and stored', async (t) => {
  const rows: Array<[string, IncomingHttpHeaders, { lookup: boolean; store: boolean; maxAge?: number; minFresh?: number }]> = [
    ['GET', {}, { lookup: true, store: true }],
    ['HEAD', {}, { lookup: true, store: false }],
    ['POST', {}, { lookup: false, store: false }],
    ['PUT', {}, { lookup: false, store: false }],
    ['DELETE', {}, { lookup: false, store: false }],
    ['GET', { 'cache-control': 'no-cache' }, { lookup: false, store: true }],
    ['GET', { pragma: 'no-cache' }, { lookup: false, store: true }],
    ['GET', { 'cache-control': 'no-store' }, { lookup: false, store: false }],
    ['GET', { 'cache-control': 'max-age=0' }, { lookup: true, store: true, maxAge: 0 }],
    ['GET', { 'cache-control': 'max-age=oops' }, { lookup: true, store: true, maxAge: 0 }],
    ['GET', { 'cache-control': 'min-fresh=30' }, { lookup: true, store: true, minFresh: 30 }],
  ];
  for (const [method, headers, want] of rows) {
    const got = requestPolicy(method, headers);
    t.same(got, { lookup: want.lookup, store: want.store, maxAge: want.maxAge, minFresh: want.minFresh }, `${method} ${JSON.stringify(headers)}`);
  }
});

t.test('Vary names: lower-cased, sorted, unique; * or an unreadable name varies on anything', async (t) => {
  t.same(varyNames(undefined), []);
  t.same(varyNames('Accept-Encoding'), ['accept-encoding']);
  t.same(varyNames(['User-Agent, accept-encoding', 'Accept-Encoding']), ['accept-encoding', 'user-agent']);
  t.equal(varyNames('Accept, *'), '*');
  t.equal(varyNames('Accept Language'), '*');
});

t.test('freshness lifetime (§4.2.1): s-maxage, then max-age, then Expires - Date', async (t) => {
  const in1h = new Date(NOW + 3600_000).toUTCString();
  const rows: Array<[string, string | undefined, IncomingHttpHeaders, number]> = [
    ['s-maxage over max-age', 'max-age=10, s-maxage=100', {}, 100],
    ['max-age over Expires', 'max-age=10', { expires: in1h, date: DATE }, 10],
    ['Expires - Date', undefined, { expires: in1h, date: DATE }, 3600],
    ['Expires without Date: against now', undefined, { expires: in1h }, 3600],
    ['an invalid Expires is already expired (§5.3)', undefined, { expires: '0' }, 0],
    ['Expires in the past', undefined, { expires: new Date(NOW - 1000).toUTCString(), date: DATE }, 0],
    ['an invalid max-age is stale', 'max-age=soon', { expires: in1h }, 0],
    ['nothing explicit: no heuristics', 'public', {}, 0],
  ];
  for (const [name, cc, headers, want] of rows) t.equal(freshnessLifetime(parseCacheControl(cc), headers, NOW), want, name);
});

t.test('storability (§3, §3.5): what a shared cache may store', async (t) => {
  const base = { 'cache-control': 'max-age=60', 'content-length': '5' };
  const rows: Array<[string, { method?: string; req?: IncomingHttpHeaders; status?: number; res: IncomingHttpHeaders }, NotStoredReason | 'stored']> = [
    ['a GET 200 with max-age', { res: base }, 'stored'],
    ['public with s-maxage', { res: { 'cache-control': 'public, s-maxage=60', 'content-length': '5' } }, 'stored'],
    ['Expires alone', { res: { expires: new Date(NOW + 60_000).toUTCString(), date: DATE, 'content-length': '5' } }, 'stored'],
    ['404 with max-age', { status: 404, res: base }, 'stored'],
    ['301 with max-age', { status: 301, res: base }, 'stored'],
    ['204 needs no length', { status: 204, res: { 'cache-control': 'max-age=60' } }, 'stored'],
    ['HEAD', { method: 'HEAD', res: base }, 'method'],
    ['POST', { method: 'POST', res: base }, 'method'],
    ['request no-store (§5.2.1.5)', { req: { 'cache-control': 'no-store' }, res: base }, 'request-no-store'],
    ['206', { status: 206, res: { ...base, 'content-range': 'bytes 0-4/10' } }, 'status'],
    ['500', { status: 500, res: base }, 'status'],
    ['302', { status: 302, res: base }, 'status'],
    ['no-store', { res: { ...base, 'cache-control': 'max-age=60, no-store' } }, 'no-store'],
    ['private', { res: { ...base, 'cache-control': 'private, max-age=60' } }, 'private'],
    ['qualified private counts as private', { res: { ...base, 'cache-control': 'private="x-user", max-age=60' } }, 'private'],
    ['no-cache: usable only after revalidation', { res: { ...base, 'cache-control': 'no-cache, max-age=60' } }, 'no-cache'],
    ['Set-Cookie', { res: { ...base, 'set-cookie': ['a=1'] } }, 'set-cookie'],
    ['Vary: *', { res: { ...base, vary: '*' } }, 'vary-star'],
    ['Authorization without public/s-maxage/must-revalidate', { req: { authorization: 'Bearer x' }, res: base }, 'authorization'],
    ['a 200 with Content-Range', { res: { ...base, 'content-range': 'bytes 0-4/10' } }, 'content-range'],
    ['no Content-Length (chunked)', { res: { 'cache-control': 'max-age=60', 'transfer-encoding': 'chunked' } }, 'length-unknown'],
    ['Content-Length and Transfer-Encoding', { res: { ...base, 'transfer-encoding': 'chunked' } }, 'length-unknown'],
    ['a bad Content-Length', { res: { ...base, 'content-length': '5, 5' } }, 'length-unknown'],
    ['max-age=0', { res: { ...base, 'cache-control': 'max-age=0' } }, 'not-fresh'],
    ['public alone: no explicit lifetime', { res: { ...base, 'cache-control': 'public' } }, 'not-fresh'],
    ['no Cache-Control, no Expires', { res: { 'content-length': '5' } }, 'not-fresh'],
    ['older than its lifetime on arrival (Age)', { res: { ...base, age: '60' } }, 'not-fresh'],
  ];
  for (const [name, c, want] of rows) {
    const got = storability({ method: c.method ?? 'GET', requestHeaders: c.req ?? {}, status: c.status ?? 200, headers: c.res, now: NOW });
    t.equal(got.storable ? 'stored' : got.reason, want, name);
  }
});

t.test('storability: what a stored answer carries', async (t) => {
  t.same(storability({ method: 'GET', requestHeaders: {}, status: 200, headers: { 'cache-control': 'max-age=60', 'content-length': '12', age: '5', vary: 'Accept-Encoding' }, now: NOW }), {
    storable: true, lifetime: 60, initialAge: 5, vary: ['accept-encoding'], size: 12, allowsAuthorized: false,
  });
  for (const cc of ['public, max-age=60', 's-maxage=60', 'max-age=60, must-revalidate']) {
    const got = storability({ method: 'GET', requestHeaders: { authorization: 'Basic eDp5' }, status: 200, headers: { 'cache-control': cc, 'content-length': '1' }, now: NOW });
    t.match(got, { storable: true, allowsAuthorized: true }, `§3.5: ${cc} may answer authorised requests`);
  }
});

t.test('age and freshness (§4.2.3, §5.2.1)', async (t) => {
  t.equal(currentAge(0, NOW, NOW), 0);
  t.equal(currentAge(5, NOW, NOW + 2999), 7, 'whole seconds');
  t.equal(currentAge(0, NOW, NOW - 5000), 0, 'a clock that stepped back is no negative age');
  const any = { maxAge: undefined, minFresh: undefined };
  t.equal(isFresh(60, 59, any), true);
  t.equal(isFresh(60, 60, any), false, 'age = lifetime is stale');
  t.equal(isFresh(60, 10, { ...any, maxAge: 10 }), true);
  t.equal(isFresh(60, 11, { ...any, maxAge: 10 }), false, 'request max-age');
  t.equal(isFresh(60, 30, { ...any, minFresh: 30 }), true);
  t.equal(isFresh(60, 31, { ...any, minFresh: 30 }), false, 'request min-fresh');
});

t.test('stored headers: no hop-by-hop, none Connection names, no Set-Cookie, no Age', async (t) => {
  t.same(
    storedHeaders({
      'content-type': 'text/plain',
      connection: 'keep-alive, X-Hop',
      'keep-alive': 'timeout=5',
      'x-hop': 'secret',
      'transfer-encoding': 'chunked',
      'set-cookie': ['a=1', 'b=2'],
      age: '3',
      'x-multi': ['1', '2'],
      etag: '"v1"',
    }),
    { 'content-type': 'text/plain', 'x-multi': '1, 2', etag: '"v1"' },
  );
});

t.test('conditionals on a stored answer (RFC 9110 §13.1.2, §13.1.3)', async (t) => {
  const lm = NOW - 86_400_000;
  const v = validatorsOf({ etag: 'W/"v1"', 'last-modified': new Date(lm).toUTCString() });
  t.same(v, { etag: 'W/"v1"', lastModified: lm });
  const rows: Array<[IncomingHttpHeaders, boolean, string]> = [
    [{ 'if-none-match': '"v1"' }, true, 'weak comparison: "v1" matches W/"v1"'],
    [{ 'if-none-match': '"x", W/"v1"' }, true, 'any in the list'],
    [{ 'if-none-match': '*' }, true, '*'],
    [{ 'if-none-match': '"v2"' }, false, 'another tag'],
    [{ 'if-none-match': '"v2"', 'if-modified-since': new Date(NOW).toUTCString() }, false, 'If-None-Match decides, If-Modified-Since is ignored'],
    [{ 'if-modified-since': new Date(lm).toUTCString() }, true, 'not modified since its own date'],
    [{ 'if-modified-since': new Date(lm - 1000).toUTCString() }, false, 'modified since'],
    [{ 'if-modified-since': 'yesterday' }, false, 'an invalid date is ignored'],
    [{}, false, 'unconditional'],
  ];
  for (const [h, want, name] of rows) t.equal(isNotModified(h, v), want, name);
  t.equal(isNotModified({ 'if-modified-since': new Date(NOW).toUTCString() }, { etag: undefined, lastModified: undefined }), false, 'no Last-Modified stored');
  t.equal(hasOriginPreconditions({ 'if-match': '"v1"' }), true);
  t.equal(hasOriginPreconditions({ 'if-unmodified-since': DATE }), true);
  t.equal(hasOriginPreconditions({ 'if-none-match': '"v1"' }), false);
});

t.test('If-Range (RFC 9110 §13.1.5): a strong ETag or the exact Last-Modified', async (t) => {
  const lm = NOW - 1000;
  const strong = { etag: '"s1"', lastModified: lm };
  t.equal(ifRangeHolds({}, strong), true);
  t.equal(ifRangeHolds({ 'if-range': '"s1"' }, strong), true);
  t.equal(ifRangeHolds({ 'if-range': '"s2"' }, strong), false);
  t.equal(ifRangeHolds({ 'if-range': 'W/"s1"' }, strong), false);
  t.equal(ifRangeHolds({ 'if-range': '"s1"' }, { etag: 'W/"s1"', lastModified: lm }), false, 'a weak stored ETag never matches');
  t.equal(ifRangeHolds({ 'if-range': new Date(lm).toUTCString() }, strong), true);
  t.equal(ifRangeHolds({ 'if-range': new Date(lm - 1000).toUTCString() }, strong), false);
});

t.test('a 304 carries the fields RFC 9110 §15.4.5 names, not the body framing', async (t) => {
  t.same(
    notModifiedHeaders({ 'content-type': 'text/html', 'content-length': '9', etag: '"a"', 'cache-control': 'max-age=9', vary: 'Accept-Encoding', date: DATE, 'x-other': '1' }),
    { 'cache-control': 'max-age=9', date: DATE, etag: '"a"', vary: 'Accept-Encoding' },
  );
});
