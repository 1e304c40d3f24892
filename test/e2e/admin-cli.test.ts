// Spawns the real CLI (`node dist/bin/s3edge.js ...`) against a temporary data directory.
import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/temp-data.js';
import { startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';

const CLI = fileURLToPath(new URL('../../bin/s3edge.js', import.meta.url));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], extraEnv: Record<string, string> = {}, cwd?: string): Promise<Result> {
  // The child sees none of the developer's S3EDGE_* settings.
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('S3EDGE_')));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'], ...(cwd ? { cwd } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** stdout is exactly `{"error":{"code","message"}}` and stderr's first line says the same message. */
function assertErrorJson(t: Test, r: Result, code: string, what: string): void {
  const body = JSON.parse(r.stdout) as { error: { code: string; message: string } };
  t.same(Object.keys(body), ['error'], `${what}: JSON error object`);
  t.same(Object.keys(body.error).sort(), ['code', 'message'], `${what}: code and message`);
  t.equal(body.error.code, code, `${what}: code ${code}`);
  t.equal(r.stderr.split('\n')[0], `s3edge: ${body.error.message}`, `${what}: same message on stderr`);
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** No stack frames, no source paths, no internal error names in what a user sees. */
function assertClean(t: Test, r: Result, what: string): void {
  const all = r.stdout + r.stderr;
  t.notMatch(all, /\n\s+at .+:\d+/, `${what}: no stack trace`);
  t.notMatch(all, /\.(js|ts):\d+/, `${what}: no source locations`);
  t.notMatch(all, /node_modules|dist\/src|SqliteError|TypeError|ReferenceError/, `${what}: no internals`);
}


t.test('admin CLI end to end', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const base = ['--data-dir', dataDir];

  async function ok(t: Test, args: string[], what: string, extra: string[] = []): Promise<unknown> {
    const r = await run([...args, ...base, ...extra, '--json']);
    t.equal(r.code, 0, `${what}: exit 0 (stderr: ${r.stderr.trim()})`);
    t.equal(r.stderr, '', `${what}: quiet stderr`);
    return JSON.parse(r.stdout) as unknown;
  }

  async function fails(t: Test, args: string[], code: number, errorCode: string, what: string): Promise<Result> {
    const r = await run([...args, ...base, '--json']);
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
    const first = await run(['users', 'create', 'alice', ...base, '--json']);
    t.equal(first.code, 0, 'users create in a new data directory');
    t.equal(first.stderr, `s3edge: created a new data directory at ${dataDir} (no server has used it yet)\n`, 'says it created one');
    const alice = JSON.parse(first.stdout) as Record<string, unknown>;
    t.same(Object.keys(alice).sort(), ['createdAt', 'hasPassword', 'id', 'name']);
    t.match(alice, { id: /^[0-9a-f]{32}$/, name: 'alice', createdAt: ISO, hasPassword: false });
    await ok(t, ['users', 'create', 'bob'], 'users create bob');
    const list = (await ok(t, ['users', 'list'], 'users list')) as Record<string, unknown>[];
    t.same(list.map((u) => u.name), ['alice', 'bob']);
    for (const u of list) t.same(Object.keys(u).sort(), ['createdAt', 'hasPassword', 'id', 'name']);
    t.same(list[0], alice);

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
      { name: 'logs', owner: 'alice', region: 'us-east-1', createdAt: list[0]?.createdAt, objects: 0, public: false },
      { name: 'photos', owner: 'alice', region: 'eu-west-3', createdAt: b.createdAt, objects: 0, public: false },
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
    const human = await run(['buckets', 'public', 'photos', ...base]);
    t.equal(human.code, 0, 'human output');
    t.match(human.stdout, /^name:\s+photos\npublic:\s+true\n$/, 'human output: name and flag');
    await ok(t, ['buckets', 'private', 'photos'], 'photos private again');
    const usage = await run(['buckets', 'public', ...base]);
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
    const human = await run(['account-keys', 'create', '--user', 'alice', ...base]);
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
    const db = new Database(join(dataDir, 'meta.db'));
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
    const r = await run(['users', 'list', ...base]);
    t.equal(r.code, 0);
    t.match(r.stdout, /^ID\s+NAME\s+CREATEDAT\s+HASPASSWORD\n[0-9a-f]{32}\s+dave\s+\d{4}-\S+\s+false\n/);
    const k = await run(['account-keys', 'create', '--user', 'dave', ...base]);
    t.equal(k.code, 0);
    t.match(k.stdout, /secretAccessKey:\s+[A-Za-z0-9_-]{40}/);
    t.match(k.stdout, /shown only now/);
  });

  await t.test('api-keys create --token-only prints the token alone', async (t) => {
    await ok(t, ['users', 'create', 'tess'], 'setup');
    const r = await run(['api-keys', 'create', '--user', 'tess', '--scopes', 'assets:read', '--token-only', ...base]);
    t.same([r.code, r.stderr], [0, ''], 'exit 0, quiet stderr');
    t.match(r.stdout, /^s3e_[0-9a-f]{32}_[A-Za-z0-9_-]+\n$/, 'one line: the token');
    const listed = (await ok(t, ['api-keys', 'list', '--user', 'tess'], 'api-keys list')) as { id: string }[];
    t.equal(listed.length, 1, 'the key exists');
    t.ok(r.stdout.startsWith(`s3e_${listed[0]?.id ?? ''}_`), 'the token of that key');
  });
});

t.test('usage errors exit 2 with a usage text and no stack', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const cases: [string[], RegExp][] = [
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['users'], /missing users action/],
    [['users', 'rename', 'x'], /unknown command 'users rename'/],
    [['users', 'create'], /requires NAME/],
    [['users', 'create', 'a', 'b'], /unexpected argument 'b'/],
    [['users', 'list', '--bogus'], /Unknown option '--bogus'/],
    [['users', 'list', '--bucket', 'x'], /does not take --bucket/],
    [['buckets', 'create', 'abc'], /requires --user/],
    [['access-keys', 'create', '--bucket', 'abc'], /requires --permission/],
    [['access-keys', 'create', '--permission', 'read'], /requires --bucket/],
    [['account-keys', 'delete'], /requires ACCESS_KEY_ID/],
    [['users', 'list', '--json=yes'], /does not take an argument/],
    [['users', 'list', '--token-only'], /'users list' does not take --token-only/],
    [['api-keys', 'create', '--user', 'a', '--scopes', 'assets:read', '--token-only', '--json'], /--token-only prints the token alone, --json the whole key: give one of them/],
  ];
  const results = await Promise.all(cases.map(([args]) => run([...args, '--data-dir', dataDir])));
  for (const [i, [args, message]] of cases.entries()) {
    const r = results[i] as Result;
    const what = args.join(' ');
    t.equal(r.code, 2, `${what}: exit 2`);
    t.match(r.stderr, message, `${what}: says why`);
    // A command's own usage, or (no known command) where the list is.
    t.match(r.stderr, /usage:\n\s+s3edge |\nRun 's3edge --help' for the list of commands\.\n$/, `${what}: prints usage`);
    assertClean(t, r, what);
  }
  const j = await run(['users', 'create', '--json', '--data-dir', dataDir]);
  t.equal(j.code, 2);
  assertErrorJson(t, j, 'UsageError', 'usage error with --json');
  t.throws(() => statSync(dataDir), { code: 'ENOENT' }, 'usage errors touch nothing');
});

t.test('config errors exit 2 with one line', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const r = await run(['users', 'list', '--data-dir', dataDir, '--port', '99999']);
  t.equal(r.code, 2);
  t.equal(r.stderr.trim().split('\n').length, 1);
  t.match(r.stderr, /port/);
  const m = await run(['users', 'list', '--data-dir', dataDir, '--master-key', 'short']);
  t.equal(m.code, 2);
  t.equal(m.stderr, 's3edge: config: masterKey must be 32 bytes as hex or base64\n');
  assertClean(t, m, 'bad master key');
  t.equal((await run(['users', 'create', 'zed', '--json'], { S3EDGE_DATA_DIR: dataDir })).code, 0, 'S3EDGE_DATA_DIR works too');
  const env = await run(['users', 'list', '--json'], { S3EDGE_DATA_DIR: dataDir });
  t.equal(env.code, 0);
  t.same((JSON.parse(env.stdout) as { name: string }[]).map((u) => u.name), ['zed'], 'the same directory');
});

t.test('commands that need existing data never create a data directory', async (t) => {
  const cwd = tempDir(t);
  const dataDir = join(cwd, 'data');
  const line = `s3edge: no s3edge data directory at ${dataDir} (no meta.db there): point at the server's with --data-dir DIR or S3EDGE_DATA_DIR, or start the server first (s3edge serve)\n`;
  const commands = [
    ['access-keys', 'create', '--bucket', 'photos', '--permission', 'read'],
    ['account-keys', 'create', '--user', 'alice'],
    ['buckets', 'create', 'photos', '--user', 'alice'],
    ['buckets', 'list'],
    ['users', 'list'],
    ['users', 'delete', 'alice'],
    ['api-keys', 'create', '--user', 'alice', '--scopes', 'assets:read'],
    ['credits', 'grant', '--user', 'alice', '--amount', '1'],
    ['scrub', 'run'],
    ['scrub', 'list'],
  ];
  for (const args of commands) {
    const r = await run(args, {}, cwd);
    t.same([r.code, r.stdout, r.stderr], [2, '', line], `${args.join(' ')} in a folder without ./data: one line naming it`);
    const j = await run([...args, '--json'], { S3EDGE_DATA_DIR: dataDir });
    t.equal(j.code, 2, `${args.join(' ')} --json: exit 2`);
    assertErrorJson(t, j, 'NoDataDir', `${args.join(' ')} --json`);
  }
  t.same(readdirSync(cwd), [], 'no ./data, no master.key, no meta.db');
  // A data directory the server has not started in yet is fine once users create made its meta.db.
  const made = await run(['users', 'create', 'alice'], {}, cwd);
  t.equal(made.code, 0, 'users create may start one');
  t.equal(made.stderr, `s3edge: created a new data directory at ${dataDir} (no server has used it yet)\n`, 'and says where');
  const listed = await run(['users', 'list', '--json'], {}, cwd);
  t.same([listed.code, listed.stderr], [0, ''], 'then the others work, quietly');
  t.same((JSON.parse(listed.stdout) as { name: string }[]).map((u) => u.name), ['alice']);
});

t.test('help exits 0', async (t) => {
  for (const args of [['users', '--help'], ['access-keys', 'create', '--help']]) {
    const r = await run(args);
    t.equal(r.code, 0, args.join(' '));
    t.match(r.stdout, /usage:/);
  }
});

const GROUPS = ['users', 'account-keys', 'access-keys', 'api-keys', 'buckets', 'spaces', 'credits'];

t.test('s3edge, s3edge --help and s3edge help: the whole command list, grouped; nothing started or created', async (t) => {
  const cwd = tempDir(t);
  const outputs: string[] = [];
  for (const args of [[], ['--help'], ['-h'], ['help']]) {
    const r = await run(args, {}, cwd);
    t.same([r.code, r.stderr], [0, ''], `s3edge ${args.join(' ')}: exit 0, quiet stderr`);
    outputs.push(r.stdout);
  }
  t.equal(new Set(outputs).size, 1, 'the same list every way');
  const list = outputs[0] ?? '';
  for (const section of ['Server:', 'Accounts and keys:', 'Buckets:', 'Spaces and credits:']) t.match(list, `\n${section}\n`, section);
  t.match(list, /^  serve /m, 'serve');
  for (const group of GROUPS) t.match(list, new RegExp(`^  ${group} [a-z|]+ `, 'm'), `${group} with its actions`);
  t.match(list, /^  buckets create\|list\|public\|private\|delete /m);
  t.same(readdirSync(cwd), [], 'no ./data: help starts no server');
});

t.test('help and --version with --json: the same content as JSON', async (t) => {
  const cwd = tempDir(t);
  const text = await run(['--help'], {}, cwd);
  const outputs: string[] = [];
  for (const args of [['help', '--json'], ['--help', '--json'], ['--json', '--help'], ['-h', '--json']]) {
    const r = await run(args, {}, cwd);
    t.same([r.code, r.stderr], [0, ''], `s3edge ${args.join(' ')}: exit 0, quiet stderr`);
    outputs.push(r.stdout);
  }
  t.equal(new Set(outputs).size, 1, 'the same JSON every way');
  const help = JSON.parse(outputs[0] ?? '') as { version: string; usage: string; commands: { section: string; command: string; summary: string }[] };
  t.match(help.version, /^\d+\.\d+\.\d+$/);
  t.ok(help.commands.length > GROUPS.length, 'every command');
  for (const c of help.commands) t.ok(text.stdout.includes(`  ${c.command}`) && text.stdout.includes(c.summary), `${c.command}: as in the text list`);
  t.match(help.commands, [{ section: 'Server', command: 'serve' }]);
  const version = await run(['--version', '--json'], {}, cwd);
  t.same([version.code, JSON.parse(version.stdout)], [0, { version: help.version }], '--version --json');
  t.same(readdirSync(cwd), [], 'nothing created');
});

t.test('<command> --help explains it with an example; help COMMAND is the same', async (t) => {
  for (const group of GROUPS) {
    const r = await run([group, '--help']);
    t.equal(r.code, 0, `${group} --help`);
    t.match(r.stdout, /example: s3edge /, `${group}: an example`);
    t.same((await run(['help', group])).stdout, r.stdout, `help ${group}`);
  }
  const one = await run(['access-keys', 'create', '--help']);
  t.match(one.stdout, /s3edge access-keys create --bucket NAME --permission read\|read_write/);
  t.match(one.stdout, /example: s3edge access-keys create --bucket photos --permission read_write/);
  t.notMatch(one.stdout, /access-keys list/, 'one command only');
  const serve = await run(['serve', '--help']);
  t.equal(serve.code, 0);
  t.match(serve.stdout, /usage: s3edge serve \[options\]/);
  t.match(serve.stdout, /--data-dir DIR/);
  t.match(serve.stdout, /example: s3edge serve /);
  t.same((await run(['help', 'serve'])).stdout, serve.stdout, 'help serve');
  const version = await run(['--version']);
  t.match(version.stdout, /^s3edge \d+\.\d+\.\d+\n$/);
});

t.test('unknown commands and options suggest the closest one', async (t) => {
  const cases: [string[], RegExp][] = [
    [['sevre'], /unknown command 'sevre'\. Did you mean 'serve'\?/],
    [['acess-keys', 'list'], /unknown command 'acess-keys'\. Did you mean 'access-keys'\?/],
    [['buckets', 'craete', 'x'], /unknown command 'buckets craete'\. Did you mean 'buckets create'\?/],
    [['access-keys', 'create', '--bukcet', 'b', '--permission', 'read'], /Unknown option '--bukcet'\. Did you mean '--bucket'\?/],
    [['users', 'list', '--data-dri', 'x'], /Unknown option '--data-dri'\. Did you mean '--data-dir'\?/],
    [['serve', '--prot', '9000'], /unknown option '--prot'\. Did you mean '--port'\?/],
    [['--port', '9000'], /'--port' is an option, not a command\. To start the server with it: s3edge serve --port 9000/],
    // Mistyped top-level options get the top-level option, never a serve command that fails in turn.
    [['--hepl'], /^s3edge: unknown option '--hepl'\. Did you mean '--help'\?\n/],
    [['--verison'], /^s3edge: unknown option '--verison'\. Did you mean '--version'\?\n/],
    [['--prot', '9000'], /^s3edge: unknown option '--prot'\. Did you mean 's3edge serve --port 9000'\?\n/],
    [['--json', '--data-dri=x'], /^s3edge: unknown option '--data-dri'\. Did you mean 's3edge serve --json --data-dir=x'\?\n/],
    [['--frobnicate'], /^s3edge: unknown option '--frobnicate'\.\n/],
    [['--data-dir', 'x', 'users', 'list'], /^s3edge: options go after the command: s3edge users list --data-dir x\n/],
  ];
  const suggestions: string[] = [];
  for (const [args, message] of cases) {
    const r = await run(args);
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`);
    t.match(r.stderr, message, `${args.join(' ')}: suggests`);
    assertClean(t, r, args.join(' '));
    suggestions.push(r.stderr);
  }
  // Every serve command line this test suggests is one serve accepts: with --help it answers 0.
  let checked = 0;
  for (const stderr of suggestions) {
    const suggested = /(?:start the server with it: |Did you mean ')(s3edge serve [^'\n]*)/.exec(stderr)?.[1];
    if (suggested === undefined) continue;
    const check = await run([...suggested.split(' ').slice(1), '--help']);
    t.equal(check.code, 0, `'${suggested}' is a valid serve command line`);
    checked++;
  }
  t.equal(checked, 3, 'three serve command lines suggested, and checked');
  const far = await run(['frobnicate']);
  t.notMatch(far.stderr, /Did you mean/, 'nothing close: no suggestion');
});

t.test('a value that starts with a dash is the option\'s value, rejected by validation with the key named', async (t) => {
  const cwd = tempDir(t);
  const cases: [string[], string][] = [
    [['serve', '--max-object-size', '-5'], 's3edge: config: maxObjectSize must be >= 1 (got -5)\n'],
    [['serve', '--port', '-1'], 's3edge: config: port must be >= 0 (got -1)\n'],
    [['serve', '--max-object-size', '-5MiB'], 's3edge: config: maxObjectSize must be a size like 256MiB, 10GB or a number of bytes (got "-5MiB")\n'],
    [['serve', '--cdn-country-header', 'bad header'], 's3edge: config: cdn.countryHeader must be a header name: letters (any case), digits and hyphens, at most 64, or empty for none (got "bad header")\n'],
    [['users', 'list', '--port', '-1'], 's3edge: config: port must be >= 0 (got -1)\n'],
  ];
  for (const [args, stderr] of cases) {
    const r = await run(args, {}, cwd);
    t.same([r.code, r.stderr], [2, stderr], args.join(' '));
  }
  // A header name in any case is accepted: the server starts with it.
  const server = await startServer({ env: { S3EDGE_CDN_COUNTRY_HEADER: 'CF-IPCountry' } });
  t.teardown(() => server.stop());
  t.ok(server.url, 'CF-IPCountry starts the server');
  // An option after one that needs a value is still an option: the value is missing.
  const forgot = await run(['serve', '--data-dir', '--json'], {}, cwd);
  t.equal(forgot.code, 2, 'serve --data-dir --json: exit 2');
  t.match(forgot.stderr, /--data-dir/, 'names the option that lacks its value');
  t.same(readdirSync(cwd), [], 'nothing created');
});

t.test('admin commands print the endpoint the server really serves', async (t) => {
  const server = await startServer();
  t.teardown(() => server.stop());
  await server.admin(['users', 'create', 'erin']);
  await server.admin(['buckets', 'create', 'erin-bucket', '--user', 'erin']);
  t.not(new URL(server.url).port, '9000', 'a port other than the default');
  const key = await server.admin(['access-keys', 'create', '--bucket', 'erin-bucket', '--permission', 'read']);
  t.equal(key['endpoint'], server.url, 'access-keys create: the bound URL, not http://127.0.0.1:9000');
  t.equal(key['endpointStatus'], 'running', 'and the server there runs');
  const account = await server.admin(['account-keys', 'create', '--user', 'erin']);
  t.equal(account['endpoint'], server.url, 'account-keys create too');
  t.equal(account['endpointStatus'], 'running');
  const viaPublic = await server.admin(['access-keys', 'create', '--bucket', 'erin-bucket', '--permission', 'read', '--public-url', 'https://s3.example.net']);
  t.equal(viaPublic['endpoint'], 'https://s3.example.net', 'a configured publicUrl wins');
  t.equal(viaPublic['endpointStatus'], 'configured');
});

/** The record a server wrote in its data directory's settings table. */
function serverRecord(dataDir: string): Record<string, unknown> {
  const db = new Database(join(dataDir, 'meta.db'), { readonly: true });
  try {
    const row = db.prepare("SELECT value FROM settings WHERE name = 'server.endpoints'").get() as { value: string };
    return JSON.parse(row.value) as Record<string, unknown>;
  } finally {
    db.close();
  }
}

t.test('after the server stopped, admin commands still print its endpoint and say it is not running', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const base = ['--data-dir', dataDir];
  const server = await startServer({ dataDir });
  t.teardown(() => server.stop());
  await server.admin(['users', 'create', 'fay']);
  await server.admin(['buckets', 'create', 'fay-bucket', '--user', 'fay']);
  t.match(serverRecord(dataDir), { s3: server.url, pid: Number, host: String, startedAt: Number, stoppedAt: null }, 'who recorded it');
  await server.stop();
  t.match(serverRecord(dataDir), { s3: server.url, stoppedAt: Number }, 'a clean stop is recorded');

  const key = await run(['access-keys', 'create', '--bucket', 'fay-bucket', '--permission', 'read', ...base, '--json']);
  t.equal(key.code, 0, key.stderr);
  t.match(JSON.parse(key.stdout), { endpoint: server.url, endpointStatus: 'not-running' }, 'the last endpoint, marked not running');
  const human = await run(['account-keys', 'create', '--user', 'fay', ...base]);
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, `\nendpoint:         ${server.url} (from when the server last ran on this data directory: it is not running now)\n`, 'the human output says so');
  t.notMatch(human.stdout, /endpointStatus/, 'in words, not as a field');

  // A server that died without stopping (SIGKILL): its pid is gone, so it is not running either.
  const again = await startServer({ dataDir });
  t.teardown(() => again.stop());
  const running = await run(['access-keys', 'create', '--bucket', 'fay-bucket', '--permission', 'read', ...base, '--json']);
  t.match(JSON.parse(running.stdout), { endpoint: again.url, endpointStatus: 'running' }, 'restarted: running again');
  const pid = serverRecord(dataDir)['pid'] as number;
  process.kill(pid, 'SIGKILL');
  await new Promise<void>((resolve) => {
    const poll = (): void => {
      try {
        process.kill(pid, 0);
        setTimeout(poll, 20);
      } catch {
        resolve();
      }
    };
    poll();
  });
  t.match(serverRecord(dataDir), { stoppedAt: null }, 'a killed server records nothing');
  const afterKill = await run(['access-keys', 'create', '--bucket', 'fay-bucket', '--permission', 'read', ...base, '--json']);
  t.match(JSON.parse(afterKill.stdout), { endpoint: again.url, endpointStatus: 'not-running' }, 'killed: not running');
});

t.test("admin commands use the server's region unless given one", async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const base = ['--data-dir', dataDir, '--json'];
  const server = await startServer({ dataDir, env: { S3EDGE_REGION: 'eu-west-1' } });
  t.teardown(() => server.stop());
  // The CLI runs without the server's S3EDGE_REGION, as a second shell would.
  const admin = async (args: string[]): Promise<Record<string, unknown>> => {
    const r = await run([...args, ...base]);
    t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  await admin(['users', 'create', 'gus']);
  t.match(await admin(['account-keys', 'create', '--user', 'gus']), { region: 'eu-west-1' }, 'account-keys create: the server\'s region');
  t.match(await admin(['buckets', 'create', 'gus-bucket', '--user', 'gus']), { region: 'eu-west-1' }, 'buckets create: in the server\'s region');
  const key = await admin(['access-keys', 'create', '--bucket', 'gus-bucket', '--permission', 'read_write']);
  t.match(key, { region: 'eu-west-1', endpoint: server.url });
  // The printed settings work: a PUT signed for the printed region, and the bucket reports that region.
  const s3 = new RawS3({ url: key['endpoint'] as string }, { accessKeyId: key['accessKeyId'] as string, secretAccessKey: key['secretAccessKey'] as string });
  const put = await s3.send({ method: 'PUT', bucket: 'gus-bucket', key: 'a.txt', body: Buffer.from('hi'), region: key['region'] as string });
  t.equal(put.status, 200, 'PUT signed for the printed region');
  const head = await s3.send({ method: 'HEAD', bucket: 'gus-bucket', region: 'eu-west-1' });
  t.equal(head.headers['x-amz-bucket-region'], 'eu-west-1', 'HeadBucket: x-amz-bucket-region');
  // Given explicitly (flag or environment), the CLI's region wins.
  t.match(await admin(['buckets', 'create', 'gus-flag', '--user', 'gus', '--region', 'eu-west-3']), { region: 'eu-west-3' }, '--region wins');
  const env = await run(['account-keys', 'create', '--user', 'gus', ...base], { S3EDGE_REGION: 'ap-south-1' });
  t.match(JSON.parse(env.stdout), { region: 'ap-south-1' }, 'S3EDGE_REGION wins');
});
