// Bucket lifecycle (issue 35 item 2) against the real server with the real aws cli: a configuration put,
// read back and deleted; x-amz-expiration on PutObject, HeadObject and CopyObject; `s3edge lifecycle run` expiring
// logs/ and nothing else, aborting an incomplete multipart upload; on a versioned bucket, noncurrent
// versions and a lone delete marker removed. `--now` judges the rules some days on, the objects keep
// the dates they were written at. Raw signed requests for what aws cli never sends (no digest, a
// malformed document, a transition). And the server's own job, in a cluster's supervisor, expiring what
// a rule's passed Date makes due, its bytes freed once the workers hold them no more.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';
import { awsForServer } from '../helpers/aws-cli.js';
import { md5Base64 } from '../helpers/checksums.js';
import { RawS3, errorCode } from '../helpers/s3-client.js';
import { eventually } from '../helpers/api.js';
import { listBlobFiles } from '../../src/storage/disk.js';

const DAY = 86_400_000;
// A second server, a cluster whose supervisor runs the lifecycle job every second, its bytes on this disk
// (the test counts them) whatever S3EDGE_TEST_UPSTREAM says: started alongside.
const [server, cluster] = await Promise.all([startServer(), startServer({ workers: 2, upstream: false, env: { S3EDGE_LIFECYCLE_INTERVAL_SECONDS: '1' } })]);
t.teardown(() => Promise.all([server.stop(), cluster.stop()]));
const { aws } = await awsForServer(server);
const root = new RawS3({ url: server.url }, server.rootKey);

/** An aws cli call that must succeed: its JSON output. */
async function ok(t: Test, args: string[]): Promise<any> {
  const r = await aws(args);
  t.equal(r.code, 0, `aws ${args.slice(0, 2).join(' ')}${r.code === 0 ? '' : `: ${r.stderr}`}`);
  return r.json;
}

async function configFile(name: string, doc: unknown): Promise<string> {
  const file = join(server.tmpRoot, name);
  await writeFile(file, JSON.stringify(doc));
  return `file://${file}`;
}

/** `s3edge lifecycle run ...` as of `daysOn` days from now: the counts per bucket. */
async function lifecycleRun(t: Test, daysOn: number, ...args: string[]): Promise<unknown> {
  const r = await server.cli(['lifecycle', 'run', '--now', new Date(Date.now() + daysOn * DAY).toISOString(), ...args]);
  t.equal(r.code, 0, `s3edge lifecycle run: ${r.stderr}`);
  return r.json;
}

const counts = (bucket: string, c: Partial<Record<'expired' | 'noncurrentRemoved' | 'deleteMarkersRemoved' | 'uploadsAborted', number>>) => ({
  bucket, expired: 0, noncurrentRemoved: 0, deleteMarkersRemoved: 0, uploadsAborted: 0, ...c,
});

t.test('aws cli: lifecycle by prefix, x-amz-expiration, and `s3edge lifecycle run` expiring logs/ only', async (t) => {
  const bucket = 'lc-logs';
  t.equal((await root.createBucket(bucket)).status, 200);
  const rules = [
    { ID: 'expire-logs', Filter: { Prefix: 'logs/' }, Status: 'Enabled', Expiration: { Days: 1 } },
    { ID: 'abort-uploads', Filter: { Prefix: '' }, Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } },
  ];
  t.equal(errorCode(await root.send({ method: 'GET', bucket, query: { lifecycle: '' } })), 'NoSuchLifecycleConfiguration', 'none yet');
  await ok(t, ['s3api', 'put-bucket-lifecycle-configuration', '--bucket', bucket, '--lifecycle-configuration', await configFile('logs.json', { Rules: rules })]);
  t.same((await ok(t, ['s3api', 'get-bucket-lifecycle-configuration', '--bucket', bucket])).Rules, rules, 'read back as put');

  // Written now: PutObject and HeadObject name the rule and the day it expires (next midnight UTC after a day).
  const put = await ok(t, ['s3api', 'put-object', '--bucket', bucket, '--key', 'logs/a.log', '--body', join(server.tmpRoot, 'logs.json')]);
  const due = new Date(Math.floor((Date.now() + DAY) / DAY) * DAY + DAY).toUTCString();
  t.equal(put.Expiration, `expiry-date="${due}", rule-id="expire-logs"`, 'PutObject: x-amz-expiration');
  for (const key of ['logs/b.log', 'keep/c.txt']) t.equal((await root.putObject(bucket, key, Buffer.from(key))).status, 200);
  const [headLog, headKeep, upload, copy] = await Promise.all([
    ok(t, ['s3api', 'head-object', '--bucket', bucket, '--key', 'logs/b.log']),
    ok(t, ['s3api', 'head-object', '--bucket', bucket, '--key', 'keep/c.txt']),
    ok(t, ['s3api', 'create-multipart-upload', '--bucket', bucket, '--key', 'logs/big.bin']),
    ok(t, ['s3api', 'copy-object', '--bucket', bucket, '--key', 'logs/c.copy', '--copy-source', `${bucket}/keep/c.txt`]),
  ]);
  t.equal(headLog.Expiration, `expiry-date="${due}", rule-id="expire-logs"`, 'HeadObject: x-amz-expiration');
  t.equal(headKeep.Expiration, undefined, 'outside logs/: none');
  t.equal(copy.Expiration, `expiry-date="${due}", rule-id="expire-logs"`, 'CopyObject: the copy is under logs/');
  const got = await root.getObject(bucket, 'logs/b.log');
  t.equal(got.headers['x-amz-expiration'], `expiry-date="${due}", rule-id="expire-logs"`, 'GetObject too');

  t.same(await lifecycleRun(t, 0, '--bucket', bucket), [counts(bucket, {})], 'today: nothing is due');
  t.same(await lifecycleRun(t, 3), [counts(bucket, { expired: 3, uploadsAborted: 1 })], 'three days on: logs/ expired, the upload aborted');
  const [listed, uploads] = await Promise.all([
    ok(t, ['s3api', 'list-objects-v2', '--bucket', bucket]),
    ok(t, ['s3api', 'list-multipart-uploads', '--bucket', bucket]),
  ]);
  t.same(listed.Contents.map((c: { Key: string }) => c.Key), ['keep/c.txt'], 'keep/ stays');
  t.equal(uploads?.Uploads, undefined, 'no upload left');
  t.equal(errorCode(await root.getObject(bucket, 'logs/a.log')), 'NoSuchKey', 'an expired object is gone');
  t.same(await lifecycleRun(t, 3, '--bucket', bucket), [counts(bucket, {})], 'again: nothing left to do');

  await ok(t, ['s3api', 'delete-bucket-lifecycle', '--bucket', bucket]);
  const deleted = await aws(['s3api', 'get-bucket-lifecycle-configuration', '--bucket', bucket]);
  t.ok(deleted.code !== 0 && /NoSuchLifecycleConfiguration/.test(deleted.stderr), `deleted: ${deleted.stderr}`);
  t.equal((await root.headObject(bucket, 'keep/c.txt')).headers['x-amz-expiration'], undefined);
  const run = await server.cli(['lifecycle', 'run', '--bucket', bucket]);
  t.match(run, { code: 1, json: { error: { code: 'NoSuchLifecycleConfiguration' } } }, 'run on a bucket without rules: refused by name');
});

t.test('aws cli: a versioned bucket loses noncurrent versions and a lone delete marker', async (t) => {
  const bucket = 'lc-versions';
  t.equal((await root.createBucket(bucket)).status, 200);
  const versioning = Buffer.from('<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>');
  t.equal((await root.send({ method: 'PUT', bucket, query: { versioning: '' }, body: versioning, headers: { 'content-md5': md5Base64(versioning) } })).status, 200);
  const v1 = (await root.putObject(bucket, 'doc.txt', Buffer.from('one'))).headers['x-amz-version-id'];
  const v2 = (await root.putObject(bucket, 'doc.txt', Buffer.from('two'))).headers['x-amz-version-id'];
  t.equal((await root.putObject(bucket, 'gone.txt', Buffer.from('gone'))).status, 200);
  t.equal((await root.deleteObject(bucket, 'gone.txt')).headers['x-amz-delete-marker'], 'true');
  await ok(t, ['s3api', 'put-bucket-lifecycle-configuration', '--bucket', bucket, '--lifecycle-configuration', await configFile('versions.json', {
    Rules: [
      { ID: 'history', Filter: { Prefix: '' }, Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 1 } },
      { ID: 'markers', Filter: { Prefix: '' }, Status: 'Enabled', Expiration: { ExpiredObjectDeleteMarker: true } },
    ],
  })]);
  t.same(await lifecycleRun(t, 0, '--bucket', bucket), [counts(bucket, {})], 'today: nothing is due (a marker with a version behind it is not alone)');
  t.same(await lifecycleRun(t, 3, '--bucket', bucket), [counts(bucket, { noncurrentRemoved: 2, deleteMarkersRemoved: 1 })],
    "three days on: doc.txt's old version and gone.txt's, then gone.txt's marker, alone");
  const versions = await ok(t, ['s3api', 'list-object-versions', '--bucket', bucket]);
  t.same(versions.Versions.map((v: { Key: string; VersionId: string; IsLatest: boolean }) => [v.Key, v.VersionId, v.IsLatest]), [['doc.txt', v2, true]], 'the current doc.txt alone');
  t.equal(versions.DeleteMarkers, undefined, 'no delete marker left');
  t.ok(typeof v1 === 'string' && v1 !== v2, 'two versions were written');
});

t.test('refused documents get S3 errors, never a 500', async (t) => {
  const bucket = 'lc-errors';
  t.equal((await root.createBucket(bucket)).status, 200);
  const put = (xml: string, digest = true) => {
    const bytes = Buffer.from(xml);
    return root.send({ method: 'PUT', bucket, query: { lifecycle: '' }, body: bytes, headers: digest ? { 'content-md5': md5Base64(bytes) } : {} });
  };
  const rule = (body: string) => `<LifecycleConfiguration><Rule><ID>r</ID><Filter><Prefix>x/</Prefix></Filter><Status>Enabled</Status>${body}</Rule></LifecycleConfiguration>`;
  const cases: [string, Awaited<ReturnType<typeof put>>, number, string][] = [
    ['no Content-MD5', await put(rule('<Expiration><Days>1</Days></Expiration>'), false), 400, 'InvalidRequest'],
    ['not XML', await put('<LifecycleConfiguration><Rule>'), 400, 'MalformedXML'],
    ['Days 0', await put(rule('<Expiration><Days>0</Days></Expiration>')), 400, 'InvalidArgument'],
    ['a transition', await put(rule('<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>')), 400, 'InvalidRequest'],
    ['no action', await put(rule('')), 400, 'InvalidRequest'],
  ];
  for (const [what, res, status, code] of cases) t.same([res.status, errorCode(res)], [status, code], what);
  t.equal(errorCode(await root.send({ method: 'GET', bucket, query: { lifecycle: '' } })), 'NoSuchLifecycleConfiguration', 'nothing was stored');
  const bad = await server.cli(['lifecycle', 'run', '--now', 'next tuesday']);
  t.match(bad, { code: 1, json: { error: { code: 'InvalidArgument' } } }, '--now takes an ISO 8601 time');
});

t.test("the server's lifecycle job, in a cluster's supervisor: a passed Date expires objects, their bytes go", async (t) => {
  const s3 = new RawS3({ url: cluster.url }, cluster.rootKey);
  const bucket = 'lc-job';
  const storage = join(cluster.dataDir, 'storage');
  t.equal((await s3.createBucket(bucket)).status, 200);
  const before = (await listBlobFiles(storage)).length;
  // Larger than the inline limit: a blob of its own in storage/blobs.
  t.equal((await s3.putObject(bucket, 'tmp/big.bin', randomBytes(100_000))).status, 200);
  t.equal((await s3.putObject(bucket, 'keep.txt', Buffer.from('kept'))).status, 200);
  t.equal((await listBlobFiles(storage)).length, before + 1, 'tmp/big.bin has a blob');
  const today = new Date(Math.floor(Date.now() / DAY) * DAY).toISOString();
  const doc = Buffer.from(`<LifecycleConfiguration><Rule><ID>tmp</ID><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status><Expiration><Date>${today}</Date></Expiration></Rule></LifecycleConfiguration>`);
  t.equal((await s3.send({ method: 'PUT', bucket, query: { lifecycle: '' }, body: doc, headers: { 'content-md5': md5Base64(doc) } })).status, 200);
  await eventually(async () => (await s3.listAllKeys(bucket)).length === 1, 'the job expired tmp/big.bin', 10_000);
  t.same(await s3.listAllKeys(bucket), ['keep.txt']);
  // After the workers' grace (cluster/shared-leases.ts), the bytes go.
  await eventually(async () => (await listBlobFiles(storage)).length === before, 'its blob removed', 10_000);
  t.match(cluster.output(), /lifecycle: rules applied/, 'the job logged what it did');
});
