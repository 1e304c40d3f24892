// The e2e suite judges the server with its own signer, chunk encoders and CRCs (test/helpers), not
// with the server's code. This file proves those helpers right against published values, so a
// failure elsewhere points at the server. No server is started here.
import t from 'tap';
import { checksumBase64, checksumBytes } from '../helpers/checksums.js';
import {
  chunkSignature,
  encodeSignedChunks,
  encodeUnsignedTrailerChunks,
  presign,
  signHeaders,
  signedChunksLength,
  trailerSignature,
  deriveSigningKey,
  STREAMING_SIGNED,
  EMPTY_SHA256,
} from '../helpers/signer.js';
import { parseRawResponse } from '../helpers/raw-http.js';
import { parseListObjectsV2, parseS3Error } from '../helpers/xml.js';

// The example credentials and time of the AWS SigV4 S3 documentation.
const EXAMPLE = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const DOC_DATE = new Date('2013-05-24T00:00:00Z');
const SCOPE = '20130524/us-east-1/s3/aws4_request';

t.test('CRC check values ("123456789") and SHA digests', async (t) => {
  const input = Buffer.from('123456789');
  t.equal(checksumBytes('CRC32', input).toString('hex'), 'cbf43926');
  t.equal(checksumBytes('CRC32C', input).toString('hex'), 'e3069283');
  t.equal(checksumBytes('CRC64NVME', input).toString('hex'), 'ae8b14860a799888');
  t.equal(checksumBytes('SHA1', input).toString('hex'), 'f7c3bc1d808e04732adf679965ccc34ca7ae3441');
  t.equal(checksumBase64('CRC32', Buffer.alloc(0)), 'AAAAAA==');
  t.equal(checksumBase64('CRC64NVME', Buffer.alloc(0)), 'AAAAAAAAAAA=');
  // The trailer example of the AWS docs: 66,560 bytes of 'a' have CRC32C sOO8/Q==.
  t.equal(checksumBase64('CRC32C', Buffer.alloc(66560, 'a')), 'sOO8/Q==');
  // "abc" has CRC32 NSRBwg== (as in SDK test suites).
  t.equal(checksumBase64('CRC32', Buffer.from('abc')), 'NSRBwg==');
});

t.test('header signature: the AWS GetObject example', async (t) => {
  const signed = await signHeaders({
    host: 'examplebucket.s3.amazonaws.com',
    method: 'GET',
    path: '/test.txt',
    headers: { range: 'bytes=0-9' },
    payloadHash: EMPTY_SHA256,
    credentials: EXAMPLE,
    signingDate: DOC_DATE,
  });
  t.equal(signed.signature, 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
  t.equal(signed.scope, SCOPE);
  t.equal(signed.longDate, '20130524T000000Z');
});

t.test('presigned URL: the AWS example', async (t) => {
  const p = await presign({
    host: 'examplebucket.s3.amazonaws.com',
    method: 'GET',
    path: '/test.txt',
    expiresIn: 86400,
    credentials: EXAMPLE,
    signingDate: DOC_DATE,
  });
  t.match(p.target, /^\/test\.txt\?/);
  t.match(p.target, /X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404/);
  t.match(p.target, /X-Amz-Expires=86400/);
  t.match(p.target, /X-Amz-SignedHeaders=host(&|$)/);
  t.notOk(p.headers.some(([k]) => k.toLowerCase() === 'x-amz-content-sha256'), 'no payload header on the wire');
});

t.test('STREAMING-AWS4-HMAC-SHA256-PAYLOAD: the AWS example (seed, chunks, length)', async (t) => {
  const data = Buffer.alloc(66560, 'a');
  const seed = await signHeaders({
    host: 's3.amazonaws.com',
    method: 'PUT',
    path: '/examplebucket/chunkObject.txt',
    headers: {
      'content-encoding': 'aws-chunked',
      'content-length': '66824',
      'x-amz-decoded-content-length': '66560',
      'x-amz-storage-class': 'REDUCED_REDUNDANCY',
    },
    payloadHash: STREAMING_SIGNED,
    credentials: EXAMPLE,
    signingDate: DOC_DATE,
  });
  t.equal(seed.signature, '4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9', 'seed signature');
  const ctx = { signingKey: seed.signingKey, longDate: seed.longDate, scope: seed.scope, seedSignature: seed.signature };
  const s1 = chunkSignature(ctx, seed.signature, data.subarray(0, 65536));
  const s2 = chunkSignature(ctx, s1, data.subarray(65536));
  const s3 = chunkSignature(ctx, s2, Buffer.alloc(0));
  t.equal(s1, 'ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648');
  t.equal(s2, '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497');
  t.equal(s3, 'b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9');
  const body = encodeSignedChunks(data, ctx, { chunkSize: 65536 });
  t.equal(body.length, 66824, 'documented Content-Length');
  t.equal(signedChunksLength(data, { chunkSize: 65536 }), 66824);
  t.ok(body.subarray(0, 100).toString('latin1').startsWith(`10000;chunk-signature=${s1}\r\n`));
  t.ok(body.toString('latin1').endsWith(`\r\n0;chunk-signature=${s3}\r\n\r\n`));
});

t.test('STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: the AWS example (chunks, trailer signature)', async (t) => {
  const data = Buffer.alloc(66560, 'a');
  const ctx = {
    signingKey: deriveSigningKey(EXAMPLE.secretAccessKey, '20130524', 'us-east-1'),
    longDate: '20130524T000000Z',
    scope: SCOPE,
    seedSignature: '106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e',
  };
  const s1 = chunkSignature(ctx, ctx.seedSignature, data.subarray(0, 65536));
  const s2 = chunkSignature(ctx, s1, data.subarray(65536));
  const s3 = chunkSignature(ctx, s2, Buffer.alloc(0));
  t.equal(s1, 'b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2');
  t.equal(s2, '1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7');
  t.equal(s3, '2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992');
  const trailers: Array<[string, string]> = [['x-amz-checksum-crc32c', 'sOO8/Q==']];
  t.equal(trailerSignature(ctx, s3, trailers), 'd81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435');
  const body = encodeSignedChunks(data, ctx, { chunkSize: 65536, trailers }).toString('latin1');
  t.ok(body.endsWith(`0;chunk-signature=${s3}\r\nx-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n`));
});

t.test('STREAMING-UNSIGNED-PAYLOAD-TRAILER framing', async (t) => {
  const body = encodeUnsignedTrailerChunks(Buffer.from('abc'), 2, [['x-amz-checksum-crc32', 'NSRBwg==']]);
  t.equal(body.toString('latin1'), '2\r\nab\r\n1\r\nc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n');
});

t.test('response and XML parsing', async (t) => {
  const rest = 'r><Code>AccessDenied</Code><Message>a &amp; b</Message><RequestId>r1</RequestId></Error>';
  const raw = Buffer.from(
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n' +
      `5\r\n<Erro\r\n${rest.length.toString(16)}\r\n${rest}\r\n0\r\n\r\n`,
    'latin1',
  );
  const res = parseRawResponse(raw, false);
  t.equal(res.status, 403);
  t.same(parseS3Error(res.text), { code: 'AccessDenied', message: 'a & b', requestId: 'r1' });
  const list = parseListObjectsV2(
    '<ListBucketResult><KeyCount>2</KeyCount><Contents><Key> a&lt;b </Key></Contents><Contents><Key>007</Key></Contents>' +
      '<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes><IsTruncated>false</IsTruncated></ListBucketResult>',
  );
  t.same(list.keys, [' a<b ', '007']);
  t.same(list.commonPrefixes, ['p/']);
  t.equal(list.keyCount, 2);
});
