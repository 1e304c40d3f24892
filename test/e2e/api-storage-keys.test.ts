// Storage access keys through the management API (SPEC.md §2.9, §4): GET/POST
// /storage/buckets/:bucket/access-keys and DELETE .../:keyId, also under /api/v3. Keys created by the
// API are used at once by the real aws cli with the connection details of the creation response:
// a read key lists and downloads but never writes, a read_write key writes, neither touches another
// bucket, and a key deleted through the API is refused on the very next request. Around that: 401,
// 403, 404 without revealing other users' buckets, 400 for every kind of bad body, no 5xx, no secret
// in any listing, no internal name in any body, and the secrets encrypted at rest.
import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { S3EdgeClient, CreatedStorageAccessKey } from '../../src/client/index.js';
import { apiClient, apiUser, PROVIDER_NAMES, ResponseRecorder } from '../helpers/api.js';
import { runAws, writeAwsConfig, type AwsResult } from '../helpers/aws-cli.js';
import { createAccountKey, createBucketKey, startServer } from '../helpers/server.js';
import type { Credentials } from '../helpers/signer.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const server = await startServer();
t.teardown(() => server.stop());
const recorder = new ResponseRecorder();
const awsFiles = await writeAwsConfig(server.tmpRoot);
const work = join(server.tmpRoot, 'aws-work');
await mkdir(work, { recursive: true });
await writeFile(join(work, 'upload.txt'), 'uploaded with a read_write key\n');

const SCOPE = 'storage-keys:manage';
const ann = await apiUser(server, [SCOPE], { name: 'ann', recorder });
const ben = await apiUser(server, [SCOPE], { name: 'ben', recorder });
// ann owns two buckets, ben one; a key of one bucket must never reach another, even of the same user.
await Promise.all([
  server.admin(['buckets', 'create', 'ann-photos', '--user', 'ann']),
  server.admin(['buckets', 'create', 'ann-docs', '--user', 'ann']),
  server.admin(['buckets', 'create', 'ben-photos', '--user', 'ben']),
]);

const SEED = 'seed object\n';
const root = (args: string[]): Promise<AwsResult> => aws(server.rootKey, server.url, args);
for (const bucket of ['ann-photos', 'ann-docs', 'ben-photos']) {
  await writeFile(join(work, 'seed.txt'), SEED);
  const r = await root(['s3api', 'put-object', '--bucket', bucket, '--key', 'seed.txt', '--body', 'seed.txt']);
  if (r.code !== 0) throw new Error(`seeding ${bucket} failed: ${r.stderr}`);
}

/** Every secret the API handed out, to look for in places it must never be. */
const secrets: string[] = [];

function aws(credentials: Credentials, endpoint: string, args: string[]): Promise<AwsResult> {
  return runAws({ endpoint, credentials, files: awsFiles }, args, work);
}

/** aws cli with a key exactly as the creation response describes it (endpoint, region, path style). */
function awsWith(key: CreatedStorageAccessKey, args: string[]): Promise<AwsResult> {
  return aws({ accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey }, key.endpoint, ['--region', key.region, ...args]);
}

function awsOk(t: TapTest, r: AwsResult, what: string): void {
  t.equal(r.code, 0, `${what} succeeds${r.code === 0 ? '' : `: ${r.stderr.trim()}`}`);
}

function awsError(t: TapTest, r: AwsResult, code: string, operation: string, what: string): void {
  t.not(r.code, 0, `${what} fails`);
  t.match(r.stderr, `An error occurred (${code}) when calling the ${operation} operation`, `${what}: ${code} (${r.stderr.trim()})`);
}

function listedKeys(r: AwsResult): string[] {
  const json = r.json as { Contents?: { Key: string }[] } | undefined;
  return (json?.Contents ?? []).map((c) => c.Key).sort();
}

interface JsonResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** Any request through a recording client; the body parsed as JSON (a non-JSON body fails the test). */
async function call(client: S3EdgeClient, method: string, path: string, init: { body?: string; contentType?: string } = {}): Promise<JsonResponse> {
  const res = await client.raw(method, path, {
    ...(init.body === undefined ? {} : { body: init.body }),
    ...(init.contentType === undefined ? {} : { headers: { 'content-type': init.contentType } }),
  });
  return { status: res.status, headers: res.headers, body: JSON.parse(res.body.toString('utf8')) as Record<string, unknown> };
}

function post(client: S3EdgeClient, path: string, body: unknown): Promise<JsonResponse> {
  return call(client, 'POST', path, { body: JSON.stringify(body), contentType: 'application/json' });
}

/** A request without any Authorization header, recorded like the clients' responses. */
async function anonymous(method: string, path: string, body?: string): Promise<JsonResponse> {
  const res = await fetch(new URL(path, server.url), {
    method,
    ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }),
  });
  const text = await res.text();
  recorder.record({ method, path, status: res.status, body: text });
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, unknown> };
}

function apiError(t: TapTest, r: JsonResponse, status: number, code: string, what: string): void {
  t.equal(r.status, status, `${what} -> ${status}${r.status === status ? '' : ` (got ${JSON.stringify(r.body)})`}`);
  t.same(Object.keys(r.body).sort(), ['code', 'message', 'success'], `${what}: the error envelope`);
  t.match(r.body, { success: false, code, message: /\S/ }, `${what}: code ${code} and a message`);
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const LISTED_FIELDS = ['accessKeyId', 'bucket', 'createdAt', 'id', 'name', 'permission'];
const CREATED_FIELDS = [...LISTED_FIELDS, 'endpoint', 'forcePathStyle', 'region', 'secretAccessKey'].sort();
const keysPath = (bucket: string, prefix = ''): string => `${prefix}/storage/buckets/${encodeURIComponent(bucket)}/access-keys`;

async function create(client: S3EdgeClient, bucket: string, name: string, permission: 'read' | 'read_write', prefix = ''): Promise<CreatedStorageAccessKey> {
  const r = await post(client, keysPath(bucket, prefix), { name, permission });
  if (r.status !== 201) throw new Error(`creating a key on ${bucket} failed: ${r.status} ${JSON.stringify(r.body)}`);
  const key = r.body['accessKey'] as CreatedStorageAccessKey;
  secrets.push(key.secretAccessKey);
  return key;
}

let annRead: CreatedStorageAccessKey;
let annWrite: CreatedStorageAccessKey;

t.test('POST creates read and read_write keys with their connection details', async (t) => {
  const r = await post(ann.client, keysPath('ann-photos'), { name: 'gallery reader', permission: 'read' });
  t.equal(r.status, 201, `201 Created ${r.status === 201 ? '' : JSON.stringify(r.body)}`);
  t.same(Object.keys(r.body).sort(), ['accessKey', 'success']);
  t.equal(r.body['success'], true);
  annRead = r.body['accessKey'] as CreatedStorageAccessKey;
  secrets.push(annRead.secretAccessKey);
  t.same(Object.keys(annRead).sort(), CREATED_FIELDS, 'exactly the documented fields');
  t.match(annRead, {
    name: 'gallery reader',
    permission: 'read',
    bucket: 'ann-photos',
    accessKeyId: /^SE[A-Z2-7]{18}$/,
    secretAccessKey: /^[A-Za-z0-9_-]{40}$/,
    endpoint: server.url,
    region: 'us-east-1',
    forcePathStyle: true,
    createdAt: ISO,
  });
  t.equal(annRead.id, annRead.accessKeyId, 'id is the access key id');

  // The typed client unwraps the same response.
  annWrite = await ann.client.createAccessKey('ann-photos', { name: 'uploader', permission: 'read_write' });
  secrets.push(annWrite.secretAccessKey);
  t.match(annWrite, { name: 'uploader', permission: 'read_write', bucket: 'ann-photos', endpoint: server.url, forcePathStyle: true });
  t.not(annWrite.accessKeyId, annRead.accessKeyId, 'a new id');
  t.not(annWrite.secretAccessKey, annRead.secretAccessKey, 'a new secret');
});

t.test('a read key: lists and downloads with aws cli at once, never writes, only its bucket', async (t) => {
  // The first request ever made with this key, straight after its creation.
  const list = await awsWith(annRead, ['s3api', 'list-objects-v2', '--bucket', 'ann-photos']);
  awsOk(t, list, 'read key: list-objects-v2 (its first request)');
  t.same(listedKeys(list), ['seed.txt'], 'lists the bucket');
  const get = await awsWith(annRead, ['s3api', 'get-object', '--bucket', 'ann-photos', '--key', 'seed.txt', 'read-got.txt']);
  awsOk(t, get, 'read key: get-object');
  t.equal(readFileSync(join(work, 'read-got.txt'), 'utf8'), SEED, 'downloaded bytes');
  const ls = await awsWith(annRead, ['s3', 'ls', 's3://ann-photos/']);
  awsOk(t, ls, 'read key: aws s3 ls');
  t.match(ls.stdout, /seed\.txt/);

  awsError(t, await awsWith(annRead, ['s3api', 'put-object', '--bucket', 'ann-photos', '--key', 'x.txt', '--body', 'upload.txt']), 'AccessDenied', 'PutObject', 'read key: put-object');
  awsError(t, await awsWith(annRead, ['s3api', 'delete-object', '--bucket', 'ann-photos', '--key', 'seed.txt']), 'AccessDenied', 'DeleteObject', 'read key: delete-object');
  awsError(t, await awsWith(annRead, ['s3api', 'list-objects-v2', '--bucket', 'ann-docs']), 'AccessDenied', 'ListObjectsV2', "read key: the same user's other bucket");
  awsError(t, await awsWith(annRead, ['s3api', 'get-object', '--bucket', 'ben-photos', '--key', 'seed.txt', 'nope.txt']), 'AccessDenied', 'GetObject', "read key: another user's bucket");
  t.same(listedKeys(await root(['s3api', 'list-objects-v2', '--bucket', 'ann-photos'])), ['seed.txt'], 'ann-photos unchanged');
});

t.test('a read_write key: puts, gets and deletes in its bucket, nothing elsewhere', async (t) => {
  awsOk(t, await awsWith(annWrite, ['s3api', 'put-object', '--bucket', 'ann-photos', '--key', 'new.txt', '--body', 'upload.txt']), 'read_write key: put-object');
  awsOk(t, await awsWith(annWrite, ['s3api', 'get-object', '--bucket', 'ann-photos', '--key', 'new.txt', 'rw-got.txt']), 'read_write key: get-object');
  t.equal(readFileSync(join(work, 'rw-got.txt'), 'utf8'), readFileSync(join(work, 'upload.txt'), 'utf8'), 'round-trip bytes');
  t.same(listedKeys(await awsWith(annWrite, ['s3api', 'list-objects-v2', '--bucket', 'ann-photos'])), ['new.txt', 'seed.txt'], 'lists both');
  awsOk(t, await awsWith(annWrite, ['s3api', 'delete-object', '--bucket', 'ann-photos', '--key', 'new.txt']), 'read_write key: delete-object');
  awsOk(t, await awsWith(annWrite, ['s3', 'cp', 'upload.txt', 's3://ann-photos/cp.txt']), 'read_write key: aws s3 cp up');
  awsOk(t, await awsWith(annWrite, ['s3', 'rm', 's3://ann-photos/cp.txt']), 'read_write key: aws s3 rm');
  t.same(listedKeys(await root(['s3api', 'list-objects-v2', '--bucket', 'ann-photos'])), ['seed.txt'], 'back to the seed');

  awsError(t, await awsWith(annWrite, ['s3api', 'put-object', '--bucket', 'ann-docs', '--key', 'x.txt', '--body', 'upload.txt']), 'AccessDenied', 'PutObject', "read_write key: the same user's other bucket");
  awsError(t, await awsWith(annWrite, ['s3api', 'put-object', '--bucket', 'ben-photos', '--key', 'x.txt', '--body', 'upload.txt']), 'AccessDenied', 'PutObject', "read_write key: another user's bucket");
  awsError(t, await awsWith(annWrite, ['s3api', 'delete-object', '--bucket', 'ben-photos', '--key', 'seed.txt']), 'AccessDenied', 'DeleteObject', "read_write key: delete in another user's bucket");
  t.same(listedKeys(await root(['s3api', 'list-objects-v2', '--bucket', 'ben-photos'])), ['seed.txt'], 'ben-photos unchanged');
  t.same(listedKeys(await root(['s3api', 'list-objects-v2', '--bucket', 'ann-docs'])), ['seed.txt'], 'ann-docs unchanged');
});

t.test('GET lists the bucket\'s keys, never a secret, at both prefixes', async (t) => {
  const r = await call(ann.client, 'GET', keysPath('ann-photos'));
  t.equal(r.status, 200);
  t.same(Object.keys(r.body).sort(), ['accessKeys', 'success']);
  const listed = r.body['accessKeys'] as Record<string, unknown>[];
  t.same(
    listed.map((k) => [k['accessKeyId'], k['permission'], k['name']]),
    [[annRead.accessKeyId, 'read', 'gallery reader'], [annWrite.accessKeyId, 'read_write', 'uploader']],
    'both keys, oldest first',
  );
  for (const k of listed) {
    t.same(Object.keys(k).sort(), LISTED_FIELDS, `${String(k['id'])}: the listed fields only`);
    t.match(k, { bucket: 'ann-photos', createdAt: ISO });
    t.equal(k['id'], k['accessKeyId']);
  }
  t.equal(listed[0]?.['createdAt'], annRead.createdAt, 'the creation time of the creation response');

  const prefixed = await call(ann.client, 'GET', keysPath('ann-photos', '/api/v3'));
  t.equal(prefixed.status, 200, '/api/v3/storage/... answers too');
  t.same(prefixed.body, r.body, 'with the same body');
  t.same(await ann.client.listAccessKeys('ann-photos'), listed, 'the typed client unwraps it');

  const docs = await call(ann.client, 'GET', keysPath('ann-docs'));
  t.same(docs.body, { success: true, accessKeys: [] }, "ann-docs has no keys: ann-photos' keys are not listed there");
});

t.test('keys made by the admin CLI are the same keys: listed and deleted through the API', async (t) => {
  const cliKey = await createBucketKey(server, 'ann-docs', 'read');
  secrets.push(cliKey.secretAccessKey);
  const listed = await ann.client.listAccessKeys('ann-docs');
  t.same(listed.map((k) => [k.accessKeyId, k.permission, k.name]), [[cliKey.accessKeyId, 'read', '']], 'listed (a CLI key may have no name)');
  awsOk(t, await aws(cliKey, server.url, ['s3api', 'list-objects-v2', '--bucket', 'ann-docs']), 'the CLI key works');
  const del = await call(ann.client, 'DELETE', `${keysPath('ann-docs')}/${cliKey.accessKeyId}`);
  t.same([del.status, del.body], [200, { success: true, message: 'Access key deleted' }], 'deleted through the API');
  awsError(t, await aws(cliKey, server.url, ['s3api', 'list-objects-v2', '--bucket', 'ann-docs']), 'InvalidAccessKeyId', 'ListObjectsV2', 'the CLI key after the API deleted it');
});

t.test('the /api/v3 prefix: create, use and delete there', async (t) => {
  const key = await create(ann.client, 'ann-docs', 'via api/v3', 'read_write', '/api/v3');
  t.match(key, { bucket: 'ann-docs', permission: 'read_write', endpoint: server.url });
  awsOk(t, await awsWith(key, ['s3api', 'put-object', '--bucket', 'ann-docs', '--key', 'v3.txt', '--body', 'upload.txt']), 'the key writes its bucket');
  awsOk(t, await awsWith(key, ['s3api', 'delete-object', '--bucket', 'ann-docs', '--key', 'v3.txt']), 'and deletes there');
  t.same((await ann.client.listAccessKeys('ann-docs')).map((k) => k.accessKeyId), [key.accessKeyId], 'listed at the other prefix');
  const del = await call(ann.client, 'DELETE', `${keysPath('ann-docs', '/api/v3')}/${key.accessKeyId}`);
  t.same([del.status, del.body], [200, { success: true, message: 'Access key deleted' }], 'DELETE /api/v3/storage/...');
  t.same(await ann.client.listAccessKeys('ann-docs'), [], 'gone');
});

t.test('DELETE: the very next aws call with the key is refused', async (t) => {
  const key = await create(ann.client, 'ann-photos', 'short-lived', 'read');
  // A successful request first, so the server holds the key in its lookup cache.
  awsOk(t, await awsWith(key, ['s3api', 'list-objects-v2', '--bucket', 'ann-photos']), 'works before the delete');
  t.equal(await ann.client.deleteAccessKey('ann-photos', key.accessKeyId), 'Access key deleted');
  awsError(t, await awsWith(key, ['s3api', 'list-objects-v2', '--bucket', 'ann-photos']), 'InvalidAccessKeyId', 'ListObjectsV2', 'the next request after the delete');
  t.notOk((await ann.client.listAccessKeys('ann-photos')).some((k) => k.accessKeyId === key.accessKeyId), 'no longer listed');
  apiError(t, await call(ann.client, 'DELETE', `${keysPath('ann-photos')}/${key.accessKeyId}`), 404, 'not_found', 'deleting it again');
  awsOk(t, await awsWith(annRead, ['s3api', 'list-objects-v2', '--bucket', 'ann-photos']), 'the other keys of the bucket still work');
});

t.test('401 without a token or with a bad one, 403 without the scope', async (t) => {
  const keyPath = `${keysPath('ann-photos')}/${annRead.accessKeyId}`;
  const body = JSON.stringify({ name: 'x', permission: 'read' });
  const bad = apiClient(server, 's3e_00000000000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', recorder);
  const garbage = apiClient(server, 'not-a-token', recorder);
  const noScope = await apiUser(server, ['assets:read', 'api-keys:manage'], { name: 'ann', recorder });
  for (const prefix of ['', '/api/v3']) {
    const list = keysPath('ann-photos', prefix);
    const one = `${prefix}${keyPath}`;
    for (const [method, path] of [['GET', list], ['POST', list], ['DELETE', one]] as const) {
      const what = `${method} ${path}`;
      const sendBody = method === 'POST' ? { body, contentType: 'application/json' } : {};
      const none = await anonymous(method, path, method === 'POST' ? body : undefined);
      apiError(t, none, 401, 'unauthorized', `${what} without a token`);
      t.equal(none.headers.get('www-authenticate'), 'Bearer', `${what}: WWW-Authenticate: Bearer`);
      apiError(t, await call(bad, method, path, sendBody), 401, 'unauthorized', `${what} with an unknown token`);
      apiError(t, await call(garbage, method, path, sendBody), 401, 'unauthorized', `${what} with a malformed token`);
      const forbidden = await call(noScope.client, method, path, sendBody);
      apiError(t, forbidden, 403, 'forbidden', `${what} without ${SCOPE}`);
      t.match(forbidden.body['message'], SCOPE, 'the message names the missing scope');
    }
  }
  // Authentication comes before the body is even read: a bad body does not change the answer.
  const badBody = { body: '{"name": ', contentType: 'application/json' };
  apiError(t, await anonymous('POST', keysPath('ann-photos'), '{"name": '), 401, 'unauthorized', 'malformed body without a token');
  apiError(t, await call(bad, 'POST', keysPath('ann-photos'), badBody), 401, 'unauthorized', 'malformed body with an unknown token');
  apiError(t, await call(noScope.client, 'POST', keysPath('ann-photos'), badBody), 403, 'forbidden', 'malformed body without the scope');
  t.same((await ann.client.listAccessKeys('ann-photos')).map((k) => k.accessKeyId), [annRead.accessKeyId, annWrite.accessKeyId], 'nothing created or deleted');
  awsOk(t, await awsWith(annRead, ['s3api', 'list-objects-v2', '--bucket', 'ann-photos']), 'the key still works');
});

t.test("404: another user's bucket looks exactly like a missing one", async (t) => {
  const benKey = await create(ben.client, 'ben-photos', 'ben reader', 'read');
  for (const prefix of ['', '/api/v3']) {
    // ben asks for ann's bucket, and for a bucket nobody has: the same answer, word for word.
    for (const [method, suffix] of [['GET', ''], ['POST', ''], ['DELETE', `/${annRead.accessKeyId}`]] as const) {
      const init = method === 'POST' ? { body: JSON.stringify({ name: 'sneaky', permission: 'read_write' }), contentType: 'application/json' } : {};
      const theirs = await call(ben.client, method, `${keysPath('ann-photos', prefix)}${suffix}`, init);
      const missing = await call(ben.client, method, `${keysPath('no-such-bucket', prefix)}${suffix}`, init);
      apiError(t, theirs, 404, 'not_found', `ben ${method} on ann's bucket${prefix && ' (/api/v3)'}`);
      t.same(theirs.body, missing.body, `${method}: same body as for a bucket that does not exist`);
      t.same(theirs.body, { success: false, message: 'Bucket not found', code: 'not_found' });
    }
  }
  // Key ids that are not this bucket's keys.
  const accountKey = await createAccountKey(server, 'ann');
  secrets.push(accountKey.secretAccessKey);
  const cases: Array<[string, string, string]> = [
    ["ann's ann-photos key via ann-docs", 'ann-docs', annRead.accessKeyId],
    ["ben's key via ann's bucket", 'ann-photos', benKey.accessKeyId],
    ["ann's account key (not a bucket key)", 'ann-photos', accountKey.accessKeyId],
    ['the root key (not a bucket key)', 'ann-photos', server.rootKey.accessKeyId],
    ['an unknown id', 'ann-photos', 'SEAAAAAAAAAAAAAAAAAA'],
  ];
  for (const [what, bucket, id] of cases) {
    const r = await call(ann.client, 'DELETE', `${keysPath(bucket)}/${encodeURIComponent(id)}`);
    apiError(t, r, 404, 'not_found', `DELETE ${what}`);
    t.same(r.body, { success: false, message: 'Access key not found', code: 'not_found' }, `${what}: one message for all`);
  }
  // Nothing was created, deleted or disabled by any of that.
  t.same((await ann.client.listAccessKeys('ann-photos')).map((k) => k.accessKeyId), [annRead.accessKeyId, annWrite.accessKeyId], "ann's keys unchanged");
  t.same((await ben.client.listAccessKeys('ben-photos')).map((k) => k.accessKeyId), [benKey.accessKeyId], "ben's keys unchanged");
  awsOk(t, await awsWith(benKey, ['s3api', 'list-objects-v2', '--bucket', 'ben-photos']), "ben's key still works");
  awsOk(t, await aws(accountKey, server.url, ['s3api', 'list-objects-v2', '--bucket', 'ann-photos']), "ann's account key still works");
  awsOk(t, await root(['s3api', 'list-buckets']), 'the root key still works');
});

t.test('400 for every kind of bad body, nothing created', async (t) => {
  const path = keysPath('ann-docs');
  const json = 'application/json';
  const cases: Array<[string, string | undefined, string | undefined, RegExp]> = [
    ['missing name', JSON.stringify({ permission: 'read' }), json, /name/],
    ['empty name', JSON.stringify({ name: '', permission: 'read' }), json, /name/],
    ['name of 129 characters', JSON.stringify({ name: 'n'.repeat(129), permission: 'read' }), json, /name/],
    ['name with a control character', JSON.stringify({ name: 'bell\u0007', permission: 'read' }), json, /name/],
    ['name with a newline', JSON.stringify({ name: 'two\nlines', permission: 'read' }), json, /name/],
    ['name not a string', JSON.stringify({ name: 42, permission: 'read' }), json, /name must be string/],
    ['missing permission', JSON.stringify({ name: 'x' }), json, /permission/],
    ['bad permission', JSON.stringify({ name: 'x', permission: 'write' }), json, /permission must be one of: read, read_write/],
    ['permission not a string', JSON.stringify({ name: 'x', permission: ['read'] }), json, /permission/],
    ['an extra field', JSON.stringify({ name: 'x', permission: 'read', bucket: 'ben-photos' }), json, /unknown field 'bucket'/],
    ['malformed JSON', '{"name": "x", "permission":', json, /JSON/],
    ['empty JSON body', '', json, /./],
    ['a JSON array', JSON.stringify([{ name: 'x', permission: 'read' }]), json, /body must be object/],
    ['JSON null', 'null', json, /body must be object/],
    ['plain text', 'name=x&permission=read', 'text/plain', /body must be object/],
    ['no body at all', undefined, undefined, /body must be object/],
  ];
  for (const prefix of ['', '/api/v3']) {
    for (const [what, body, contentType, message] of cases) {
      const r = await call(ann.client, 'POST', `${prefix}${path}`, { ...(body === undefined ? {} : { body }), ...(contentType === undefined ? {} : { contentType }) });
      apiError(t, r, 400, 'invalid_request', `${what}${prefix && ' (/api/v3)'}`);
      t.match(r.body['message'], message, `${what}: says what is wrong (${String(r.body['message'])})`);
    }
  }
  t.same(await ann.client.listAccessKeys('ann-docs'), [], 'no key was created');
});

t.test('names: 128 printable characters and unicode are fine', async (t) => {
  const long = await create(ann.client, 'ann-docs', 'n'.repeat(128), 'read');
  t.equal(long.name, 'n'.repeat(128));
  const uni = await create(ann.client, 'ann-docs', 'Käse & 🧀 "quotes" <tag>', 'read');
  t.equal(uni.name, 'Käse & 🧀 "quotes" <tag>', 'stored and returned as sent');
  t.same((await ann.client.listAccessKeys('ann-docs')).map((k) => k.name), ['n'.repeat(128), 'Käse & 🧀 "quotes" <tag>']);
  for (const k of [long, uni]) t.equal(await ann.client.deleteAccessKey('ann-docs', k.accessKeyId), 'Access key deleted');
});

t.test('secrets: only in their creation response, never in a listing, encrypted at rest', async (t) => {
  t.ok(secrets.length >= 7, `${secrets.length} secrets issued`);
  const listings = recorder.responses.filter((r) => r.method === 'GET');
  t.ok(listings.length > 0, 'listings were recorded');
  for (const r of listings) {
    t.notMatch(r.body, /secretAccessKey/i, `GET ${r.path} (${r.status}) has no secret field`);
    for (const s of secrets) t.equal(r.body.includes(s), false, `GET ${r.path} does not contain a secret`);
  }
  const apiSecrets = secrets.filter((s) => recorder.responses.some((r) => r.body.includes(s)));
  for (const s of apiSecrets) {
    const carriers = recorder.responses.filter((r) => r.body.includes(s));
    t.same(carriers.map((r) => [r.method, r.status]), [['POST', 201]], 'a secret appears in exactly one response: its creation');
  }
  for (const name of readdirSync(server.dataDir)) {
    const file = join(server.dataDir, name);
    if (!statSync(file).isFile()) continue;
    const bytes = readFileSync(file);
    for (const s of secrets) t.equal(bytes.indexOf(s), -1, `${name} does not hold a secret in plaintext`);
  }
});

t.test('no 5xx from the management API', async (t) => {
  t.same(recorder.responses.filter((r) => r.status >= 500).map((r) => `${r.method} ${r.path} ${r.status}`), []);
});

t.test('no internal name in any response body', async (t) => {
  recorder.assertNoLeaks(t, [...PROVIDER_NAMES, server.dataDir]);
});
