// x-amz-copy-source parsing, x-amz-copy-source-range, and the shared precondition evaluation that
// both conditional GETs and copy-source-if-* use.
import t from 'tap';
import { parseCopySourceHeader, parseCopySourceRange } from '../../src/s3/copy-source.js';
import { objectPreconditions } from '../../src/s3/preconditions.js';

t.test('x-amz-copy-source forms', async (t) => {
  t.same(parseCopySourceHeader('bucket/key'), { bucket: 'bucket', key: 'key' });
  t.same(parseCopySourceHeader('/bucket/key'), { bucket: 'bucket', key: 'key' }, 'leading slash');
  t.same(parseCopySourceHeader('/bucket/a/b/c.txt'), { bucket: 'bucket', key: 'a/b/c.txt' }, 'slashes stay in the key');
  t.same(parseCopySourceHeader('b/with%20space%2B%3F%23%25.txt'), { bucket: 'b', key: 'with space+?#%.txt' }, 'percent-decoded');
  t.same(parseCopySourceHeader('b/a+b'), { bucket: 'b', key: 'a+b' }, "'+' is a plus, not a space");
  t.same(parseCopySourceHeader('b/%C3%BCn%C3%AF'), { bucket: 'b', key: 'ünï' }, 'UTF-8');
  t.same(parseCopySourceHeader('b/ünï'), { bucket: 'b', key: 'ünï' }, 'unencoded non-ASCII is taken as is');
  t.same(parseCopySourceHeader('b/a/../x'), { bucket: 'b', key: 'a/../x' }, 'no normalisation');
  t.same(parseCopySourceHeader('b/k?versionId=null'), { bucket: 'b', key: 'k', versionId: 'null' });
  t.same(parseCopySourceHeader('b/k?versionId=abc%2Bd'), { bucket: 'b', key: 'k', versionId: 'abc+d' });
  t.same(parseCopySourceHeader('b/k?other=1'), { bucket: 'b', key: 'k' }, 'other query parameters are ignored');
  t.same(parseCopySourceHeader('b/dir/'), { bucket: 'b', key: 'dir/' }, 'a key may end in a slash');
  for (const bad of [undefined, '', 'bucket', 'bucket/', '/bucket', '/bucket/', '//key', '/']) {
    t.throws(() => parseCopySourceHeader(bad), { code: 'InvalidArgument' }, `refused: ${String(bad)}`);
  }
  t.throws(() => parseCopySourceHeader('b/%zz'), { code: 'InvalidArgument' }, 'malformed escape');
  t.throws(() => parseCopySourceHeader('b/%C3%28'), { code: 'InvalidArgument' }, 'invalid UTF-8');
});

t.test('x-amz-copy-source-range', async (t) => {
  t.equal(parseCopySourceRange(undefined, 100), undefined);
  t.same(parseCopySourceRange('bytes=0-99', 100), { start: 0, end: 99 });
  t.same(parseCopySourceRange('bytes=10-10', 100), { start: 10, end: 10 });
  t.same(parseCopySourceRange(' bytes=5-9 ', 100), { start: 5, end: 9 });
  for (const bad of ['', 'bytes=0-', 'bytes=-5', 'bytes=5-4', 'bytes=0-1,3-4', 'items=0-1', 'bytes=a-b', 'bytes=0-99999999999999999999']) {
    t.throws(() => parseCopySourceRange(bad, 100), { code: 'InvalidArgument' }, `syntax: '${bad}'`);
  }
  t.throws(() => parseCopySourceRange('bytes=0-100', 100), { code: 'InvalidRange' }, 'last byte past the end');
  t.throws(() => parseCopySourceRange('bytes=100-100', 100), { code: 'InvalidRange' });
  t.throws(() => parseCopySourceRange('bytes=0-0', 0), { code: 'InvalidRange' }, 'empty source');
});

t.test('precondition precedence (AWS)', async (t) => {
  const etag = '"abc"';
  const modified = Date.parse('2024-05-01T12:00:00Z') + 999; // stored with ms; compared by the second
  const before = 'Wed, 01 May 2024 11:00:00 GMT';
  const same = 'Wed, 01 May 2024 12:00:00 GMT';
  const after = 'Wed, 01 May 2024 13:00:00 GMT';
  const ev = (p: Parameters<typeof objectPreconditions>[0]) => objectPreconditions(p, etag, modified);

  t.equal(ev({}), undefined);
  t.equal(ev({ ifMatch: '"abc"' }), undefined);
  t.equal(ev({ ifMatch: 'abc' }), undefined, 'quotes optional');
  t.equal(ev({ ifMatch: '"x", "abc"' }), undefined, 'list');
  t.equal(ev({ ifMatch: '*' }), undefined);
  t.same(ev({ ifMatch: '"x"' }), { kind: 'failed', condition: 'If-Match' });
  t.same(ev({ ifUnmodifiedSince: before }), { kind: 'failed', condition: 'If-Unmodified-Since' });
  t.equal(ev({ ifUnmodifiedSince: same }), undefined, 'second precision');
  t.equal(ev({ ifMatch: '"abc"', ifUnmodifiedSince: before }), undefined, 'if-match true beats if-unmodified-since false');
  t.same(ev({ ifNoneMatch: '"abc"' }), { kind: 'not-modified', condition: 'If-None-Match' });
  t.equal(ev({ ifNoneMatch: '"x"' }), undefined);
  t.same(ev({ ifModifiedSince: same }), { kind: 'not-modified', condition: 'If-Modified-Since' });
  t.same(ev({ ifModifiedSince: after }), { kind: 'not-modified', condition: 'If-Modified-Since' });
  t.equal(ev({ ifModifiedSince: before }), undefined);
  t.same(ev({ ifNoneMatch: '"abc"', ifModifiedSince: before }), { kind: 'not-modified', condition: 'If-None-Match' }, 'if-none-match false + if-modified-since true fails');
  t.equal(ev({ ifNoneMatch: '"x"', ifModifiedSince: after }), undefined, 'if-none-match true beats if-modified-since');
  t.equal(ev({ ifUnmodifiedSince: 'not a date' }), undefined, 'unparseable dates are ignored');
  t.same(ev({ ifMatch: '"x"', ifNoneMatch: '"abc"' }), { kind: 'failed', condition: 'If-Match' }, '412 conditions are checked first');
});
