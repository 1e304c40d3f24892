import t from 'tap';
import { resolveOperation, type RouteInput } from '../../src/s3/router.js';
import { parseAddress, parseQuery, validateKey } from '../../src/s3/addressing.js';
import { parseRange } from '../../src/http/range.js';

function route(method: string, bucket?: string, key?: string, query = '', headers: RouteInput['headers'] = {}): string {
  try {
    return resolveOperation({ method, bucket, key, query: parseQuery(query), headers });
  } catch (err) {
    return (err as { code: string }).code;
  }
}

t.test('operation table (AWS API reference)', async (t) => {
  const table: [string, string | undefined, string | undefined, string, string][] = [
    ['GET', undefined, undefined, '', 'ListBuckets'],
    ['PUT', undefined, undefined, '', 'MethodNotAllowed'],
    ['PUT', 'b', undefined, '', 'CreateBucket'],
    ['HEAD', 'b', undefined, '', 'HeadBucket'],
    ['DELETE', 'b', undefined, '', 'DeleteBucket'],
    ['GET', 'b', undefined, 'location', 'GetBucketLocation'],
    ['GET', 'b', undefined, 'versioning', 'GetBucketVersioning'],
    ['PUT', 'b', undefined, 'versioning', 'PutBucketVersioning'],
    ['DELETE', 'b', undefined, 'versioning', 'NotImplemented'],
    ['GET', 'b', undefined, 'versions', 'ListObjectVersions'],
    ['GET', 'b', undefined, 'versions&prefix=a&key-marker=k', 'ListObjectVersions'],
    ['PUT', 'b', undefined, 'versions', 'NotImplemented'],
    ['GET', 'b', 'k', 'versionId=abc', 'GetObject'],
    ['DELETE', 'b', 'k', 'versionId=abc', 'DeleteObject'],
    ['GET', 'b', undefined, 'list-type=2&prefix=a', 'ListObjectsV2'],
    ['GET', 'b', undefined, 'prefix=a', 'ListObjects'],
    ['GET', 'b', undefined, 'policy', 'GetBucketPolicy'],
    ['PUT', 'b', undefined, 'policy', 'PutBucketPolicy'],
    ['DELETE', 'b', undefined, 'policy', 'DeleteBucketPolicy'],
    ['GET', 'b', undefined, 'policyStatus', 'GetBucketPolicyStatus'],
    ['PUT', 'b', undefined, 'policyStatus', 'NotImplemented'],
    ['POST', 'b', undefined, 'delete', 'DeleteObjects'],
    ['POST', 'b', undefined, '', 'PostObject'],
    ['POST', 'b', 'k', '', 'MethodNotAllowed'],
    ['GET', 'b', undefined, 'delete', 'NotImplemented'],
    ['GET', 'b', undefined, 'cors', 'GetBucketCors'],
    ['PUT', 'b', undefined, 'cors', 'PutBucketCors'],
    ['DELETE', 'b', undefined, 'cors', 'DeleteBucketCors'],
    ['GET', 'b', undefined, 'acl', 'GetBucketAcl'],
    ['PUT', 'b', undefined, 'acl', 'PutBucketAcl'],
    ['GET', 'b', undefined, 'lifecycle', 'GetBucketLifecycleConfiguration'],
    ['PUT', 'b', undefined, 'lifecycle', 'PutBucketLifecycleConfiguration'],
    ['DELETE', 'b', undefined, 'lifecycle', 'DeleteBucketLifecycle'],
    ['POST', 'b', undefined, 'lifecycle', 'NotImplemented'],
    ['GET', 'b', undefined, 'requestPayment', 'GetBucketRequestPayment'],
    ['GET', 'b', undefined, 'website', 'NotImplemented'],
    ['GET', 'b', 'k', 'acl', 'GetObjectAcl'],
    ['PUT', 'b', 'k', 'acl', 'PutObjectAcl'],
    ['DELETE', 'b', 'k', 'acl', 'NotImplemented'],
    ['PUT', 'b', 'k', '', 'PutObject'],
    ['GET', 'b', 'k', '', 'GetObject'],
    ['GET', 'b', 'k', 'partNumber=1', 'GetObject'],
    ['HEAD', 'b', 'k', '', 'HeadObject'],
    ['DELETE', 'b', 'k', '', 'DeleteObject'],
    ['GET', 'b', 'k', 'tagging', 'GetObjectTagging'],
    ['PUT', 'b', 'k', 'tagging', 'PutObjectTagging'],
    ['DELETE', 'b', 'k', 'tagging', 'DeleteObjectTagging'],
    ['PUT', 'b', 'k', 'tagging&versionId=null', 'PutObjectTagging'],
    ['POST', 'b', 'k', 'tagging', 'NotImplemented'],
    ['GET', 'b', 'k', 'attributes', 'GetObjectAttributes'],
    ['HEAD', 'b', 'k', 'attributes', 'NotImplemented'],
    ['GET', 'b', 'k', 'retention', 'NotImplemented'],
    ['GET', 'b', undefined, 'tagging', 'GetBucketTagging'],
    ['PUT', 'b', undefined, 'tagging', 'PutBucketTagging'],
    ['DELETE', 'b', undefined, 'tagging', 'DeleteBucketTagging'],
    ['POST', 'b', undefined, 'tagging', 'NotImplemented'],
    ['GET', 'b', undefined, 'website', 'NotImplemented'],
    ['POST', 'b', 'k', 'uploads', 'CreateMultipartUpload'],
    ['GET', 'b', 'k', 'uploads', 'NotImplemented'],
    ['PUT', 'b', 'k', 'partNumber=2&uploadId=u', 'UploadPart'],
    ['POST', 'b', 'k', 'uploadId=u', 'CompleteMultipartUpload'],
    ['DELETE', 'b', 'k', 'uploadId=u', 'AbortMultipartUpload'],
    ['GET', 'b', 'k', 'uploadId=u', 'ListParts'],
    ['GET', 'b', undefined, 'uploads', 'ListMultipartUploads'],
    ['GET', 'b', undefined, 'uploads&prefix=a&max-uploads=2', 'ListMultipartUploads'],
    ['PUT', 'b', undefined, 'uploads', 'NotImplemented'],
    ['PATCH', 'b', 'k', '', 'MethodNotAllowed'],
  ];
  for (const [method, bucket, key, query, want] of table) {
    t.equal(route(method, bucket, key, query), want, `${method} /${bucket ?? ''}/${key ?? ''}?${query}`);
  }
  t.equal(route('PUT', 'b', 'k', '', { 'x-amz-copy-source': '/a/b' }), 'CopyObject', 'copy is not a put');
  t.equal(route('PUT', 'b', 'k', 'partNumber=1&uploadId=u', { 'x-amz-copy-source': '/a/b' }), 'UploadPartCopy', 'a part copied from an object');
});

t.test('path-style and virtual-host addressing keep keys opaque', async (t) => {
  const a = parseAddress('/bucket/a/../b', 'localhost:9000', []);
  t.equal(a.bucket, 'bucket');
  t.equal(a.key, 'a/../b');
  t.equal(parseAddress('/bucket/%252e%252e/x', undefined, []).key, '%2e%2e/x');
  t.equal(parseAddress('/bucket/%2e%2e/x', undefined, []).key, '../x');
  t.equal(parseAddress('/bucket/dir%5Cfile', undefined, []).key, 'dir\\file');
  t.equal(parseAddress('/bucket/a//b/', undefined, []).key, 'a//b/');
  t.equal(parseAddress('/bucket/', undefined, []).key, undefined);
  t.equal(parseAddress('/', undefined, []).bucket, undefined);
  const v = parseAddress('/photos/cat%20one.jpg?versionId=x', 'my-bucket.s3.local:9000', ['s3.local']);
  t.equal(v.bucket, 'my-bucket');
  t.equal(v.key, 'photos/cat one.jpg');
  t.equal(v.query.get('versionId'), 'x');
  t.equal(parseAddress('/b', 's3.local', ['s3.local']).bucket, 'b', 'the bare domain is path-style');
  t.throws(() => parseAddress('/b/%zz', undefined, []), { code: 'InvalidURI' });
  t.throws(() => parseAddress('/b/%C3%28', undefined, []), { code: 'InvalidURI' }, 'invalid UTF-8');
});

t.test('query parsing', async (t) => {
  const q = parseQuery('list-type=2&prefix=a%2Fb&delimiter=%2F&uploads&empty=');
  t.equal(q.get('prefix'), 'a/b');
  t.equal(q.get('uploads'), '');
  t.equal(q.get('empty'), '');
  t.equal(parseQuery('prefix=a+b').get('prefix'), 'a b');
});

t.test('key validation', async (t) => {
  t.doesNotThrow(() => validateKey('x'.repeat(1024)));
  t.throws(() => validateKey('x'.repeat(1025)), { code: 'KeyTooLongError' });
  t.throws(() => validateKey('é'.repeat(513)), { code: 'KeyTooLongError' }, 'bytes, not characters');
  t.throws(() => validateKey('a\u0000b'), { code: 'InvalidArgument' });
});

t.test('ranges', async (t) => {
  t.same(parseRange('bytes=0-9', 100), { start: 0, end: 9 });
  t.same(parseRange('bytes=90-', 100), { start: 90, end: 99 });
  t.same(parseRange('bytes=-10', 100), { start: 90, end: 99 });
  t.same(parseRange('bytes=-1000', 100), { start: 0, end: 99 });
  t.same(parseRange('bytes=50-5000', 100), { start: 50, end: 99 });
  t.equal(parseRange('bytes=9-0', 100), undefined, 'inverted range is ignored');
  t.equal(parseRange('bytes=0-1,5-6', 100), undefined, 'multiple ranges are ignored');
  t.equal(parseRange('items=0-1', 100), undefined);
  t.throws(() => parseRange('bytes=100-', 100), { code: 'InvalidRange', headers: { 'content-range': 'bytes */100' } });
  t.throws(() => parseRange('bytes=-0', 100), { code: 'InvalidRange' });
  t.throws(() => parseRange('bytes=0-', 0), { code: 'InvalidRange' });
});
