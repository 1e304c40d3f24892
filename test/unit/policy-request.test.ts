// What a bucket policy judges for each S3 operation (src/s3/policy-request.ts): the action and resource
// AWS's "Required permissions" name, the version actions with ?versionId=, both sides of a copy, and
// the condition keys a request carries (and the ones it does not).
import t from 'tap';
import { policyRequests, type PolicyFacts } from '../../src/s3/policy-request.js';
import type { OperationName } from '../../src/s3/router.js';

const ANA = { anonymous: false as const, userName: 'ana', accessKeyId: 'SEANA' };
const facts = (operation: OperationName, over: Partial<PolicyFacts> = {}): PolicyFacts => ({
  operation, bucket: 'b', key: 'k/x.txt', query: new Map(), principal: ANA, clientIp: '192.0.2.1', secure: false, ...over,
});
const pairs = (f: PolicyFacts) => policyRequests(f).map((r) => `${r.action} ${r.resource}`);

t.test('each operation: its action and resource', async (t) => {
  const rows: [OperationName, string[]][] = [
    ['GetObject', ['s3:GetObject arn:aws:s3:::b/k/x.txt']],
    ['HeadObject', ['s3:GetObject arn:aws:s3:::b/k/x.txt']],
    ['PutObject', ['s3:PutObject arn:aws:s3:::b/k/x.txt']],
    ['DeleteObject', ['s3:DeleteObject arn:aws:s3:::b/k/x.txt']],
    ['ListObjectsV2', ['s3:ListBucket arn:aws:s3:::b']],
    ['ListObjectVersions', ['s3:ListBucketVersions arn:aws:s3:::b']],
    ['HeadBucket', ['s3:ListBucket arn:aws:s3:::b']],
    ['CreateMultipartUpload', ['s3:PutObject arn:aws:s3:::b/k/x.txt']],
    ['CompleteMultipartUpload', ['s3:PutObject arn:aws:s3:::b/k/x.txt']],
    ['AbortMultipartUpload', ['s3:AbortMultipartUpload arn:aws:s3:::b/k/x.txt']],
    ['ListParts', ['s3:ListMultipartUploadParts arn:aws:s3:::b/k/x.txt']],
    ['ListMultipartUploads', ['s3:ListBucketMultipartUploads arn:aws:s3:::b']],
    ['DeleteBucketCors', ['s3:PutBucketCORS arn:aws:s3:::b']],
    ['DeleteBucketTagging', ['s3:PutBucketTagging arn:aws:s3:::b']],
    ['GetObjectAttributes', ['s3:GetObject arn:aws:s3:::b/k/x.txt', 's3:GetObjectAttributes arn:aws:s3:::b/k/x.txt']],
    ['ListBuckets', []],
    ['CreateBucket', []],
  ];
  for (const [op, want] of rows) t.same(pairs(facts(op)), want, op);
});

t.test('?versionId= asks for the version actions', async (t) => {
  const v = new Map([['versionId', 'abc']]);
  t.same(pairs(facts('GetObject', { query: v })), ['s3:GetObjectVersion arn:aws:s3:::b/k/x.txt']);
  t.same(pairs(facts('DeleteObject', { query: v })), ['s3:DeleteObjectVersion arn:aws:s3:::b/k/x.txt']);
  t.same(pairs(facts('PutObjectTagging', { query: v })), ['s3:PutObjectVersionTagging arn:aws:s3:::b/k/x.txt']);
  t.same(pairs(facts('PutObject', { query: v })), ['s3:PutObject arn:aws:s3:::b/k/x.txt'], 'no version action for a write');
});

t.test('a copy reads its source and writes its destination', async (t) => {
  t.same(pairs(facts('CopyObject', { copySource: { bucket: 'src', key: 'a b' } })), ['s3:PutObject arn:aws:s3:::b/k/x.txt', 's3:GetObject arn:aws:s3:::src/a b']);
  t.same(pairs(facts('UploadPartCopy', { copySource: { bucket: 'src', key: 'a', versionId: 'v1' } })), ['s3:PutObject arn:aws:s3:::b/k/x.txt', 's3:GetObjectVersion arn:aws:s3:::src/a']);
});

t.test('condition keys: what the request carries, and only that', async (t) => {
  const [list] = policyRequests(facts('ListObjectsV2', { query: new Map([['prefix', 'home/'], ['delimiter', '/']]), secure: true, referer: 'https://example.com/', userAgent: 'aws-cli/2' }));
  t.same(list?.context, {
    'aws:sourceip': '192.0.2.1', 'aws:securetransport': 'true', 'aws:referer': 'https://example.com/', 'aws:useragent': 'aws-cli/2', 'aws:username': 'ana',
    's3:prefix': 'home/', 's3:delimiter': '/',
  });
  const [anon] = policyRequests(facts('GetObject', { principal: { anonymous: true } }));
  t.same(anon?.context, { 'aws:sourceip': '192.0.2.1', 'aws:securetransport': 'false' }, 'anonymous: no username; no referer sent: none');
  const [get] = policyRequests(facts('GetObject', { query: new Map([['prefix', 'x']]) }));
  t.notOk(get && 's3:prefix' in get.context, 's3:prefix belongs to listings only');
  const [bare] = policyRequests(facts('ListObjects'));
  t.notOk(bare && 's3:prefix' in bare.context, 'a listing without prefix has no s3:prefix');
});
