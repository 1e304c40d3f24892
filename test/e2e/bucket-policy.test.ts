// Bucket policies and public canned ACLs against the real server of two workers (issue 35): aws cli for
// the policy documents and for unsigned reads (--no-sign-request), boto3 with botocore's UNSIGNED
// config, fetch for what a browser or curl sends unsigned (a PUT, a Referer, a form upload).
import t from 'tap';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createAccountKey, createBucketKey, startServer } from '../helpers/server.js';
import { isolatedAwsEnv, runAws, writeAwsConfig, type AwsResult } from '../helpers/aws-cli.js';
import type { Credentials } from '../helpers/signer.js';
import { RawS3 } from '../helpers/s3-client.js';
import { xmlTexts } from '../helpers/xml.js';

const BUCKET = 'policy-e2e';
/** How long a policy change may take to reach every worker (bucket-access.ts: entries live a second). */
const SPREAD_MS = 1100;

const server = await startServer({ workers: 2 });
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);
const root = new RawS3({ url: server.url }, server.rootKey);

function aws(args: string[], credentials: Credentials = server.rootKey): Promise<AwsResult> {
  return runAws({ endpoint: server.url, credentials, files: awsFiles }, args, server.tmpRoot);
}

/** An unsigned request, as curl or a browser sends one. */
function anon(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, init);
}

/** Statuses of `n` unsigned GETs: with two workers, both answer some of them. */
async function anonStatuses(path: string, n = 12): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await anon(path, { headers: { connection: 'close' } });
    await r.arrayBuffer();
    out.push(r.status);
  }
  return out;
}

async function putPolicy(statements: unknown[], bucket = BUCKET): Promise<AwsResult> {
  const file = join(server.tmpRoot, `policy-${bucket}.json`);
  await writeFile(file, JSON.stringify({ Version: '2012-10-17', Statement: statements }));
  return aws(['s3api', 'put-bucket-policy', '--bucket', bucket, '--policy', `file://${file}`]);
}

async function put(bucket: string, key: string, body: string): Promise<void> {
  const r = await root.putObject(bucket, key, Buffer.from(body));
  if (r.status !== 200) throw new Error(`put ${key}: ${r.status} ${r.text}`);
}

const publicRead = { Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/public/*` };

t.before(async () => {
  const r = await root.createBucket(BUCKET);
  if (r.status !== 200) throw new Error(`create bucket: ${r.status} ${r.text}`);
  await put(BUCKET, 'public/a.txt', 'hello public');
  await put(BUCKET, 'private/b.txt', 'secret');
});

t.test('anonymous read by a prefix policy, not outside it, not PUT; revoked by DeleteBucketPolicy, on every worker', async (t) => {
  // Both workers hold "no policy" for the bucket before it is put.
  t.same([...new Set(await anonStatuses(`/${BUCKET}/public/a.txt`))], [403], 'private before the policy');
  const put1 = await putPolicy([publicRead]);
  t.equal(put1.code, 0, put1.stderr);
  await delay(SPREAD_MS);
  t.same([...new Set(await anonStatuses(`/${BUCKET}/public/a.txt`))], [200], 'every worker serves it within a second');

  const got = await aws(['s3api', 'get-object', '--bucket', BUCKET, '--key', 'public/a.txt', '--no-sign-request', join(server.tmpRoot, 'a.txt')]);
  t.equal(got.code, 0, `aws --no-sign-request get-object: ${got.stderr}`);
  const outside = await aws(['s3api', 'head-object', '--bucket', BUCKET, '--key', 'private/b.txt', '--no-sign-request']);
  t.not(outside.code, 0);
  t.match(outside.stderr, /403|Forbidden/, 'outside the prefix: 403');
  const list = await aws(['s3api', 'list-objects-v2', '--bucket', BUCKET, '--no-sign-request']);
  t.match(list.stderr, /AccessDenied/, 'listing is not granted');
  const anonPut = await anon(`/${BUCKET}/public/new.txt`, { method: 'PUT', body: 'x' });
  t.equal(anonPut.status, 403);
  t.match(await anonPut.text(), /<Code>AccessDenied<\/Code>/, 'PUT is not granted');
  t.equal((await root.getObject(BUCKET, 'public/new.txt')).status, 404, 'nothing was stored');

  const doc = await aws(['s3api', 'get-bucket-policy', '--bucket', BUCKET]);
  t.same(JSON.parse((doc.json as { Policy: string }).Policy).Statement, [publicRead], 'GetBucketPolicy: the document as put');
  const status = await aws(['s3api', 'get-bucket-policy-status', '--bucket', BUCKET]);
  t.same(status.json, { PolicyStatus: { IsPublic: true } });

  const del = await aws(['s3api', 'delete-bucket-policy', '--bucket', BUCKET]);
  t.equal(del.code, 0, del.stderr);
  await delay(SPREAD_MS);
  t.same([...new Set(await anonStatuses(`/${BUCKET}/public/a.txt`))], [403], 'revoked on every worker within a second');
  const none = await aws(['s3api', 'get-bucket-policy', '--bucket', BUCKET]);
  t.match(none.stderr, /NoSuchBucketPolicy/);
});

t.test('malformed policies: MalformedPolicy with the reason, nothing kept', async (t) => {
  const cases: Array<[unknown[], RegExp]> = [
    [[{ ...publicRead, Action: 's3:GetObjekt' }], /invalid action: s3:GetObjekt/],
    [[{ ...publicRead, Resource: 'arn:aws:s3:::another-bucket/*' }], /resource/i],
    [[{ ...publicRead, Effect: 'Maybe' }], /Invalid effect/],
    [[{ ...publicRead, Condition: { IpAddress: { 'aws:SourceIp': 'not-an-ip' } } }], /not-an-ip/],
  ];
  for (const [statements, reason] of cases) {
    const r = await putPolicy(statements);
    t.not(r.code, 0);
    t.match(r.stderr, /MalformedPolicy/, JSON.stringify(statements));
    t.match(r.stderr, reason);
  }
  const raw = await root.send({ method: 'PUT', bucket: BUCKET, query: { policy: '' }, body: Buffer.from('{not json') });
  t.equal(raw.status, 400);
  t.match(raw.text, /<Code>MalformedPolicy<\/Code>/);
  t.match((await aws(['s3api', 'get-bucket-policy', '--bucket', BUCKET])).stderr, /NoSuchBucketPolicy/, 'nothing kept');
});

t.test('users and keys: a grant to another user, deny over every allow, bucket keys stay in their bucket', async (t) => {
  await server.admin(['users', 'create', 'alice']);
  const alice = await createAccountKey(server, 'alice');
  const writer = await createBucketKey(server, BUCKET, 'read_write');
  const asAlice = new RawS3({ url: server.url }, alice, root.log);
  const asWriter = new RawS3({ url: server.url }, writer, root.log);
  t.equal((await asAlice.getObject(BUCKET, 'private/b.txt')).status, 403, "alice has no grant on root's bucket");
  const r = await putPolicy([
    { Sid: 'AliceReads', Effect: 'Allow', Principal: { AWS: ['alice'] }, Action: ['s3:Get*', 's3:ListBucket'], Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`] },
    { Sid: 'NoDeletes', Effect: 'Deny', Principal: { AWS: [writer.accessKeyId] }, Action: 's3:DeleteObject', Resource: `arn:aws:s3:::${BUCKET}/*` },
    { Sid: 'NoSecretsForAlice', Effect: 'Deny', Principal: { AWS: 'arn:aws:iam::000000000000:user/alice' }, Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/private/*` },
  ]);
  t.equal(r.code, 0, r.stderr);
  await delay(SPREAD_MS);
  const listed = await aws(['s3api', 'list-objects-v2', '--bucket', BUCKET], alice);
  t.equal(listed.code, 0, listed.stderr);
  t.same(((listed.json as { Contents: Array<{ Key: string }> }).Contents).map((o) => o.Key).sort(), ['private/b.txt', 'public/a.txt'], 'alice lists by the policy');
  t.equal((await aws(['s3api', 'get-object', '--bucket', BUCKET, '--key', 'public/a.txt', join(server.tmpRoot, 'a2')], alice)).code, 0, 'alice reads by the policy');
  t.equal((await asAlice.getObject(BUCKET, 'private/b.txt')).status, 403, 'the Deny beats her Allow');
  t.equal((await asAlice.putObject(BUCKET, 'public/alice.txt', Buffer.from('a'))).status, 403, 'no write was granted');

  // CopyObject: the source's bucket judges the read, the destination's the write.
  t.equal((await asAlice.createBucket('alice-own')).status, 200);
  const copy = await aws(['s3api', 'copy-object', '--bucket', 'alice-own', '--key', 'copied.txt', '--copy-source', `${BUCKET}/public/a.txt`], alice);
  t.equal(copy.code, 0, `copy into her bucket from one whose policy lets her read: ${copy.stderr}`);

  // The bucket key may write (its own grant) but not delete: the policy's Deny beats its grant.
  t.equal((await asWriter.putObject(BUCKET, 'tmp/w.txt', Buffer.from('w'))).status, 200, 'the key writes');
  t.match((await aws(['s3api', 'delete-object', '--bucket', BUCKET, '--key', 'tmp/w.txt'], writer)).stderr, /AccessDenied/, 'Deny beats the key');
  t.equal((await root.getObject(BUCKET, 'tmp/w.txt')).status, 200, 'not deleted');

  // A bucket key stays in its bucket whatever another bucket's policy grants everyone.
  t.equal((await root.createBucket('open-to-all')).status, 200);
  await put('open-to-all', 'x.txt', 'open');
  t.equal((await putPolicy([{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::open-to-all/*' }], 'open-to-all')).code, 0);
  await delay(SPREAD_MS);
  t.equal((await anon('/open-to-all/x.txt')).status, 200, 'anyone reads open-to-all');
  t.equal((await asWriter.getObject('open-to-all', 'x.txt')).status, 403, 'but not a key of another bucket');

  // DeleteObjects: each key judged on its own.
  const batch = join(server.tmpRoot, 'delete.json');
  await put(BUCKET, 'tmp/del.txt', 'd');
  await writeFile(batch, JSON.stringify({ Objects: [{ Key: 'tmp/w.txt' }, { Key: 'tmp/del.txt' }] }));
  const t1 = await putPolicy([{ Effect: 'Deny', Principal: '*', Action: 's3:DeleteObject', Resource: `arn:aws:s3:::${BUCKET}/tmp/w.txt` }]);
  t.equal(t1.code, 0, t1.stderr);
  await delay(SPREAD_MS);
  const deleted = await aws(['s3api', 'delete-objects', '--bucket', BUCKET, '--delete', `file://${batch}`]);
  const answer = deleted.json as { Deleted?: Array<{ Key: string }>; Errors?: Array<{ Key: string; Code: string }> };
  t.same(answer.Deleted?.map((d) => d.Key), ['tmp/del.txt'], 'the other key is deleted');
  t.same(answer.Errors?.map((e) => [e.Key, e.Code]), [['tmp/w.txt', 'AccessDenied']], 'the denied key is an error entry');

  // The owner is never locked out of the policy itself.
  t.equal((await putPolicy([{ Effect: 'Deny', Principal: '*', Action: 's3:*', Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`] }])).code, 0);
  await delay(SPREAD_MS);
  t.equal((await root.listObjectsV2(BUCKET)).res.status, 403, 'a Deny of everything binds root too');
  t.equal((await aws(['s3api', 'get-bucket-policy', '--bucket', BUCKET])).code, 0, 'but the owner still reads the policy');
  t.equal((await aws(['s3api', 'delete-bucket-policy', '--bucket', BUCKET])).code, 0, 'and removes it');
  await delay(SPREAD_MS);
  t.equal((await root.listObjectsV2(BUCKET)).res.status, 200, 'after which root lists again');
});

t.test('conditions: source address, prefix of a listing, referer, secure transport', async (t) => {
  const r = await putPolicy([
    { Sid: 'ListPublic', Effect: 'Allow', Principal: '*', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${BUCKET}`, Condition: { StringLike: { 's3:prefix': 'public/*' } } },
    { Sid: 'FromHere', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/public/*`, Condition: { IpAddress: { 'aws:SourceIp': '127.0.0.0/8' } } },
    { Sid: 'SiteOnly', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/private/*`, Condition: { StringLike: { 'aws:Referer': 'https://example.test/*' } } },
    { Sid: 'TlsForWrites', Effect: 'Deny', Principal: '*', Action: 's3:PutObject', Resource: `arn:aws:s3:::${BUCKET}/*`, Condition: { Bool: { 'aws:SecureTransport': 'false' } } },
  ]);
  t.equal(r.code, 0, r.stderr);
  await delay(SPREAD_MS);
  const listed = await aws(['s3api', 'list-objects-v2', '--bucket', BUCKET, '--prefix', 'public/', '--no-sign-request']);
  t.equal(listed.code, 0, listed.stderr);
  t.same(((listed.json as { Contents: Array<{ Key: string }> }).Contents).map((o) => o.Key), ['public/a.txt'], 'a listing under public/');
  t.match((await aws(['s3api', 'list-objects-v2', '--bucket', BUCKET, '--no-sign-request'])).stderr, /AccessDenied/, 'a listing without the prefix');
  t.equal((await anon(`/${BUCKET}/public/a.txt`)).status, 200, 'from 127.0.0.0/8');
  t.equal((await anon(`/${BUCKET}/private/b.txt`)).status, 403, 'no referer');
  const withReferer = await anon(`/${BUCKET}/private/b.txt`, { headers: { referer: 'https://example.test/page' } });
  t.equal(withReferer.status, 200, 'the site as referer');
  t.equal(await withReferer.text(), 'secret');
  t.equal((await anon(`/${BUCKET}/private/b.txt`, { headers: { referer: 'https://elsewhere.test/' } })).status, 403, 'another site');
  t.match((await aws(['s3api', 'put-object', '--bucket', BUCKET, '--key', 'plain.txt'])).stderr, /AccessDenied/, 'a write over plain HTTP is denied, even to root');
  t.equal((await aws(['s3api', 'delete-bucket-policy', '--bucket', BUCKET])).code, 0);
  // The next test reads public/ anonymously: the other worker must have let go of FromHere first.
  await delay(SPREAD_MS);
});

t.test('canned ACLs: public-read and public-read-write buckets, public-read objects; anonymous form upload', async (t) => {
  const made = await aws(['s3api', 'create-bucket', '--bucket', 'canned-acl', '--acl', 'public-read']);
  t.equal(made.code, 0, made.stderr);
  const body = join(server.tmpRoot, 'doc-body');
  await writeFile(body, 'readable');
  t.equal((await aws(['s3api', 'put-object', '--bucket', 'canned-acl', '--key', 'doc.txt', '--body', body, '--acl', 'public-read'])).code, 0);
  await put('canned-acl', 'private.txt', 'not yours');
  t.equal((await anon('/canned-acl?list-type=2')).status, 200, 'a public-read bucket: anyone lists');
  const doc = await anon('/canned-acl/doc.txt');
  t.equal(doc.status, 200, 'and reads an object whose own ACL is public-read');
  t.equal(await doc.text(), 'readable');
  t.equal((await anon('/canned-acl/private.txt')).status, 403, 'but not a private object, as on AWS');
  t.equal((await anon('/canned-acl/private.txt', { method: 'HEAD' })).status, 403);
  t.equal((await anon('/canned-acl/missing.txt')).status, 403, 'a missing key tells nothing');
  t.equal((await anon('/canned-acl/new.txt', { method: 'PUT', body: 'x' })).status, 403, 'nor writes');
  const acl = await aws(['s3api', 'get-bucket-acl', '--bucket', 'canned-acl']);
  t.match(JSON.stringify(acl.json), /AllUsers.*"Permission":"READ"/, 'GetBucketAcl shows AllUsers READ');

  // An object's ACL: put-object-acl makes it public (or private again); the bucket's does not matter.
  t.equal((await aws(['s3api', 'put-object-acl', '--bucket', 'canned-acl', '--key', 'private.txt', '--acl', 'public-read'])).code, 0);
  t.equal((await anon('/canned-acl/private.txt')).status, 200, 'put-object-acl public-read');
  t.match(JSON.stringify((await aws(['s3api', 'get-object-acl', '--bucket', 'canned-acl', '--key', 'private.txt'])).json), /AllUsers.*"Permission":"READ"/);
  t.equal((await aws(['s3api', 'put-object-acl', '--bucket', 'canned-acl', '--key', 'private.txt', '--acl', 'private'])).code, 0);
  t.equal((await anon('/canned-acl/private.txt')).status, 403, 'private again');
  t.equal((await anon(`/${BUCKET}/public/a.txt`)).status, 403, 'a private bucket ...');
  t.equal((await aws(['s3api', 'put-object-acl', '--bucket', BUCKET, '--key', 'public/a.txt', '--acl', 'public-read'])).code, 0);
  t.equal((await anon(`/${BUCKET}/public/a.txt`)).status, 200, '... with a public-read object: anyone reads that object');
  t.equal((await anon(`/${BUCKET}?list-type=2`)).status, 403, 'but does not list the bucket');
  const copy = await aws(['s3api', 'copy-object', '--bucket', BUCKET, '--key', 'public/copy.txt', '--copy-source', `${BUCKET}/public/a.txt`]);
  t.equal(copy.code, 0, copy.stderr);
  t.equal((await anon(`/${BUCKET}/public/copy.txt`)).status, 403, 'a copy is private unless asked, as on AWS');

  t.equal((await aws(['s3api', 'put-bucket-acl', '--bucket', 'canned-acl', '--acl', 'public-read-write'])).code, 0);
  await delay(SPREAD_MS);
  const written = await anon('/canned-acl/new.txt', { method: 'PUT', body: 'by anyone' });
  t.equal(written.status, 200, 'public-read-write: anyone writes');
  t.equal((await root.getObject('canned-acl', 'new.txt')).text, 'by anyone');
  const form = new FormData();
  form.set('key', 'form-${filename}');
  form.set('file', new Blob(['from a form']), 'upload.txt');
  const posted = await anon('/canned-acl', { method: 'POST', body: form });
  t.equal(posted.status, 204, 'an unsigned form upload');
  t.equal((await root.getObject('canned-acl', 'form-upload.txt')).text, 'from a form');

  const py = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const script = [
      'import sys, boto3',
      'from botocore import UNSIGNED',
      'from botocore.config import Config',
      "s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', config=Config(signature_version=UNSIGNED))",
      "s3.put_object(Bucket='canned-acl', Key='boto3.txt', Body=b'unsigned boto3', ACL='public-read')",
      "print(s3.get_object(Bucket='canned-acl', Key='boto3.txt')['Body'].read().decode())",
    ].join('\n');
    execFile('python3', ['-c', script, server.url], { env: isolatedAwsEnv(awsFiles, server.rootKey), timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? 1 : 0, stdout, stderr }),
    );
  });
  t.equal(py.code, 0, py.stderr);
  t.equal(py.stdout.trim(), 'unsigned boto3', 'boto3 UNSIGNED writes a public-read object and reads it');

  t.equal((await aws(['s3api', 'put-bucket-acl', '--bucket', 'canned-acl', '--acl', 'private'])).code, 0);
  await delay(SPREAD_MS);
  t.equal((await anon('/canned-acl?list-type=2')).status, 403, 'a private bucket again: nobody lists it');
  t.equal((await anon('/canned-acl/new.txt', { method: 'PUT', body: 'x' })).status, 403, 'or writes to it');
  t.equal((await anon('/canned-acl/doc.txt')).status, 200, 'an object keeps its own ACL');
  t.notMatch(JSON.stringify((await aws(['s3api', 'get-bucket-acl', '--bucket', 'canned-acl'])).json), /AllUsers/);
});

t.test('nobody learns which buckets exist, or lists buckets, without a key', async (t) => {
  const missing = await anon('/no-such-bucket-here/x');
  t.equal(missing.status, 403);
  t.same(xmlTexts(await missing.text(), 'Code'), ['AccessDenied']);
  t.equal((await anon('/')).status, 403, 'ListBuckets');
  t.equal((await anon('/made-anonymously', { method: 'PUT' })).status, 403, 'CreateBucket');
});

t.test('no request was answered 5xx', async (t) => {
  t.notOk(root.log.some((l) => l.status >= 500), JSON.stringify(root.log.filter((l) => l.status >= 500)));
  t.notMatch(server.output(), /InternalError|"level":50/, 'no internal error logged');
});
