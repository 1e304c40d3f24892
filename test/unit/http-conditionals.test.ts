// The one RFC 9110 conditional evaluation (src/http/conditionals.ts) in each caller's mode: 'lenient'
// entity tags (S3 reads and copy sources, asset/CDN delivery) and 'opaque' ones (the edge proxy's
// cache), a missing ETag or Last-Modified, second precision, and If-Range.
import t from 'tap';
import { evaluatePreconditions, ifRangeHolds, preconditionsOf, secondPrecision, type ConditionalOptions, type Preconditions } from '../../src/http/conditionals.js';

const LENIENT: ConditionalOptions = { etags: 'lenient' };
const OPAQUE: ConditionalOptions = { etags: 'opaque' };
const LM = Date.parse('2024-05-01T12:00:00Z');
const before = 'Wed, 01 May 2024 11:00:00 GMT';
const same = 'Wed, 01 May 2024 12:00:00 GMT';
const after = 'Wed, 01 May 2024 13:00:00 GMT';

t.test('RFC 9110 §13.2.2 order, the same in both modes', async (t) => {
  for (const opts of [LENIENT, OPAQUE]) {
    const ev = (p: Preconditions) => evaluatePreconditions(p, { etag: '"abc"', lastModified: LM }, opts);
    const m = opts.etags;
    t.equal(ev({}), undefined, `${m}: unconditional`);
    t.same(ev({ ifMatch: '"x"' }), { kind: 'failed', condition: 'If-Match' }, m);
    t.equal(ev({ ifMatch: '"abc"', ifUnmodifiedSince: before }), undefined, `${m}: a true If-Match beats If-Unmodified-Since`);
    t.same(ev({ ifUnmodifiedSince: before }), { kind: 'failed', condition: 'If-Unmodified-Since' }, m);
    t.equal(ev({ ifUnmodifiedSince: same }), undefined, m);
    t.same(ev({ ifNoneMatch: 'W/"abc"' }), { kind: 'not-modified', condition: 'If-None-Match' }, `${m}: weak comparison`);
    t.equal(ev({ ifNoneMatch: '"x"', ifModifiedSince: after }), undefined, `${m}: If-None-Match decides alone`);
    t.same(ev({ ifModifiedSince: same }), { kind: 'not-modified', condition: 'If-Modified-Since' }, m);
    t.equal(ev({ ifModifiedSince: before }), undefined, m);
    t.equal(ev({ ifModifiedSince: 'yesterday', ifUnmodifiedSince: 'not a date' }), undefined, `${m}: unparseable dates are ignored`);
    t.same(ev({ ifMatch: '"x"', ifNoneMatch: '"abc"' }), { kind: 'failed', condition: 'If-Match' }, `${m}: 412 conditions first`);
    t.same(ev({ ifNoneMatch: '"x", "abc"' }), { kind: 'not-modified', condition: 'If-None-Match' }, `${m}: any in the list`);
    t.same(ev({ ifNoneMatch: '*' }), { kind: 'not-modified', condition: 'If-None-Match' }, `${m}: *`);
  }
});

t.test("'lenient' (S3, assets): quotes optional, * anywhere in the list", async (t) => {
  const ev = (p: Preconditions) => evaluatePreconditions(p, { etag: '"abc"', lastModified: LM }, LENIENT);
  t.equal(ev({ ifMatch: 'abc' }), undefined);
  t.same(ev({ ifNoneMatch: 'abc' }), { kind: 'not-modified', condition: 'If-None-Match' });
  t.equal(ev({ ifMatch: '"x", *' }), undefined);
});

t.test("'opaque' (the proxy's cache): tags as sent, * only alone, a missing ETag matches nothing but *", async (t) => {
  const ev = (p: Preconditions, etag: string | null = 'W/"abc"') => evaluatePreconditions(p, { etag: etag ?? undefined, lastModified: LM }, OPAQUE);
  t.equal(ev({ ifNoneMatch: 'abc' }), undefined, 'an unquoted tag is another tag');
  t.equal(ev({ ifNoneMatch: '"x", *' }), undefined);
  t.same(ev({ ifNoneMatch: '"abc"' }), { kind: 'not-modified', condition: 'If-None-Match' }, 'weak stored tag, weak comparison');
  t.same(ev({ ifNoneMatch: '"a,b"' }, '"a,b"'), { kind: 'not-modified', condition: 'If-None-Match' }, 'a comma inside a tag');
  t.equal(ev({ ifNoneMatch: '"abc"' }, null), undefined, 'no stored ETag');
  t.same(ev({ ifNoneMatch: '*' }, null), { kind: 'not-modified', condition: 'If-None-Match' });
});

t.test('a missing Last-Modified ignores the date preconditions', async (t) => {
  for (const opts of [LENIENT, OPAQUE]) {
    const ev = (p: Preconditions) => evaluatePreconditions(p, { etag: '"abc"', lastModified: undefined }, opts);
    t.equal(ev({ ifModifiedSince: after }), undefined);
    t.equal(ev({ ifUnmodifiedSince: before }), undefined);
  }
});

t.test('second precision is the caller’s: secondPrecision gives the Last-Modified as sent', async (t) => {
  const stored = LM + 999;
  t.equal(secondPrecision(stored), LM);
  const ev = (p: Preconditions, lastModified: number) => evaluatePreconditions(p, { etag: '"abc"', lastModified }, LENIENT);
  t.equal(ev({ ifUnmodifiedSince: same }, secondPrecision(stored)), undefined);
  t.same(ev({ ifUnmodifiedSince: same }, stored), { kind: 'failed', condition: 'If-Unmodified-Since' }, 'unrounded, the stored milliseconds count');
});

t.test('preconditionsOf reads the request headers', async (t) => {
  t.same(preconditionsOf({ 'if-match': '"a"', 'if-none-match': ['"b"', '"c"'], 'if-modified-since': same, 'x-other': '1' }), {
    ifMatch: '"a"',
    ifNoneMatch: '"b", "c"',
    ifModifiedSince: same,
    ifUnmodifiedSince: undefined,
  });
});

t.test('If-Range (RFC 9110 §13.1.5)', async (t) => {
  const strong = { etag: '"s1"', lastModified: LM };
  t.equal(ifRangeHolds(undefined, strong), true);
  t.equal(ifRangeHolds(' "s1" ', strong), true);
  t.equal(ifRangeHolds('"s2"', strong), false);
  t.equal(ifRangeHolds('W/"s1"', strong), false);
  t.equal(ifRangeHolds('"s1"', { etag: 'W/"s1"', lastModified: LM }), false, 'a weak stored ETag never matches');
  t.equal(ifRangeHolds('"s1"', { etag: undefined, lastModified: LM }), false);
  t.equal(ifRangeHolds(same, strong), true, 'the exact Last-Modified');
  t.equal(ifRangeHolds(before, strong), false);
  t.equal(ifRangeHolds(same, { etag: '"s1"', lastModified: undefined }), false);
  t.equal(ifRangeHolds('not a date', strong), false);
});
