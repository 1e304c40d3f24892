// Bucket policies, read and evaluated (src/auth/bucket-policy), as tables: AWS's documented example
// policies ("Examples of Amazon S3 bucket policies", "Policy evaluation logic") against the requests
// they are written for, and malformed documents against the reason S3's MalformedPolicy gives.
import t, { type Test } from 'tap';
import { MalformedPolicyError, globMatches, parseBucketPolicy } from '../../src/auth/bucket-policy/parse.js';
import { evaluatePolicy, isPublicPolicy, type PolicyPrincipal, type PolicyRequest } from '../../src/auth/bucket-policy/evaluate.js';

const BUCKET = 'amzn-s3-demo-bucket';
const ANON: PolicyPrincipal = { anonymous: true };
const ANA: PolicyPrincipal = { anonymous: false, userName: 'ana', accessKeyId: 'SEANAKEY000000000001' };
const BOB: PolicyPrincipal = { anonymous: false, userName: 'bob', accessKeyId: 'SEBOBKEY000000000002' };

const policy = (...statements: object[]) => JSON.stringify({ Version: '2012-10-17', Statement: statements });
const obj = (key: string) => `arn:aws:s3:::${BUCKET}/${key}`;
const BUCKET_ARN = `arn:aws:s3:::${BUCKET}`;

interface Case {
  name: string;
  principal?: PolicyPrincipal;
  action: string;
  resource: string;
  context?: Record<string, string>;
  expect: 'allow' | 'deny' | 'none';
}

function table(t: Test, doc: string, cases: Case[]): void {
  const parsed = parseBucketPolicy(doc, BUCKET);
  for (const c of cases) {
    const r: PolicyRequest = { principal: c.principal ?? ANON, action: c.action, resource: c.resource, context: { 'aws:sourceip': '192.0.2.10', 'aws:securetransport': 'false', ...c.context } };
    t.equal(evaluatePolicy(parsed, r), c.expect, c.name);
  }
}

t.test('granting read-only permission to anonymous users (public read of objects)', async (t) => {
  const doc = policy({ Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: ['s3:GetObject', 's3:GetObjectVersion'], Resource: [obj('*')] });
  table(t, doc, [
    { name: 'anonymous GetObject', action: 's3:GetObject', resource: obj('a/b.txt'), expect: 'allow' },
    { name: 'a signed user too', principal: BOB, action: 's3:GetObject', resource: obj('x'), expect: 'allow' },
    { name: 'not PutObject', action: 's3:PutObject', resource: obj('x'), expect: 'none' },
    { name: 'not ListBucket (the bucket is another resource)', action: 's3:ListBucket', resource: BUCKET_ARN, expect: 'none' },
  ]);
  t.ok(isPublicPolicy(parseBucketPolicy(doc, BUCKET)), 'public');
});

t.test('read of one prefix only', async (t) => {
  table(t, policy({ Effect: 'Allow', Principal: { AWS: '*' }, Action: 's3:GetObject', Resource: obj('public/*') }), [
    { name: 'inside the prefix', action: 's3:GetObject', resource: obj('public/logo.png'), expect: 'allow' },
    { name: 'deeper inside', action: 's3:GetObject', resource: obj('public/a/b/c'), expect: 'allow' },
    { name: 'outside it', action: 's3:GetObject', resource: obj('private/x'), expect: 'none' },
    { name: 'a key that only starts alike', action: 's3:GetObject', resource: obj('publicity/x'), expect: 'none' },
  ]);
});

t.test('restricting access to specific IP addresses (a Deny with NotIpAddress)', async (t) => {
  const doc = policy({
    Sid: 'IPAllow', Effect: 'Deny', Principal: '*', Action: 's3:*', Resource: [BUCKET_ARN, obj('*')],
    Condition: { NotIpAddress: { 'aws:SourceIp': ['192.0.2.0/24', '2001:db8::/32'] } },
  });
  table(t, doc, [
    { name: 'from inside the range: the policy says nothing', principal: ANA, action: 's3:GetObject', resource: obj('x'), context: { 'aws:sourceip': '192.0.2.77' }, expect: 'none' },
    { name: 'from outside: denied', principal: ANA, action: 's3:GetObject', resource: obj('x'), context: { 'aws:sourceip': '198.51.100.1' }, expect: 'deny' },
    { name: 'IPv6 inside', principal: ANA, action: 's3:PutObject', resource: obj('x'), context: { 'aws:sourceip': '2001:db8::5' }, expect: 'none' },
    { name: 'an IPv4-mapped address is its IPv4', principal: ANA, action: 's3:GetObject', resource: obj('x'), context: { 'aws:sourceip': '::ffff:192.0.2.9' }, expect: 'none' },
    { name: 'the bucket itself too', principal: ANA, action: 's3:ListBucket', resource: BUCKET_ARN, context: { 'aws:sourceip': '203.0.113.1' }, expect: 'deny' },
  ]);
  t.notOk(isPublicPolicy(parseBucketPolicy(doc, BUCKET)), 'a Deny makes nothing public');
});

t.test('restricting access to a specific HTTP referer', async (t) => {
  table(t, policy({
    Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: obj('*'),
    Condition: { StringLike: { 'aws:Referer': ['https://www.example.com/*', 'https://example.com/*'] } },
  }), [
    { name: 'from the site', action: 's3:GetObject', resource: obj('i.png'), context: { 'aws:referer': 'https://www.example.com/shop' }, expect: 'allow' },
    { name: 'from elsewhere', action: 's3:GetObject', resource: obj('i.png'), context: { 'aws:referer': 'https://evil.example/' }, expect: 'none' },
    { name: 'without a referer', action: 's3:GetObject', resource: obj('i.png'), expect: 'none' },
  ]);
});

t.test('requiring HTTPS (aws:SecureTransport false is denied)', async (t) => {
  table(t, policy(
    { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: obj('*') },
    { Effect: 'Deny', Principal: '*', Action: 's3:*', Resource: [BUCKET_ARN, obj('*')], Condition: { Bool: { 'aws:SecureTransport': 'false' } } },
  ), [
    { name: 'over plain HTTP: the deny wins over the allow', action: 's3:GetObject', resource: obj('x'), context: { 'aws:securetransport': 'false' }, expect: 'deny' },
    { name: 'over HTTPS: allowed', action: 's3:GetObject', resource: obj('x'), context: { 'aws:securetransport': 'true' }, expect: 'allow' },
  ]);
});

t.test('listing by prefix (s3:prefix), named users, access keys', async (t) => {
  table(t, policy({
    Effect: 'Allow', Principal: { AWS: ['arn:aws:iam::111122223333:user/ana', 'SEBOBKEY000000000002'] }, Action: 's3:ListBucket', Resource: BUCKET_ARN,
    Condition: { StringEquals: { 's3:prefix': ['', 'home/'] } },
  }), [
    { name: 'ana by her user ARN, the top level', principal: ANA, action: 's3:ListBucket', resource: BUCKET_ARN, context: { 's3:prefix': '' }, expect: 'allow' },
    { name: 'bob by his access key, home/', principal: BOB, action: 's3:ListBucket', resource: BUCKET_ARN, context: { 's3:prefix': 'home/' }, expect: 'allow' },
    { name: 'another prefix', principal: ANA, action: 's3:ListBucket', resource: BUCKET_ARN, context: { 's3:prefix': 'secret/' }, expect: 'none' },
    { name: 'no prefix given: a positive operator fails', principal: ANA, action: 's3:ListBucket', resource: BUCKET_ARN, expect: 'none' },
    { name: 'nobody anonymous', action: 's3:ListBucket', resource: BUCKET_ARN, context: { 's3:prefix': '' }, expect: 'none' },
  ]);
  table(t, policy({ Effect: 'Allow', Principal: '*', Action: 's3:ListBucket', Resource: BUCKET_ARN, Condition: { StringEqualsIfExists: { 's3:prefix': 'home/' } } }), [
    { name: 'IfExists: a request without the key passes', action: 's3:ListBucket', resource: BUCKET_ARN, expect: 'allow' },
    { name: 'IfExists: with another value it does not', action: 's3:ListBucket', resource: BUCKET_ARN, context: { 's3:prefix': 'x/' }, expect: 'none' },
  ]);
  table(t, policy({ Effect: 'Deny', Principal: '*', Action: 's3:ListBucket', Resource: BUCKET_ARN, Condition: { StringNotLike: { 's3:prefix': 'home/*' } } }), [
    { name: 'a negated operator holds without the key', action: 's3:ListBucket', resource: BUCKET_ARN, expect: 'deny' },
    { name: 'and not for a matching value', action: 's3:ListBucket', resource: BUCKET_ARN, context: { 's3:prefix': 'home/ana/' }, expect: 'none' },
  ]);
});

t.test('explicit deny beats every allow; wildcards in actions ignore case; NotAction and NotResource', async (t) => {
  table(t, policy(
    { Effect: 'Allow', Principal: '*', Action: 'S3:get*', Resource: obj('*') },
    { Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: obj('secret/*') },
  ), [
    { name: 's3:Get* allows GetObjectVersion', action: 's3:GetObjectVersion', resource: obj('a'), expect: 'allow' },
    { name: 'not PutObject', action: 's3:PutObject', resource: obj('a'), expect: 'none' },
    { name: 'the deny on secret/', action: 's3:GetObject', resource: obj('secret/k'), expect: 'deny' },
  ]);
  table(t, policy({ Effect: 'Deny', Principal: '*', NotAction: ['s3:GetObject', 's3:ListBucket'], Resource: '*' }), [
    { name: 'NotAction: everything but reading is denied', action: 's3:DeleteObject', resource: obj('a'), expect: 'deny' },
    { name: 'reading is not', action: 's3:GetObject', resource: obj('a'), expect: 'none' },
  ]);
  table(t, policy({ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', NotResource: obj('private/*') }), [
    { name: 'NotResource: outside private/', action: 's3:GetObject', resource: obj('p.txt'), expect: 'allow' },
    { name: 'inside it', action: 's3:GetObject', resource: obj('private/p.txt'), expect: 'none' },
  ]);
  table(t, policy({ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: obj('img/??.png') }), [
    { name: '? is one character', action: 's3:GetObject', resource: obj('img/ab.png'), expect: 'allow' },
    { name: 'not two', action: 's3:GetObject', resource: obj('img/abc.png'), expect: 'none' },
    { name: 'resources keep case', action: 's3:GetObject', resource: obj('IMG/ab.png'), expect: 'none' },
  ]);
});

t.test('the 2008 version, one statement as an object, a Statement without Sid', async (t) => {
  const doc = JSON.stringify({ Version: '2008-10-17', Statement: { Effect: 'Allow', Principal: { AWS: 'ana' }, Action: 's3:PutObject', Resource: obj('uploads/*') } });
  table(t, doc, [{ name: 'ana may put', principal: ANA, action: 's3:PutObject', resource: obj('uploads/f'), expect: 'allow' }]);
});

t.test('malformed policies: MalformedPolicy with the reason', async (t) => {
  const ok = { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: obj('*') };
  const cases: [string, string, RegExp][] = [
    ['not JSON', '{"Version": ', /valid JSON/],
    ['an array', '[]', /first byte must be '\{'/],
    ['no Statement', JSON.stringify({ Version: '2012-10-17' }), /Missing required field Statement/],
    ['a bad version', JSON.stringify({ Version: '2020-01-01', Statement: [ok] }), /Invalid Version/],
    ['no Effect', policy({ ...ok, Effect: undefined }), /Missing required field Effect/],
    ['a bad Effect', policy({ ...ok, Effect: 'Maybe' }), /Invalid effect: Maybe/],
    ['no Principal', policy({ ...ok, Principal: undefined }), /Missing required field Principal/],
    ['a Service principal', policy({ ...ok, Principal: { Service: 'logging.s3.amazonaws.com' } }), /Invalid principal/],
    ['NotPrincipal', policy({ ...ok, NotPrincipal: { AWS: 'ana' } }), /NotPrincipal is not supported/],
    ['an unknown action', policy({ ...ok, Action: 's3:GetObjekt' }), /invalid action: s3:GetObjekt/],
    ['another service', policy({ ...ok, Action: 'ec2:RunInstances' }), /invalid action/],
    ['another bucket', policy({ ...ok, Resource: 'arn:aws:s3:::someone-else/*' }), /invalid resource.*not in bucket/],
    ['not an S3 ARN', policy({ ...ok, Resource: 'arn:aws:iam::1:user/x' }), /invalid resource/],
    ['a policy variable', policy({ ...ok, Resource: obj('home/${aws:username}/*') }), /variables are not supported/],
    ['an unknown operator', policy({ ...ok, Condition: { DateGreaterThan: { 'aws:CurrentTime': '2026-01-01' } } }), /Invalid Condition type: DateGreaterThan/],
    ['an unknown key', policy({ ...ok, Condition: { StringEquals: { 'aws:PrincipalOrgID': 'o-1' } } }), /invalid condition key: aws:PrincipalOrgID/],
    ['a bad CIDR', policy({ ...ok, Condition: { IpAddress: { 'aws:SourceIp': '300.1.2.3/8' } } }), /not an IP address or CIDR/],
    ['Bool not true/false', policy({ ...ok, Condition: { Bool: { 'aws:SecureTransport': 'yes' } } }), /true or false/],
    ['an unknown field', policy({ ...ok, Effekt: 'Allow' }), /Unknown field Effekt/],
    ['too large', policy(...Array.from({ length: 300 }, (_, i) => ({ ...ok, Sid: `s${i}` }))), /at most 20480 bytes/],
  ];
  for (const [name, doc, reason] of cases) {
    t.throws(() => parseBucketPolicy(doc, BUCKET), reason, name);
    try {
      parseBucketPolicy(doc, BUCKET);
    } catch (err) {
      t.ok(err instanceof MalformedPolicyError, `${name}: a MalformedPolicyError`);
    }
  }
});

t.test('the wildcard matcher', async (t) => {
  const rows: [string, string, boolean][] = [
    ['*', '', true], ['a*', 'abc', true], ['a*c', 'abbbc', true], ['a*c', 'abcd', false], ['*.png', 'x/y.png', true],
    ['a?c', 'abc', true], ['a?c', 'ac', false], ['**', 'x', true], ['a*b*c', 'axxbyyc', true], ['a*b*c', 'axxbyy', false],
  ];
  for (const [p, v, want] of rows) t.equal(globMatches(p, v, false), want, `${p} ~ ${v}`);
  t.ok(globMatches('S3:GET*', 's3:getobject', true), 'ignoring case when asked');
  const long = `${'a'.repeat(5000)}b`;
  t.notOk(globMatches(`${'*a'.repeat(20)}c`, long, false), 'no blow-up on many stars');
});
