// The bucket-access service (src/buckets/bucket-access.ts): one decision for all a request asks of a
// bucket, canned ACLs as statements under the policy's Deny, the per-process cache that a change made
// elsewhere reaches within its second, and a stored policy this version cannot read failing closed.
import t from 'tap';
import { join } from 'node:path';
import { aclStatements, BucketAccess, judge } from '../../src/buckets/bucket-access.js';
import { parseBucketPolicy } from '../../src/auth/bucket-policy/parse.js';
import type { PolicyRequest } from '../../src/auth/bucket-policy/evaluate.js';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { tempDir } from '../helpers/temp-data.js';

const ask = (action: string, resource: string): PolicyRequest => ({ principal: { anonymous: true }, action, resource, context: { 'aws:sourceip': '127.0.0.1' } });
const GET_A = ask('s3:GetObject', 'arn:aws:s3:::b/a');
const GET_SECRET = ask('s3:GetObject', 'arn:aws:s3:::b/secret/x');
const PUT_A = ask('s3:PutObject', 'arn:aws:s3:::b/a');

t.test('judge: deny if any ask is denied, allow only if every ask is allowed', async (t) => {
  const policy = parseBucketPolicy(
    JSON.stringify({
      Statement: [
        { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::b/*' },
        { Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::b/secret/*' },
      ],
    }),
    'b',
  );
  t.equal(judge(policy, [GET_A]), 'allow');
  t.equal(judge(policy, [GET_A, PUT_A]), 'none', 'one ask the policy says nothing of: the keys decide');
  t.equal(judge(policy, [GET_A, GET_SECRET]), 'deny');
  t.equal(judge(policy, []), 'none', 'nothing asked is nothing allowed');
});

t.test('canned ACLs: list, or list and write, for everyone, and a Deny still beats them', async (t) => {
  const read = { version: '2012-10-17', statements: aclStatements('public-read', 'b') };
  t.equal(judge(read, [ask('s3:ListBucket', 'arn:aws:s3:::b')]), 'allow');
  t.equal(judge(read, [GET_A]), 'none', "an object's reads are its own ACL's, as on AWS");
  t.equal(judge(read, [PUT_A]), 'none');
  const write = { version: '2012-10-17', statements: aclStatements('public-read-write', 'b') };
  t.equal(judge(write, [PUT_A]), 'allow');
  t.equal(judge(write, [ask('s3:PutBucketPolicy', 'arn:aws:s3:::b')]), 'none', 'never bucket administration');
  const denied = parseBucketPolicy(JSON.stringify({ Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:PutObject', Resource: 'arn:aws:s3:::b/a' }] }), 'b');
  t.equal(judge({ version: '2012-10-17', statements: [...denied.statements, ...write.statements] }, [PUT_A]), 'deny');
});

t.test('BucketAccess: cached for at most its TTL, forgotten at once here, unreadable policies fail closed', async (t) => {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const repos = createRepos(db);
  const owner = await repos.users.create('owner');
  const bucket = await repos.buckets.insert({ name: 'b', ownerId: owner.id, region: 'us-east-1' });
  // Not 0: lru-cache takes an entry stored at time 0 for one without a TTL.
  let now = 1_000_000;
  const access = new BucketAccess(repos, { now: () => now });
  t.equal((await access.rulesFor(bucket)).judged, null, 'no policy, no ACL: nothing to judge');
  t.ok(access.held(bucket), 'the answer "none" is held too');

  await repos.bucketAcls.put(bucket.id, 'public-read');
  t.equal((await access.rulesFor(bucket)).judged, null, 'a change made elsewhere is not seen before the TTL');
  now += 1001;
  t.equal(judge((await access.rulesFor(bucket)).judged!, [ask('s3:ListBucket', 'arn:aws:s3:::b')]), 'allow', 'and is seen after it');

  await repos.bucketPolicies.put(bucket.id, JSON.stringify({ Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::b/a' }] }));
  access.forget(bucket);
  t.equal(judge((await access.rulesFor(bucket)).judged!, [GET_A]), 'deny', 'forget(): at once');

  await repos.bucketPolicies.put(bucket.id, '{"Statement": "from a later version"}');
  access.forget(bucket);
  const rules = await access.rulesFor(bucket);
  t.equal(rules.policyText, '{"Statement": "from a later version"}', 'kept as written');
  t.equal(judge(rules.judged!, [GET_A]), 'deny', 'a policy that does not parse lets nobody in');

  const other = { ...bucket, id: 'another-id' };
  t.ok(access.held(bucket));
  t.equal(access.held(other), undefined, 'an entry of another bucket of the same name is not used');
});
