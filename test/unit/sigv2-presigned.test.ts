import t from 'tap';
import { isPresignedV2, verifyPresignedV2 } from '../../src/auth/sigv2/presigned.js';

// The query-string authentication example of the original S3 developer guide.
const KEY = '44CF9590006BF252F707';
const SECRET = 'OtxrzxIsfpFjA7SwPzILwy8Bw21TLhquhboDYROV';
const QUERY = `AWSAccessKeyId=${KEY}&Expires=1141889120&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D`;
const before = new Date(1141889060 * 1000);
const getSecret = (id: string): string | undefined => (id === KEY ? SECRET : undefined);

t.test('the documented example verifies', async (t) => {
  t.ok(isPresignedV2(QUERY));
  t.notOk(isPresignedV2('X-Amz-Signature=abc'));
  const auth = verifyPresignedV2({ method: 'GET', rawPath: '/quotes/nelson', rawQuery: QUERY, headers: {} }, '/quotes/nelson', { now: before, getSecret });
  t.equal(auth.accessKeyId, KEY);
  t.equal(auth.method, 'presigned');
  t.same(auth.payload, { kind: 'unsigned' });
});

t.test('tampering, expiry, unknown keys and garbage are S3 errors', async (t) => {
  const req = (method: string, path: string, rawQuery: string) => ({ method, rawPath: path, rawQuery, headers: {} });
  const cases: [string, () => unknown, string][] = [
    ['other path', () => verifyPresignedV2(req('GET', '/quotes/nelsox', QUERY), '/quotes/nelsox', { now: before, getSecret }), 'SignatureDoesNotMatch'],
    ['other method', () => verifyPresignedV2(req('PUT', '/quotes/nelson', QUERY), '/quotes/nelson', { now: before, getSecret }), 'SignatureDoesNotMatch'],
    ['subresource added', () => verifyPresignedV2(req('GET', '/quotes/nelson', QUERY + '&acl'), '/quotes/nelson', { now: before, getSecret }), 'SignatureDoesNotMatch'],
    ['expired', () => verifyPresignedV2(req('GET', '/quotes/nelson', QUERY), '/quotes/nelson', { now: new Date(1141889121 * 1000), getSecret }), 'AccessDenied'],
    ['unknown key', () => verifyPresignedV2(req('GET', '/quotes/nelson', QUERY), '/quotes/nelson', { now: before, getSecret: () => undefined }), 'InvalidAccessKeyId'],
    ['too far ahead', () => verifyPresignedV2(req('GET', '/q', `AWSAccessKeyId=${KEY}&Expires=99999999999&Signature=x`), '/q', { now: before, getSecret }), 'AccessDenied'],
    ['no expires', () => verifyPresignedV2(req('GET', '/q', `AWSAccessKeyId=${KEY}&Signature=x`), '/q', { now: before, getSecret }), 'AccessDenied'],
    ['bad escape', () => verifyPresignedV2(req('GET', '/q', `AWSAccessKeyId=${KEY}&Expires=1141889120&Signature=%zz`), '/q', { now: before, getSecret }), 'AccessDenied'],
    ['long signature', () => verifyPresignedV2(req('GET', '/quotes/nelson', `AWSAccessKeyId=${KEY}&Expires=1141889120&Signature=${'A'.repeat(5000)}`), '/quotes/nelson', { now: before, getSecret }), 'SignatureDoesNotMatch'],
  ];
  for (const [name, fn, code] of cases) t.throws(fn, { name: 'S3Error', code }, name);
  // Expired: 403 AccessDenied "Request has expired" with the expiry and the server time, as AWS.
  t.throws(() => verifyPresignedV2(req('GET', '/quotes/nelson', QUERY), '/quotes/nelson', { now: new Date(1141889121 * 1000), getSecret }), {
    code: 'AccessDenied',
    status: 403,
    message: 'Request has expired',
    extra: { Expires: '2006-03-09T07:25:20.000Z', ServerTime: '2006-03-09T07:25:21.000Z' },
  }, 'expired: message and details');
});
