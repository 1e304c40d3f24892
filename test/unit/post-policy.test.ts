// POST Object policies and form signatures: parsing (InvalidPolicyDocument), the conditions, `${filename}`,
// the coverage rule (Extra input fields), expiry and content-length-range, and the SigV4 signature of
// AWS's own example (sigv4-post-example: policy, credentials and signature as the page gives them).
import t from 'tap';
import { createHmac } from 'node:crypto';
import { S3Error } from '../../src/errors/s3-errors.js';
import { checkFileSize, checkPostPolicy, expandFilename, parsePostPolicy, type FormField } from '../../src/s3/post-policy.js';
import { verifyPostSignature } from '../../src/s3/post-auth.js';

function b64(doc: unknown): string {
  return Buffer.from(typeof doc === 'string' ? doc : JSON.stringify(doc)).toString('base64');
}

function form(entries: Record<string, string>): Map<string, FormField> {
  return new Map(Object.entries(entries).map(([name, value]) => [name.toLowerCase(), { name, value }]));
}

function caught(fn: () => unknown): { code: string; status: number; message: string; extra: Record<string, string> } {
  try {
    fn();
  } catch (err) {
    if (err instanceof S3Error) return { code: err.code, status: err.status, message: err.message, extra: err.extra };
    throw err;
  }
  throw new Error('expected an S3Error');
}

const NOW = Date.parse('2026-06-01T12:00:00Z');
const LATER = '2026-06-01T13:00:00Z';
const REQ = { now: NOW, bucket: 'photos' };

t.test('malformed policies are 400 InvalidPolicyDocument with S3 messages', async (t) => {
  const cases: [string, unknown, string][] = [
    ['not base64', '%%%', 'Invalid Policy: invalid Base64 encoding.'],
    ['not JSON', b64('{"expiration": '), 'Invalid Policy: Invalid JSON.'],
    ['no expiration', b64({ conditions: [] }), 'Invalid Policy: Policy missing expiration.'],
    ['no conditions', b64({ expiration: LATER }), 'Invalid Policy: Policy missing conditions.'],
    ['CONDITIONS (names are case-sensitive)', b64({ expiration: LATER, CONDITIONS: [] }), "Invalid Policy: Unexpected: 'conditions'"],
    ['EXPIRATION', b64({ EXPIRATION: LATER, conditions: [] }), "Invalid Policy: Unexpected: 'expiration'"],
    ['expiration with an offset', b64({ expiration: '2026-06-01T13:00:00+02:00', conditions: [] }), "Invalid Policy: Invalid 'expiration' value: '2026-06-01T13:00:00+02:00'"],
    ['expiration with a space', b64({ expiration: '2026-06-01 13:00:00.123456+00:00', conditions: [] }), "Invalid Policy: Invalid 'expiration' value: '2026-06-01 13:00:00.123456+00:00'"],
    ['expiration on a day that does not exist', b64({ expiration: '2026-02-30T00:00:00Z', conditions: [] }), "Invalid Policy: Invalid 'expiration' value: '2026-02-30T00:00:00Z'"],
    ['conditions not a list', b64({ expiration: LATER, conditions: {} }), "Invalid Policy: Invalid 'conditions' value: must be a List."],
    ['empty simple condition', b64({ expiration: LATER, conditions: [{}] }), 'Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.'],
    ['two properties', b64({ expiration: LATER, conditions: [{ bucket: 'a', key: 'b' }] }), 'Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.'],
    ['a number', b64({ expiration: LATER, conditions: [{ 'Content-Length': 5 }] }), 'Invalid Policy: Invalid Simple-Condition: value must be a string.'],
    ['null', b64({ expiration: LATER, conditions: [{ success_action_redirect: null }] }), 'Invalid Policy: Invalid JSON.'],
    ['empty list', b64({ expiration: LATER, conditions: [[]] }), 'Invalid Policy: Invalid Condition: missing operation identifier.'],
    ['unknown operation', b64({ expiration: LATER, conditions: [['ends-with', '$key', 'x']] }), "Invalid Policy: Invalid Condition: unknown operation 'ends-with'."],
    ['eq with two items', b64({ expiration: LATER, conditions: [['eq', '$key']] }), 'Invalid Policy: Invalid eq: wrong number of arguments.'],
    ['range with one bound', b64({ expiration: LATER, conditions: [['content-length-range', 0]] }), 'Invalid Policy: Invalid content-length-range: wrong number of arguments.'],
    ['negative range', b64({ expiration: LATER, conditions: [['content-length-range', -1, 0]] }), 'Invalid Policy: Invalid content-length-range: the bounds may not be negative.'],
    ['float range', b64({ expiration: LATER, conditions: [['content-length-range', 0, 512.5]] }), 'Invalid Policy: Invalid JSON.'],
    ['a condition that is a string', b64({ expiration: LATER, conditions: ['key'] }), 'Invalid Policy: Invalid condition test: must be a List or Object.'],
  ];
  for (const [what, doc, message] of cases) {
    const e = caught(() => parsePostPolicy(doc as string));
    t.same([e.code, e.status, e.message], ['InvalidPolicyDocument', 400, message], what);
  }
});

t.test('a policy parses; names and operators are case-insensitive, range bounds may be digit strings', async (t) => {
  const p = parsePostPolicy(b64({ expiration: LATER, conditions: [{ bUcKeT: 'photos' }, ['StArTs-WiTh', '$KeY', 'u/'], ['content-length-range', '5', '10']] }));
  t.equal(p.expiration, Date.parse(LATER));
  t.same(p.conditions.map((c) => c.op), ['eq', 'starts-with', 'content-length-range']);
  t.same(checkPostPolicy(p, form({ kEy: 'u/a.txt' }), REQ), { min: 5, max: 10 });
  // The fractional form of the documentation's examples is accepted too.
  t.equal(parsePostPolicy(b64({ expiration: '2026-06-01T13:00:00.000Z', conditions: [] })).expiration, Date.parse(LATER));
});

t.test('expiry: 403 AccessDenied "Policy expired."', async (t) => {
  const p = parsePostPolicy(b64({ expiration: '2026-06-01T11:59:59Z', conditions: [] }));
  const e = caught(() => checkPostPolicy(p, form({}), REQ));
  t.same([e.code, e.status, e.message], ['AccessDenied', 403, 'Invalid according to Policy: Policy expired.']);
  const exact = parsePostPolicy(b64({ expiration: '2026-06-01T12:00:00Z', conditions: [] }));
  t.equal(checkPostPolicy(exact, form({}), REQ), undefined, 'valid up to its expiration instant');
});

t.test('conditions: eq, starts-with, missing fields, the printed condition', async (t) => {
  const policy = (conditions: unknown[]): ReturnType<typeof parsePostPolicy> => parsePostPolicy(b64({ expiration: LATER, conditions }));
  const failed = (conditions: unknown[], fields: Record<string, string>): string => {
    const e = caught(() => checkPostPolicy(policy(conditions), form(fields), REQ));
    t.equal(e.status, 403);
    t.equal(e.code, 'AccessDenied');
    return e.message;
  };
  const prefix = 'Invalid according to Policy: Policy Condition failed: ';
  t.equal(failed([{ key: 'a.txt' }], { key: 'b.txt' }), `${prefix}["eq", "$key", "a.txt"]`, 'a simple condition prints as eq');
  t.equal(failed([['eq', '$Key', 'a.txt']], { key: 'A.txt' }), `${prefix}["eq", "$Key", "a.txt"]`, 'values are case-sensitive; the policy spelling is kept');
  t.equal(failed([['starts-with', '$key', 'user/']], { key: 'other/x' }), `${prefix}["starts-with", "$key", "user/"]`);
  t.equal(failed([['starts-with', '$x-amz-meta-tag', ''], { key: 'k' }], { key: 'k' }), `${prefix}["starts-with", "$x-amz-meta-tag", ""]`, 'an absent field fails even an empty prefix');
  t.equal(failed([['eq', 'key', 'k']], { key: 'k' }), `${prefix}["eq", "key", "k"]`, 'a name without $ never matches');
  t.equal(failed([['content-length-range', 'test', '10']], {}), `${prefix}["content-length-range", "test", "10"]`);
  t.equal(failed([['eq', '$Content-Disposition', 'filename="a.png"']], { 'Content-Disposition': 'x' }), `${prefix}["eq", "$Content-Disposition", "filename=\\"a.png\\""]`, 'quotes are escaped');
  // The bucket condition is matched against the addressed bucket, not the form's `bucket` field.
  t.equal(failed([{ bucket: 'other' }, { key: 'k' }], { key: 'k', bucket: 'other' }), `${prefix}["eq", "$bucket", "other"]`);
  t.equal(checkPostPolicy(policy([{ bucket: 'photos' }, { key: 'k' }]), form({ key: 'k', bucket: 'photos' }), REQ), undefined);
  // starts-with "" allows anything present; Content-Type lists must match item by item.
  t.equal(checkPostPolicy(policy([{ key: 'k' }, ['starts-with', '$success_action_redirect', '']]), form({ key: 'k', success_action_redirect: 'https://x/' }), REQ), undefined);
  t.equal(checkPostPolicy(policy([{ key: 'k' }, ['starts-with', '$Content-Type', 'image/']]), form({ key: 'k', 'Content-Type': 'image/jpg,image/png' }), REQ), undefined);
  t.equal(failed([{ key: 'k' }, ['starts-with', '$Content-Type', 'image/']], { key: 'k', 'Content-Type': 'image/jpg,text/plain' }), `${prefix}["starts-with", "$Content-Type", "image/"]`);
  t.equal(checkPostPolicy(policy([{ key: 'k' }, ['starts-with', '$x-amz-meta-list', 'a']]), form({ key: 'k', 'x-amz-meta-list': 'a,b' }), REQ), undefined, 'other fields are plain strings');
});

t.test('every field needs a condition, except the exempt ones', async (t) => {
  const p = parsePostPolicy(b64({ expiration: LATER, conditions: [['starts-with', '$key', '']] }));
  const e = caught(() => checkPostPolicy(p, form({ key: 'k', 'X-Custom': '1', Zeta: '2' }), REQ));
  t.same([e.code, e.status, e.message], ['AccessDenied', 403, 'Invalid according to Policy: Extra input fields: X-Custom, Zeta'], 'named as sent');
  const exempt = form({
    key: 'k', policy: 'p', 'X-Amz-Signature': 's', file: 'f', 'x-ignore-anything': '1', AWSAccessKeyId: 'a', signature: 's',
  });
  t.equal(checkPostPolicy(p, exempt, REQ), undefined);
  const bucketField = caught(() => checkPostPolicy(p, form({ key: 'k', bucket: 'photos' }), REQ));
  t.equal(bucketField.message, 'Invalid according to Policy: Extra input fields: bucket', 'a bucket field needs its condition like any other');
});

t.test('content-length-range: inclusive; EntityTooSmall / EntityTooLarge with the sizes', async (t) => {
  const range = { min: 5, max: 10 };
  checkFileSize(range, 5);
  checkFileSize(range, 10);
  checkFileSize(undefined, 1e12);
  const small = caught(() => checkFileSize(range, 1));
  t.same([small.code, small.status, small.extra], ['EntityTooSmall', 400, { ProposedSize: '1', MinSizeAllowed: '5' }]);
  const large = caught(() => checkFileSize(range, 12));
  t.same([large.code, large.status, large.extra], ['EntityTooLarge', 400, { ProposedSize: '12', MaxSizeAllowed: '10' }]);
  const p = parsePostPolicy(b64({ expiration: LATER, conditions: [['content-length-range', 0, 100], ['content-length-range', 10, 1000]] }));
  t.same(checkPostPolicy(p, form({}), REQ), { min: 10, max: 100 }, 'several ranges: all must hold');
});

t.test('${filename}: the part after the last slash or backslash; kept literally without a filename', async (t) => {
  t.equal(expandFilename('user/${filename}', 'C:\\Program Files\\directory1\\file.txt'), 'user/file.txt');
  t.equal(expandFilename('user/${filename}', '/tmp/a/b.png'), 'user/b.png');
  t.equal(expandFilename('${filename}-${filename}', 'x'), 'x-x');
  t.equal(expandFilename('user/${filename}', ''), 'user/');
  t.equal(expandFilename('user/${filename}', undefined), 'user/${filename}');
  t.equal(expandFilename('plain', 'x'), 'plain');
});

// AWS's example (sigv4-post-example): a 648-byte policy with CRLF line ends, the example credentials,
// and the signature the page states.
const AWS_POLICY = [
  '{ "expiration": "2015-12-30T12:00:00.000Z",',
  '  "conditions": [',
  '    {"bucket": "sigv4examplebucket"},',
  '    ["starts-with", "$key", "user/user1/"],',
  '    {"acl": "public-read"},',
  '    {"success_action_redirect": "http://sigv4examplebucket.s3.amazonaws.com/successful_upload.html"},',
  '    ["starts-with", "$Content-Type", "image/"],',
  '    {"x-amz-meta-uuid": "14365123651274"},',
  '    {"x-amz-server-side-encryption": "AES256"},',
  '    ["starts-with", "$x-amz-meta-tag", ""],',
  '',
  '    {"x-amz-credential": "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request"},',
  '    {"x-amz-algorithm": "AWS4-HMAC-SHA256"},',
  '    {"x-amz-date": "20151229T000000Z" }',
  '  ]',
  '}',
].join('\r\n');
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

t.test("SigV4 form signature: AWS's example verifies; any change is SignatureDoesNotMatch", async (t) => {
  const policy = Buffer.from(AWS_POLICY).toString('base64');
  t.equal(Buffer.byteLength(AWS_POLICY), 648);
  const fields = {
    'X-Amz-Credential': 'AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request',
    'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    'X-Amz-Date': '20151229T000000Z',
    Policy: policy,
    'X-Amz-Signature': '8afdbf4008c03f22c2cd3cdb72e4afbb1f6a588f3255ac628749a66d7f09699e',
  };
  const opts = { region: 'us-east-1', getSecret: (id: string) => (id === 'AKIAIOSFODNN7EXAMPLE' ? AWS_SECRET : undefined) };
  t.same(verifyPostSignature(form(fields), opts), { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', policy });
  // Field names are case-insensitive; the decoded policy parses (strict JSON) and its conditions check.
  const parsed = parsePostPolicy(policy);
  t.equal(parsed.conditions.length, 11);

  const truncated = caught(() => verifyPostSignature(form({ ...fields, Policy: policy.slice(0, -2) }), opts));
  t.same([truncated.code, truncated.status], ['SignatureDoesNotMatch', 403], 'the policy as sent is what is signed');
  t.equal(truncated.extra.StringToSign, policy.slice(0, -2));
  t.equal(truncated.extra.AWSAccessKeyId, 'AKIAIOSFODNN7EXAMPLE');
  t.equal(caught(() => verifyPostSignature(form({ ...fields, 'X-Amz-Signature': 'ab' }), opts)).code, 'SignatureDoesNotMatch');
  t.equal(caught(() => verifyPostSignature(form({ ...fields, 'X-Amz-Credential': 'NOPE/20151229/us-east-1/s3/aws4_request' }), opts)).code, 'InvalidAccessKeyId');
});

t.test('SigV4 form fields: missing, malformed, another region', async (t) => {
  const opts = { region: 'us-east-1', getSecret: () => 'secret' };
  const base = {
    'x-amz-algorithm': 'AWS4-HMAC-SHA256',
    'x-amz-credential': 'AK/20260601/us-east-1/s3/aws4_request',
    'x-amz-date': '20260601T000000Z',
    policy: 'e30=',
    'x-amz-signature': '00',
  };
  for (const [drop, spelled] of [['x-amz-algorithm', 'X-Amz-Algorithm'], ['x-amz-credential', 'X-Amz-Credential'], ['x-amz-date', 'X-Amz-Date'], ['x-amz-signature', 'X-Amz-Signature'], ['policy', 'Policy']] as const) {
    const fields = { ...base } as Record<string, string>;
    delete fields[drop];
    const e = caught(() => verifyPostSignature(form(fields), opts));
    t.same([e.code, e.status, e.message, e.extra], ['InvalidArgument', 400, `Bucket POST must contain a field named '${spelled}'.  If it is specified, please check the order of the fields.`, { ArgumentName: spelled, ArgumentValue: '' }], `without ${drop}`);
  }
  const region = caught(() => verifyPostSignature(form({ ...base, 'x-amz-credential': 'AK/20260601/eu-west-1/s3/aws4_request' }), opts));
  t.same([region.code, region.message, region.extra.Region, region.extra.ArgumentName], ['InvalidArgument', "the region 'eu-west-1' is wrong; expecting 'us-east-1'", 'us-east-1', 'X-Amz-Credential']);
  t.equal(caught(() => verifyPostSignature(form({ ...base, 'x-amz-credential': 'AK/20260601/us-east-1' }), opts)).extra.ArgumentName, 'X-Amz-Credential');
  t.equal(caught(() => verifyPostSignature(form({ ...base, 'x-amz-algorithm': 'AWS4-HMAC-SHA1' }), opts)).extra.ArgumentName, 'X-Amz-Algorithm');
  t.equal(caught(() => verifyPostSignature(form({ ...base, 'x-amz-date': '2026-06-01' }), opts)).message, 'X-Amz-Date must be formated via ISO8601 Long format');
  t.equal(verifyPostSignature(form({ key: 'k', policy: 'e30=' }), opts), undefined, 'a policy alone is an anonymous form');
});

t.test('SigV2 form signature: base64 HMAC-SHA1 of the policy', async (t) => {
  const policy = b64({ expiration: LATER, conditions: [] });
  const signature = createHmac('sha1', 'secret2').update(policy).digest('base64');
  const opts = { region: 'us-east-1', getSecret: (id: string) => (id === 'AK2' ? 'secret2' : undefined) };
  t.same(verifyPostSignature(form({ awsaccesskeyid: 'AK2', Signature: signature, POLICY: policy }), opts), { accessKeyId: 'AK2', policy });
  t.equal(caught(() => verifyPostSignature(form({ AWSAccessKeyId: 'AK2', signature: signature.split('').reverse().join(''), policy }), opts)).code, 'SignatureDoesNotMatch');
  t.equal(caught(() => verifyPostSignature(form({ AWSAccessKeyId: 'AK2', policy }), opts)).message, "Bucket POST must contain a field named 'Signature'.  If it is specified, please check the order of the fields.");
});
