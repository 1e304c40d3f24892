// Client conformance: three users, each with an account key and bucket-scoped keys (read and
// read_write), all made with the admin CLI as an operator would. With aws-cli and with raw signed
// requests: each user lists only their own buckets; another user's bucket or object is AccessDenied
// for every operation (GET, PUT, DELETE, list, head, copy as source and as destination, multipart,
// batch delete, CORS); a read key reads but never writes; a read_write key touches only its bucket;
// ListBuckets for a bucket key shows exactly its bucket. Every denial has a positive control (the
// same request by the owner succeeds) and the victim's data is checked unchanged afterwards.
import t from 'tap';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startServer, createAccountKey, createBucketKey } from '../helpers/server.js';
import { RawS3, errorCode } from '../helpers/s3-client.js';
import type { RawResponse } from '../helpers/raw-http.js';
import type { Credentials } from '../helpers/signer.js';
import { runAws, writeAwsConfig, type AwsResult } from '../helpers/aws-cli.js';
import { md5Hex, sha256Hex } from '../helpers/checksums.js';
import {
  abortMultipartUpload,
  completeMultipartUpload,
  copyObject,
  createMultipartUpload,
  deleteObjects,
  getBucketCors,
  listBuckets,
  listMultipartUploads,
  listParts,
  parseUploads,
  putBucketCors,
  uploadPart,
  uploadPartCopy,
} from '../helpers/s3-ops.js';
import { asArray, asRecord } from '../helpers/conformance.js';
import { xmlBlocks, xmlText } from '../helpers/xml.js';

const server = await startServer();
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);
const root = new RawS3({ url: server.url }, server.rootKey);

const USERS = ['ann', 'ben', 'cal'] as const;
type UserName = (typeof USERS)[number];

interface UserSetup {
  name: UserName;
  account: Credentials;
  read: Credentials; // read key on <name>-one
  readWrite: Credentials; // read_write key on <name>-one
  one: string;
  two: string;
  seed: Buffer;
}

// Each user's chain of admin commands runs beside the others' (SQLite serialises the writes).
const setups = await Promise.all(
  USERS.map(async (name): Promise<UserSetup> => {
    await server.admin(['users', 'create', name]);
    const one = `${name}-one`;
    const two = `${name}-two`;
    await Promise.all([server.admin(['buckets', 'create', one, '--user', name]), server.admin(['buckets', 'create', two, '--user', name])]);
    const [account, read, readWrite] = await Promise.all([
      createAccountKey(server, name),
      createBucketKey(server, one, 'read'),
      createBucketKey(server, one, 'read_write'),
    ]);
    return { name, account, read, readWrite, one, two, seed: Buffer.from(`${name}'s seed object\n`) };
  }),
);
const users = Object.fromEntries(setups.map((u) => [u.name, u])) as Record<UserName, UserSetup>;
const allBuckets = USERS.flatMap((u) => [`${u}-one`, `${u}-two`]).sort();

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

function describe(res: RawResponse): string {
  return `${res.status} ${errorCode(res) ?? ''} ${res.text.slice(0, 300)}`;
}

function denied(t: TapTest, res: RawResponse, what: string): void {
  const good = res.status === 403 && errorCode(res) === 'AccessDenied';
  t.same([res.status, errorCode(res)], [403, 'AccessDenied'], `${what} -> 403 AccessDenied${good ? '' : ` (got ${describe(res)})`}`);
}

function deniedHead(t: TapTest, res: RawResponse, what: string): void {
  t.equal(res.status, 403, `${what} -> 403`);
}

function allowed(t: TapTest, res: RawResponse, status: number, what: string): void {
  t.equal(res.status, status, `${what} -> ${status}${res.status === status ? '' : ` (got ${describe(res)})`}`);
}

t.test('setup: every user seeds both buckets with an account key', async (t) => {
  for (const u of Object.values(users)) {
    const s3 = root.as(u.account);
    allowed(t, await s3.putObject(u.one, 'seed.txt', u.seed), 200, `${u.name} PUT ${u.one}/seed.txt`);
    allowed(t, await s3.putObject(u.two, 'seed.txt', u.seed), 200, `${u.name} PUT ${u.two}/seed.txt`);
  }
});

t.test('ListBuckets: each principal sees exactly its buckets', async (t) => {
  const r = await listBuckets(root);
  allowed(t, r.res, 200, 'root ListBuckets');
  t.same(r.names, allBuckets, 'root sees every bucket');
  for (const u of Object.values(users)) {
    const acc = await listBuckets(root.as(u.account));
    allowed(t, acc.res, 200, `${u.name} account ListBuckets`);
    t.same(acc.names, [u.one, u.two], `${u.name}'s account key lists only ${u.name}'s buckets`);
    for (const [kind, key] of [['read', u.read], ['read_write', u.readWrite]] as const) {
      const b = await listBuckets(root.as(key));
      allowed(t, b.res, 200, `${u.name} ${kind} key ListBuckets`);
      t.same(b.names, [u.one], `${u.name}'s ${kind} bucket key lists exactly ${u.one}`);
    }
  }
});

t.test('owners can do everything the denial tests try (positive controls)', async (t) => {
  for (const u of Object.values(users)) {
    const s3 = root.as(u.account);
    const get = await s3.getObject(u.one, 'seed.txt');
    allowed(t, get, 200, `${u.name} GET own object`);
    t.equal(sha256Hex(get.body), sha256Hex(u.seed), 'own object bytes');
    allowed(t, await s3.headObject(u.one, 'seed.txt'), 200, `${u.name} HEAD own object`);
    allowed(t, await s3.send({ method: 'HEAD', bucket: u.one }), 200, `${u.name} HEAD own bucket`);
    t.same(await s3.listAllKeys(u.one), ['seed.txt'], `${u.name} lists own bucket`);
    allowed(t, await copyObject(s3, u.one, 'copy-within.txt', u.one, 'seed.txt'), 200, `${u.name} CopyObject within ${u.one}`);
    allowed(t, await copyObject(s3, u.two, 'copy-across.txt', u.one, 'seed.txt'), 200, `${u.name} CopyObject ${u.one} -> ${u.two}`);
    const copied = await s3.getObject(u.two, 'copy-across.txt');
    t.equal(sha256Hex(copied.body), sha256Hex(u.seed), 'the cross-bucket copy has the source bytes');
    const mpu = await createMultipartUpload(s3, u.one, 'own-mpu');
    allowed(t, mpu.res, 200, `${u.name} CreateMultipartUpload in own bucket`);
    if (mpu.uploadId) allowed(t, await abortMultipartUpload(s3, u.one, 'own-mpu', mpu.uploadId), 204, `${u.name} AbortMultipartUpload`);
    const del = await deleteObjects(s3, u.one, ['copy-within.txt']);
    allowed(t, del.res, 200, `${u.name} DeleteObjects in own bucket`);
    t.same(del.deleted, ['copy-within.txt'], 'DeleteObjects deleted it');
    allowed(t, await s3.deleteObject(u.two, 'copy-across.txt'), 204, `${u.name} DELETE own object`);
    allowed(t, await putBucketCors(s3, u.one, ['https://x.example'], ['GET']), 200, `${u.name} PutBucketCors on own bucket`);
    allowed(t, await getBucketCors(s3, u.one), 200, `${u.name} GetBucketCors on own bucket`);
  }
});

t.test('another user\'s bucket or object: AccessDenied for every operation (raw signed requests)', async (t) => {
  // Each victim has an upload in progress, so the attacker has a real upload id to aim at.
  const victimUploads = {} as Record<UserName, string>;
  for (const v of Object.values(users)) {
    const mpu = await createMultipartUpload(root.as(v.account), v.one, 'victim-mpu');
    allowed(t, mpu.res, 200, `${v.name} starts an upload`);
    victimUploads[v.name] = mpu.uploadId ?? 'no-upload-id';
    allowed(t, await uploadPart(root.as(v.account), v.one, 'victim-mpu', victimUploads[v.name], 1, Buffer.from('victim part')), 200, `${v.name} uploads part 1`);
  }

  for (const attacker of Object.values(users)) {
    const s3 = root.as(attacker.account);
    // The attacker's own upload, to try UploadPartCopy from a victim's object.
    const ownMpu = await createMultipartUpload(s3, attacker.one, 'attacker-mpu');
    for (const victim of Object.values(users)) {
      if (victim.name === attacker.name) continue;
      const who = `${attacker.name} on ${victim.name}'s`;
      const uploadId = victimUploads[victim.name];
      denied(t, await s3.getObject(victim.one, 'seed.txt'), `${who} GET object`);
      denied(t, await s3.getObject(victim.one, 'no-such-key'), `${who} GET missing key (no existence leak)`);
      deniedHead(t, await s3.headObject(victim.one, 'seed.txt'), `${who} HEAD object`);
      deniedHead(t, await s3.send({ method: 'HEAD', bucket: victim.one }), `${who} HEAD bucket`);
      denied(t, await s3.putObject(victim.one, 'intruder.txt', Buffer.from('x')), `${who} PUT object`);
      denied(t, await s3.deleteObject(victim.one, 'seed.txt'), `${who} DELETE object`);
      denied(t, await s3.send({ method: 'GET', bucket: victim.one, query: { 'list-type': '2' } }), `${who} ListObjectsV2`);
      denied(t, await s3.send({ method: 'GET', bucket: victim.one }), `${who} ListObjects (v1)`);
      denied(t, await copyObject(s3, attacker.one, 'stolen.txt', victim.one, 'seed.txt'), `${who} object as CopyObject source`);
      denied(t, await copyObject(s3, victim.one, 'planted.txt', attacker.one, 'seed.txt'), `${who} bucket as CopyObject destination`);
      denied(t, (await createMultipartUpload(s3, victim.one, 'intruder-mpu')).res, `${who} CreateMultipartUpload`);
      denied(t, await uploadPart(s3, victim.one, 'victim-mpu', uploadId, 2, Buffer.from('evil')), `${who} UploadPart into their upload`);
      denied(t, await listParts(s3, victim.one, 'victim-mpu', uploadId), `${who} ListParts`);
      denied(t, await listMultipartUploads(s3, victim.one), `${who} ListMultipartUploads`);
      denied(t, await completeMultipartUpload(s3, victim.one, 'victim-mpu', uploadId, [{ partNumber: 1, etag: md5Hex('victim part') }]), `${who} CompleteMultipartUpload`);
      denied(t, await abortMultipartUpload(s3, victim.one, 'victim-mpu', uploadId), `${who} AbortMultipartUpload`);
      if (ownMpu.uploadId) {
        denied(t, await uploadPartCopy(s3, attacker.one, 'attacker-mpu', ownMpu.uploadId, 1, victim.one, 'seed.txt'), `${who} object as UploadPartCopy source`);
      }
      denied(t, (await deleteObjects(s3, victim.one, ['seed.txt'])).res, `${who} DeleteObjects`);
      denied(t, await getBucketCors(s3, victim.one), `${who} GetBucketCors`);
      denied(t, await putBucketCors(s3, victim.one, ['https://evil.example'], ['GET']), `${who} PutBucketCors`);
      denied(t, await s3.send({ method: 'DELETE', bucket: victim.two }), `${who} DeleteBucket`);
      const create = await s3.createBucket(victim.two);
      t.same([create.status, errorCode(create)], [409, 'BucketAlreadyExists'], `${who} name in CreateBucket -> 409 BucketAlreadyExists`);
    }
    if (ownMpu.uploadId) await abortMultipartUpload(s3, attacker.one, 'attacker-mpu', ownMpu.uploadId);
  }

  // Nothing the attackers tried had any effect.
  for (const v of Object.values(users)) {
    t.same(await root.listAllKeys(v.one), ['seed.txt'], `${v.one} holds only its seed`);
    t.same(await root.listAllKeys(v.two), ['seed.txt'], `${v.two} holds only its seed`);
    const get = await root.getObject(v.one, 'seed.txt');
    t.equal(sha256Hex(get.body), sha256Hex(v.seed), `${v.one}/seed.txt unchanged`);
    const cors = await getBucketCors(root, v.one);
    t.notMatch(cors.text, /evil\.example/, `${v.one}'s CORS configuration untouched`);
    const uploads = await listMultipartUploads(root, v.one);
    t.same(parseUploads(uploads.text), [{ key: 'victim-mpu', uploadId: victimUploads[v.name] }], `${v.name}'s upload survives, alone`);
    const parts = await listParts(root, v.one, 'victim-mpu', victimUploads[v.name]);
    t.same(
      xmlBlocks(parts.text, 'Part').map((p) => [xmlText(p, 'PartNumber'), xmlText(p, 'ETag')]),
      [['1', `"${md5Hex('victim part')}"`]],
      `${v.name}'s upload still has exactly its part 1`,
    );
    const done = await completeMultipartUpload(root.as(v.account), v.one, 'victim-mpu', victimUploads[v.name], [{ partNumber: 1, etag: `"${md5Hex('victim part')}"` }]);
    allowed(t, done, 200, `${v.name} completes their own upload`);
  }
  for (const u of Object.values(users)) {
    t.same(await root.listAllKeys(u.one), ['seed.txt', 'victim-mpu'], `${u.one}: seed and the completed upload, no stolen or planted keys`);
  }
});

t.test('a read bucket key lists and reads its bucket, never writes', async (t) => {
  for (const u of Object.values(users)) {
    const s3 = root.as(u.read);
    const who = `${u.name}'s read key`;
    t.same(await s3.listAllKeys(u.one), await root.listAllKeys(u.one), `${who} lists ${u.one}`);
    const get = await s3.getObject(u.one, 'seed.txt');
    allowed(t, get, 200, `${who} GET`);
    t.equal(sha256Hex(get.body), sha256Hex(u.seed), `${who} GET bytes`);
    allowed(t, await s3.headObject(u.one, 'seed.txt'), 200, `${who} HEAD object`);
    allowed(t, await s3.send({ method: 'HEAD', bucket: u.one }), 200, `${who} HEAD bucket`);

    denied(t, await s3.putObject(u.one, 'by-read-key.txt', Buffer.from('x')), `${who} PUT`);
    denied(t, await s3.deleteObject(u.one, 'seed.txt'), `${who} DELETE`);
    denied(t, await copyObject(s3, u.one, 'copy-by-read-key.txt', u.one, 'seed.txt'), `${who} CopyObject into its bucket`);
    denied(t, await copyObject(s3, u.two, 'copy-by-read-key.txt', u.one, 'seed.txt'), `${who} CopyObject into another bucket of the same user`);
    denied(t, (await createMultipartUpload(s3, u.one, 'by-read-key')).res, `${who} CreateMultipartUpload`);
    denied(t, (await deleteObjects(s3, u.one, ['seed.txt'])).res, `${who} DeleteObjects`);
    denied(t, await putBucketCors(s3, u.one, ['https://x.example'], ['GET']), `${who} PutBucketCors`);
    denied(t, await s3.getObject(u.two, 'seed.txt'), `${who} GET in the same user's other bucket`);
    denied(t, await s3.send({ method: 'GET', bucket: u.two, query: { 'list-type': '2' } }), `${who} list the same user's other bucket`);
    denied(t, await s3.createBucket(`${u.name}-by-read-key`), `${who} CreateBucket`);
    t.same(await root.listAllKeys(u.one), ['seed.txt', 'victim-mpu'], `${u.one} unchanged after the read key's attempts`);
  }
});

t.test('a read_write bucket key works in its bucket and nowhere else', async (t) => {
  for (const u of Object.values(users)) {
    const s3 = root.as(u.readWrite);
    const who = `${u.name}'s read_write key`;
    // Positive: everything inside its bucket.
    const body = Buffer.from(`rw by ${u.name}\n`);
    allowed(t, await s3.putObject(u.one, 'rw.txt', body), 200, `${who} PUT`);
    const get = await s3.getObject(u.one, 'rw.txt');
    allowed(t, get, 200, `${who} GET`);
    t.equal(sha256Hex(get.body), sha256Hex(body), `${who} GET bytes`);
    allowed(t, await copyObject(s3, u.one, 'rw-copy.txt', u.one, 'rw.txt'), 200, `${who} CopyObject within its bucket`);
    const mpu = await createMultipartUpload(s3, u.one, 'rw-mpu');
    allowed(t, mpu.res, 200, `${who} CreateMultipartUpload`);
    if (mpu.uploadId) {
      const part = await uploadPart(s3, u.one, 'rw-mpu', mpu.uploadId, 1, body);
      allowed(t, part, 200, `${who} UploadPart`);
      allowed(t, await completeMultipartUpload(s3, u.one, 'rw-mpu', mpu.uploadId, [{ partNumber: 1, etag: part.headers['etag'] ?? '' }]), 200, `${who} CompleteMultipartUpload`);
    }
    const del = await deleteObjects(s3, u.one, ['rw-copy.txt', 'rw-mpu']);
    allowed(t, del.res, 200, `${who} DeleteObjects`);
    allowed(t, await s3.deleteObject(u.one, 'rw.txt'), 204, `${who} DELETE`);

    // Negative: the same user's other bucket, and every other user's bucket.
    const others = [u.two, ...Object.values(users).filter((o) => o.name !== u.name).map((o) => o.one)];
    for (const other of others) {
      const where = `${who} on ${other}`;
      denied(t, await s3.getObject(other, 'seed.txt'), `${where}: GET`);
      deniedHead(t, await s3.headObject(other, 'seed.txt'), `${where}: HEAD`);
      denied(t, await s3.putObject(other, 'rw-intruder.txt', body), `${where}: PUT`);
      denied(t, await s3.deleteObject(other, 'seed.txt'), `${where}: DELETE`);
      denied(t, await s3.send({ method: 'GET', bucket: other, query: { 'list-type': '2' } }), `${where}: ListObjectsV2`);
      denied(t, await copyObject(s3, u.one, 'rw-stolen.txt', other, 'seed.txt'), `${where}: as CopyObject source`);
      denied(t, await copyObject(s3, other, 'rw-planted.txt', u.one, 'seed.txt'), `${where}: as CopyObject destination`);
      denied(t, (await createMultipartUpload(s3, other, 'rw-intruder')).res, `${where}: CreateMultipartUpload`);
      denied(t, (await deleteObjects(s3, other, ['seed.txt'])).res, `${where}: DeleteObjects`);
    }
    denied(t, await s3.createBucket(`${u.name}-by-rw-key`), `${who} CreateBucket`);
    t.same(await root.listAllKeys(u.one), ['seed.txt', 'victim-mpu'], `${u.one} back to its seed and upload`);
    t.same(await root.listAllKeys(u.two), ['seed.txt'], `${u.two} untouched`);
  }
});

t.test('aws-cli: own buckets only, and AccessDenied on another user\'s', async (t) => {
  const work = join(server.tmpRoot, 'awscli');
  await mkdir(work, { recursive: true });
  await writeFile(join(work, 'file.txt'), 'from aws cli\n');
  const aws = (credentials: Credentials, args: string[]): Promise<AwsResult> => runAws({ endpoint: server.url, credentials, files: awsFiles }, args, work);
  const { ann, ben } = users;

  // aws s3 ls / s3api list-buckets for each user and for bucket keys.
  const [lsAnn, lsBen, lsAnnRead, lsBenRw] = await Promise.all([
    aws(ann.account, ['s3api', 'list-buckets']),
    aws(ben.account, ['s3', 'ls']),
    aws(ann.read, ['s3api', 'list-buckets']),
    aws(ben.readWrite, ['s3', 'ls']),
  ]);
  const names = (r: AwsResult): unknown[] => asArray(asRecord(r.json)['Buckets']).map((b) => asRecord(b)['Name']);
  const lsNames = (r: AwsResult): string[] => r.stdout.split('\n').map((l) => l.trim().split(' ').pop() ?? '').filter(Boolean);
  t.same([lsAnn.code, names(lsAnn)], [0, [ann.one, ann.two]], `ann: s3api list-buckets shows ann's buckets ${lsAnn.stderr}`);
  t.same([lsBen.code, lsNames(lsBen)], [0, [ben.one, ben.two]], `ben: s3 ls shows ben's buckets ${lsBen.stderr}`);
  t.same([lsAnnRead.code, names(lsAnnRead)], [0, [ann.one]], `ann's read key: exactly ${ann.one}`);
  t.same([lsBenRw.code, lsNames(lsBenRw)], [0, [ben.one]], `ben's read_write key: exactly ${ben.one}`);

  // ann against ben's bucket, through aws-cli.
  const attempts: Array<[string, Credentials, string[], string]> = [
    ['get-object', ann.account, ['s3api', 'get-object', '--bucket', ben.one, '--key', 'seed.txt', 'out.txt'], 'GetObject'],
    ['put-object', ann.account, ['s3api', 'put-object', '--bucket', ben.one, '--key', 'cli-intruder.txt', '--body', 'file.txt'], 'PutObject'],
    ['delete-object', ann.account, ['s3api', 'delete-object', '--bucket', ben.one, '--key', 'seed.txt'], 'DeleteObject'],
    ['list-objects-v2', ann.account, ['s3api', 'list-objects-v2', '--bucket', ben.one], 'ListObjectsV2'],
    ['copy-object (source)', ann.account, ['s3api', 'copy-object', '--bucket', ann.one, '--key', 'cli-stolen.txt', '--copy-source', `${ben.one}/seed.txt`], 'CopyObject'],
    ['copy-object (destination)', ann.account, ['s3api', 'copy-object', '--bucket', ben.one, '--key', 'cli-planted.txt', '--copy-source', `${ann.one}/seed.txt`], 'CopyObject'],
    ['create-multipart-upload', ann.account, ['s3api', 'create-multipart-upload', '--bucket', ben.one, '--key', 'cli-mpu'], 'CreateMultipartUpload'],
    ['read key put-object', ann.read, ['s3api', 'put-object', '--bucket', ann.one, '--key', 'cli-by-read.txt', '--body', 'file.txt'], 'PutObject'],
    ['read key delete-object', ann.read, ['s3api', 'delete-object', '--bucket', ann.one, '--key', 'seed.txt'], 'DeleteObject'],
    ['read key copy-object into its bucket', ann.read, ['s3api', 'copy-object', '--bucket', ann.one, '--key', 'cli-copy.txt', '--copy-source', `${ann.one}/seed.txt`], 'CopyObject'],
    ['read_write key get-object elsewhere', ann.readWrite, ['s3api', 'get-object', '--bucket', ann.two, '--key', 'seed.txt', 'out2.txt'], 'GetObject'],
    ['read_write key put-object elsewhere', ann.readWrite, ['s3api', 'put-object', '--bucket', ben.one, '--key', 'cli-rw.txt', '--body', 'file.txt'], 'PutObject'],
  ];
  const results = await Promise.all(attempts.map(([, cred, args]) => aws(cred, args)));
  attempts.forEach(([what, , , op], i) => {
    const r = results[i];
    if (!r) return;
    t.not(r.code, 0, `aws ${what} fails`);
    t.match(r.stderr, `An error occurred (AccessDenied) when calling the ${op} operation`, `aws ${what}: AccessDenied (${r.stderr.trim()})`);
  });
  const [head, readCp] = await Promise.all([
    aws(ann.account, ['s3api', 'head-object', '--bucket', ben.one, '--key', 'seed.txt']),
    aws(ann.read, ['s3', 'cp', `s3://${ann.one}/seed.txt`, 'seed-read.txt']),
  ]);
  t.not(head.code, 0, 'aws head-object on ben\'s object fails');
  t.match(head.stderr, /\(403\)/, `head-object: 403 (${head.stderr.trim()})`);
  // The read key can download with aws s3 cp.
  t.equal(readCp.code, 0, `ann's read key: aws s3 cp download ${readCp.stderr}`);
  t.equal(sha256Hex(await readFile(join(work, 'seed-read.txt')).catch(() => Buffer.from('missing'))), sha256Hex(ann.seed), 'downloaded bytes');

  t.same(await root.listAllKeys(ben.one), ['seed.txt', 'victim-mpu'], `${ben.one} unchanged by the aws-cli attempts`);
  t.same(await root.listAllKeys(ann.one), ['seed.txt', 'victim-mpu'], `${ann.one} unchanged by the aws-cli attempts`);
});

t.test('an account key creates a bucket that only its user sees', async (t) => {
  const s3 = root.as(users.ann.account);
  allowed(t, await s3.createBucket('ann-three'), 200, 'ann CreateBucket ann-three');
  t.same((await listBuckets(s3)).names, ['ann-one', 'ann-three', 'ann-two'], 'ann sees it');
  t.same((await listBuckets(root.as(users.ben.account))).names, ['ben-one', 'ben-two'], 'ben does not');
  denied(t, await root.as(users.ben.account).putObject('ann-three', 'x', Buffer.from('x')), 'ben PUT into ann-three');
  allowed(t, await s3.send({ method: 'DELETE', bucket: 'ann-three' }), 204, 'ann DeleteBucket ann-three');
});

t.test('no request of this file got a 5xx', async (t) => {
  const fives = root.log.filter((l) => l.status >= 500);
  t.same(fives, [], 'no 5xx');
});
