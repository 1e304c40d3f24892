// The admin CLI end to end: the real CLI process (test/helpers/cli.ts) against a temporary data
// directory, one command after another: users, buckets, keys, secrets at rest, human output.
// Help, usage and suggestions: admin-cli-help.test.ts; data directories, config errors and the
// recorded endpoint: admin-cli-data-dir.test.ts.
import t, { type Test } from 'tap';
import { openSqlite } from '../../src/db/sqlite/index.js';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/temp-data.js';
import { assertClean, assertErrorJson, runS3edge, type ProcessResult } from '../helpers/cli.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

t.test('admin CLI end to end', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const base = ['--data-dir', dataDir];

  async function ok(t: Test, args: string[], what: string, extra: string[] = []): Promise<unknown> {
    const r = await runS3edge([...args, ...base, ...extra, '--json']);
    t.equal(r.code, 0, `${what}: exit 0 (stderr: ${r.stderr.trim()})`);
    t.equal(r.stderr, '', `${what}: quiet stderr`);
    return JSON.parse(r.stdout) as unknown;
  }

  async function fails(t: Test, args: string[], code: number, errorCode: string, what: string): Promise<ProcessResult> {
    const r = await runS3edge([...args, ...base, '--json']);
    t.equal(r.code, code, `${what}: exit ${code}`);
    t.equal(r.stderr.split('\n')[0]?.startsWith('s3edge: '), true, `${what}: one clear line first`);
    assertErrorJson(t, r, errorCode, what);
    assertClean(t, r, what);
    return r;
  }

  const secrets: string[] = [];
  let bucketKeyId = '';
  let accountKeyId = '';

  await t.test('users', async (t) => {
    // The one command that may start a data directory, and it says so.
    const first = await runS3edge(['users', 'create', 'alice', ...base, '--json']);
    t.equal(first.code, 0, 'users create in a new data directory');
    t.equal(first.stderr, `s3edge: created a new data directory at ${dataDir} (no server has used it yet)\n`, 'says it created one');
    const alice = JSON.parse(first.stdout) as Record<string, unknown>;
    t.same(Object.keys(alice).sort(), ['createdAt', 'hasPassword', 'id', 'name']);
    t.match(alice, { id: /^[0-9a-f]{32}$/, name: 'alice', createdAt: ISO, hasPassword: false });
    await ok(t, ['users', 'create', 'bob'], 'users create bob');
    const list = (await ok(t, ['users', 'list'], 'users list')) as Record<string, unknown>[];
    t.same(list.map((u) => u.name), ['alice', 'bob']);
    for (const u of list) t.same(Object.keys(u).sort(), ['createdAt', 'hasPassword', 'id', 'name', 'quotaBytes', 'storedBytes']);
    t.same(list[0], { ...alice, storedBytes: 0, quotaBytes: null });

    await fails(t, ['users', 'create', 'alice'], 1, 'UserAlreadyExists', 'duplicate user');
    await fails(t, ['users', 'create', 'root'], 1, 'InvalidUserName', 'reserved root');
    await fails(t, ['users', 'create', 'no/slashes'], 1, 'InvalidUserName', 'bad user name');
    await fails(t, ['users', 'delete', 'carol'], 1, 'NoSuchUser', 'unknown user');
    t.same(await ok(t, ['users', 'delete', 'bob'], 'users delete'), { deleted: true, name: 'bob' });
    t.same(((await ok(t, ['users', 'list'], 'users list')) as { name: string }[]).map((u) => u.name), ['alice']);

    const st = statSync(dataDir);
    t.equal(st.mode & 0o777, 0o700, 'data dir is 0700');
    t.equal(statSync(join(dataDir, 'master.key')).mode & 0o777, 0o600, 'master.key is 0600');
  });

  await t.test('buckets', async (t) => {
    const b = (await ok(t, ['buckets', 'create', 'photos', '--user', 'alice'], 'buckets create', ['--region', 'eu-west-3'])) as Record<string, unknown>;
    t.same(Object.keys(b).sort(), ['createdAt', 'name', 'owner', 'region']);
    t.match(b, { name: 'photos', owner: 'alice', region: 'eu-west-3', createdAt: ISO });
    await ok(t, ['buckets', 'create', 'logs', '--user', 'alice'], 'second bucket');
    await fails(t, ['buckets', 'create', 'photos', '--user', 'alice'], 1, 'BucketAlreadyExists', 'duplicate bucket');
    await fails(t, ['buckets', 'create', 'Bad_Name', '--user', 'alice'], 1, 'InvalidBucketName', 'invalid bucket name');
    await fails(t, ['buckets', 'create', 'storage', '--user', 'alice'], 1, 'InvalidBucketName', 'reserved bucket name');
    await fails(t, ['buckets', 'create', 'nobodys', '--user', 'nobody'], 1, 'NoSuchUser', 'unknown owner');

    const list = (await ok(t, ['buckets', 'list'], 'buckets list')) as Record<string, unknown>[];
    t.same(list, [
      { name: 'logs', owner: 'alice', region: 'us-east-1', createdAt: list[0]?.createdAt, objects: 0, public: false, storedBytes: 0, quotaBytes: null },
      { name: 'photos', owner: 'alice', region: 'eu-west-3', createdAt: b.createdAt, objects: 0, public: false, storedBytes: 0, quotaBytes: null },
    ]);
    t.same(await ok(t, ['buckets', 'list', '--user', 'alice'], 'buckets list --user'), list);
    await fails(t, ['buckets', 'list', '--user', 'nobody'], 1, 'NoSuchUser', 'list for unknown user');

    t.same(await ok(t, ['buckets', 'public', 'logs'], 'buckets public'), { name: 'logs', public: true });
    t.same(await ok(t, ['buckets', 'public', 'logs'], 'buckets public again'), { name: 'logs', public: true }, 'idempotent');
    const publicList = (await ok(t, ['buckets', 'list'], 'list after public')) as { name: string; public: boolean }[];
    t.same(publicList.map((x) => [x.name, x.public]), [['logs', true], ['photos', false]]);
    t.same(await ok(t, ['buckets', 'private', 'logs'], 'buckets private'), { name: 'logs', public: false });
    await fails(t, ['buckets', 'public', 'nope'], 1, 'NoSuchBucket', 'public: unknown bucket');
    await fails(t, ['buckets', 'private', 'nope'], 1, 'NoSuchBucket', 'private: unknown bucket');
    const human = await runS3edge(['buckets', 'public', 'photos', ...base]);
    t.equal(human.code, 0, 'human output');
    t.match(human.stdout, /^name:\s+photos\npublic:\s+true\n$/, 'human output: name and flag');
    await ok(t, ['buckets', 'private', 'photos'], 'photos private again');
    const usage = await runS3edge(['buckets', 'public', ...base]);
    t.equal(usage.code, 2, 'public without a name: usage error');
    t.match(usage.stderr, /requires NAME/);
  });

  await t.test('account keys', async (t) => {
    const k = (await ok(t, ['account-keys', 'create', '--user', 'alice', '--name', 'laptop'], 'account-keys create', [
      '--public-url',
      'https://s3.example.com',
    ])) as Record<string, unknown>;
    t.same(Object.keys(k).sort(), ['accessKeyId', 'endpoint', 'endpointStatus', 'name', 'region', 'secretAccessKey', 'user']);
    t.match(k, {
      accessKeyId: /^SE[A-Z2-7]{18}$/,
      secretAccessKey: /^[A-Za-z0-9_-]{40}$/,
      user: 'alice',
      name: 'laptop',
      endpoint: 'https://s3.example.com',
      endpointStatus: 'configured',
      region: 'us-east-1',
    });
    accountKeyId = k.accessKeyId as string;
    secrets.push(k.secretAccessKey as string);
    // No publicUrl and no server ever started here: the endpoint is unknown, never guessed from --port.
    const k2 = (await ok(t, ['account-keys', 'create', '--user', 'alice'], 'no label', ['--host', '0.0.0.0', '--port', '9100'])) as Record<string, unknown>;
    t.match(k2, { name: '', endpoint: null, endpointStatus: 'unknown' });
    const human = await runS3edge(['account-keys', 'create', '--user', 'alice', ...base]);
    t.match(human.stdout, /^endpoint:\s+unknown: no server has started on this data directory yet \(start it, or pass --public-url\)$/m, 'human output says so');
    const humanId = /^accessKeyId:\s+(\S+)$/m.exec(human.stdout)?.[1] ?? '';
    secrets.push(/^secretAccessKey:\s+(\S+)$/m.exec(human.stdout)?.[1] ?? '');
    await ok(t, ['account-keys', 'delete', humanId], 'delete the human-output key');
    secrets.push(k2.secretAccessKey as string);

    const list = (await ok(t, ['account-keys', 'list', '--user', 'alice'], 'account-keys list')) as Record<string, unknown>[];
    t.equal(list.length, 2);
    for (const row of list) {
      t.same(Object.keys(row).sort(), ['accessKeyId', 'createdAt', 'name', 'user'], 'no secret in listings');
      t.match(row, { user: 'alice', createdAt: ISO });
    }
    t.same(list.map((r) => r.accessKeyId), [k.accessKeyId, k2.accessKeyId]);
    t.same(await ok(t, ['account-keys', 'delete', k2.accessKeyId as string], 'account-keys delete'), { deleted: true, accessKeyId: k2.accessKeyId });
    await fails(t, ['account-keys', 'delete', k2.accessKeyId as string], 1, 'NoSuchAccessKey', 'delete twice');
    t.equal(((await ok(t, ['account-keys', 'list'], 'list all')) as unknown[]).length, 1);
    await fails(t, ['account-keys', 'create', '--user', 'nobody'], 1, 'NoSuchUser', 'key for unknown user');
  });

  await t.test('bucket access keys', async (t) => {
    const k = (await ok(t, ['access-keys', 'create', '--bucket', 'photos', '--permission', 'read_write', '--name', 'ci'], 'access-keys create')) as Record<string, unknown>;
    t.same(Object.keys(k).sort(), ['accessKeyId', 'bucket', 'endpoint', 'endpointStatus', 'forcePathStyle', 'name', 'permission', 'region', 'secretAccessKey']);
    t.match(k, {
      accessKeyId: /^SE[A-Z2-7]{18}$/,
      secretAccessKey: /^[A-Za-z0-9_-]{40}$/,
      name: 'ci',
      bucket: 'photos',
      permission: 'read_write',
      endpoint: null,
      endpointStatus: 'unknown',
      region: 'eu-west-3',
      forcePathStyle: true,
    });
    bucketKeyId = k.accessKeyId as string;
    secrets.push(k.secretAccessKey as string);
    const r = (await ok(t, ['access-keys', 'create', '--bucket', 'logs', '--permission', 'read'], 'read key')) as Record<string, unknown>;
    secrets.push(r.secretAccessKey as string);

    const all = (await ok(t, ['access-keys', 'list'], 'access-keys list')) as Record<string, unknown>[];
    t.equal(all.length, 2);
    for (const row of all) t.same(Object.keys(row).sort(), ['accessKeyId', 'bucket', 'createdAt', 'name', 'permission'], 'no secret');
    t.same(await ok(t, ['access-keys', 'list', '--bucket', 'logs'], 'list by bucket'), [
      { accessKeyId: r.accessKeyId, name: '', bucket: 'logs', permission: 'read', createdAt: all[1]?.createdAt },
    ]);

    await fails(t, ['access-keys', 'create', '--bucket', 'photos', '--permission', 'write'], 1, 'InvalidPermission', 'bad permission');
    await fails(t, ['access-keys', 'create', '--bucket', 'nope-nope', '--permission', 'read'], 1, 'NoSuchBucket', 'unknown bucket');
    await fails(t, ['access-keys', 'list', '--bucket', 'nope-nope'], 1, 'NoSuchBucket', 'list unknown bucket');
    await fails(t, ['access-keys', 'delete', accountKeyId], 1, 'NoSuchAccessKey', 'an account key is not a bucket key');
    await fails(t, ['account-keys', 'delete', bucketKeyId], 1, 'NoSuchAccessKey', 'a bucket key is not an account key');
    t.same(await ok(t, ['access-keys', 'delete', r.accessKeyId as string], 'access-keys delete'), { deleted: true, accessKeyId: r.accessKeyId });
    await fails(t, ['access-keys', 'delete', r.accessKeyId as string], 1, 'NoSuchAccessKey', 'delete twice');
  });

  await t.test('secrets are stored encrypted', async (t) => {
    t.equal(secrets.length, 5);
    for (const name of readdirSync(dataDir)) {
      const bytes = readFileSync(join(dataDir, name));
      for (const s of secrets) t.equal(bytes.indexOf(s), -1, `${name} does not contain a secret in plaintext`);
    }
  });

  await t.test('delete refuses a non-empty bucket while another connection (the server) holds the db', async (t) => {
    const db = openSqlite(join(dataDir, 'meta.db'));
    t.teardown(() => db.close());
    db.pragma('busy_timeout = 5000');
    const photos = db.prepare('SELECT id FROM buckets WHERE name = ?').get('photos') as { id: string };
    db.prepare(
      `INSERT INTO objects (bucket_id, key, blob_id, size, etag, sha256, last_modified) VALUES (?, 'a.jpg', 'blob', 1, '"e"', 'x', 0)`,
    ).run(photos.id);
    const list = (await ok(t, ['buckets', 'list'], 'counts')) as { name: string; objects: number }[];
    t.equal(list.find((b) => b.name === 'photos')?.objects, 1);
    await fails(t, ['buckets', 'delete', 'photos'], 1, 'BucketNotEmpty', 'non-empty bucket');
    await fails(t, ['users', 'delete', 'alice'], 1, 'UserHasBuckets', 'user with buckets');
    db.prepare('DELETE FROM objects WHERE bucket_id = ?').run(photos.id);
    t.same(await ok(t, ['buckets', 'delete', 'photos'], 'buckets delete'), { deleted: true, name: 'photos' });
    t.same(await ok(t, ['access-keys', 'list'], 'keys of the bucket are gone'), []);
    await fails(t, ['buckets', 'delete', 'photos'], 1, 'NoSuchBucket', 'delete twice');
    t.same(await ok(t, ['buckets', 'delete', 'logs'], 'delete logs'), { deleted: true, name: 'logs' });
    t.same(await ok(t, ['users', 'delete', 'alice'], 'now alice can go'), { deleted: true, name: 'alice' });
    t.same(await ok(t, ['account-keys', 'list'], "alice's account key went with her"), []);
  });

  await t.test('human output is a table and shows the secret once', async (t) => {
    await ok(t, ['users', 'create', 'dave'], 'setup');
    const r = await runS3edge(['users', 'list', ...base]);
    t.equal(r.code, 0);
    t.match(r.stdout, /^ID\s+NAME\s+CREATEDAT\s+HASPASSWORD\s+STOREDBYTES\s+QUOTABYTES\n[0-9a-f]{32}\s+dave\s+\d{4}-\S+\s+false\s+0\n/);
    const k = await runS3edge(['account-keys', 'create', '--user', 'dave', ...base]);
    t.equal(k.code, 0);
    t.match(k.stdout, /secretAccessKey:\s+[A-Za-z0-9_-]{40}/);
    t.match(k.stdout, /shown only now/);
  });

  await t.test('api-keys create --token-only prints the token alone', async (t) => {
    await ok(t, ['users', 'create', 'tess'], 'setup');
    const r = await runS3edge(['api-keys', 'create', '--user', 'tess', '--scopes', 'assets:read', '--token-only', ...base]);
    t.same([r.code, r.stderr], [0, ''], 'exit 0, quiet stderr');
    t.match(r.stdout, /^s3e_[0-9a-f]{32}_[A-Za-z0-9_-]+\n$/, 'one line: the token');
    const listed = (await ok(t, ['api-keys', 'list', '--user', 'tess'], 'api-keys list')) as { id: string }[];
    t.equal(listed.length, 1, 'the key exists');
    t.ok(r.stdout.startsWith(`s3e_${listed[0]?.id ?? ''}_`), 'the token of that key');
  });
});
