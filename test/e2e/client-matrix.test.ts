// Bucket-scoped keys in every documented client (docs/CLIENTS.md), each with its default settings:
// aws cli, boto3, rclone, s3cmd and restic, configured as the doc says and nothing more (no
// --s3-no-check-bucket, no addressing or retry flags). With a `read_write` key for one bucket every
// client writes, lists, reads back the same bytes and deletes; with a `read` key for the same bucket
// listing and reading work and every write fails with AccessDenied, leaving nothing behind.
// The five clients run side by side; each works under its own prefix.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBucketKey, startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { describeRun, hashTree, run, sha256File, writeTree, type RunResult } from '../helpers/conformance.js';
import type { Credentials } from '../helpers/signer.js';

const BOTO3_SCRIPT = fileURLToPath(new URL('../../../test/python/client_matrix_boto3.py', import.meta.url));
const BUCKET = 'matrix';
const ACCESS_DENIED = /AccessDenied|Access Denied/;

const server = await startServer();
t.teardown(() => server.stop());
await server.admin(['users', 'create', 'mallory']);
await server.admin(['buckets', 'create', BUCKET, '--user', 'mallory']);
await server.admin(['buckets', 'create', 'other-bucket', '--user', 'mallory']);
const keys: Record<'read_write' | 'read', Credentials> = {
  read_write: await createBucketKey(server, BUCKET, 'read_write'),
  read: await createBucketKey(server, BUCKET, 'read'),
};
const root = new RawS3({ url: server.url }, server.rootKey);
const endpoint = server.url;
const hostPort = new URL(endpoint).host;

const work = join(server.tmpRoot, 'matrix');
const file = join(work, 'file.bin');
await mkdir(work, { recursive: true });
await writeFile(file, randomBytes(300 * 1024));
const fileSha = await sha256File(file);

/** The machine's environment without any client's own settings, with HOME in this run's temp dir. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(AWS_|BOTO|RCLONE_|RESTIC_|S3CMD)/.test(k)) env[k] = v;
  }
  return { ...env, HOME: join(work, 'home'), XDG_CONFIG_HOME: join(work, 'home'), XDG_CACHE_HOME: join(work, 'home', 'cache'), ...extra };
}

function awsEnv(key: Credentials, configFile: string): NodeJS.ProcessEnv {
  return cleanEnv({
    AWS_ACCESS_KEY_ID: key.accessKeyId,
    AWS_SECRET_ACCESS_KEY: key.secretAccessKey,
    AWS_CONFIG_FILE: configFile,
    AWS_SHARED_CREDENTIALS_FILE: join(work, 'no-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
  });
}

async function objectKeys(prefix: string): Promise<string[]> {
  return (await root.listAllKeys(BUCKET, { prefix })).sort();
}

function ok(t: Test, r: RunResult, what: string): void {
  t.equal(r.code, 0, describeRun(what, r));
}

function denied(t: Test, r: RunResult, what: string): void {
  t.not(r.code, 0, `${what}: refused`);
  t.match(r.stdout + r.stderr, ACCESS_DENIED, `${what}: the client names AccessDenied`);
}

// ---------------------------------------------------------------------------------------------- clients

async function awsCli(t: Test): Promise<void> {
  // docs/CLIENTS.md: a profile with the region; the endpoint on the command line.
  const configFile = join(work, 'aws-config');
  await writeFile(configFile, '[default]\nregion = us-east-1\n');
  const aws = (key: Credentials, args: string[]): Promise<RunResult> => run('aws', ['--endpoint-url', endpoint, ...args], { env: awsEnv(key, configFile) });
  const rw = keys.read_write;
  ok(t, await aws(rw, ['s3', 'cp', file, `s3://${BUCKET}/awscli/file.bin`]), 'aws s3 cp (upload)');
  ok(t, await aws(rw, ['s3', 'cp', file, `s3://${BUCKET}/awscli/kept.bin`]), 'aws s3 cp (second upload)');
  const ls = await aws(rw, ['s3', 'ls', `s3://${BUCKET}/awscli/`]);
  ok(t, ls, 'aws s3 ls');
  t.match(ls.stdout, /file\.bin/);
  ok(t, await aws(rw, ['s3', 'cp', `s3://${BUCKET}/awscli/file.bin`, join(work, 'awscli-rw.bin')]), 'aws s3 cp (download)');
  t.equal(await sha256File(join(work, 'awscli-rw.bin')), fileSha, 'aws cli read_write: the same bytes');
  ok(t, await aws(rw, ['s3', 'rm', `s3://${BUCKET}/awscli/file.bin`]), 'aws s3 rm');
  t.same(await objectKeys('awscli/'), ['awscli/kept.bin']);

  const ro = keys.read;
  const lsRo = await aws(ro, ['s3', 'ls', `s3://${BUCKET}/awscli/`]);
  ok(t, lsRo, 'aws s3 ls (read key)');
  t.match(lsRo.stdout, /kept\.bin/);
  ok(t, await aws(ro, ['s3', 'cp', `s3://${BUCKET}/awscli/kept.bin`, join(work, 'awscli-ro.bin')]), 'aws s3 cp download (read key)');
  t.equal(await sha256File(join(work, 'awscli-ro.bin')), fileSha, 'aws cli read: the same bytes');
  denied(t, await aws(ro, ['s3', 'cp', file, `s3://${BUCKET}/awscli/denied.bin`]), 'aws s3 cp upload (read key)');
  denied(t, await aws(ro, ['s3', 'rm', `s3://${BUCKET}/awscli/kept.bin`]), 'aws s3 rm (read key)');
  denied(t, await aws(ro, ['s3', 'ls', 's3://other-bucket/']), 'aws s3 ls of another bucket (read key)');
  t.same(await objectKeys('awscli/'), ['awscli/kept.bin'], 'aws cli: the read key changed nothing');
}

async function boto3(t: Test): Promise<void> {
  const configFile = join(work, 'boto3-config');
  await writeFile(configFile, '[default]\nregion = us-east-1\n');
  const py = async (key: Credentials, mode: string): Promise<Record<string, { ok: boolean; value?: unknown; code?: string }>> => {
    const r = await run('python3', [BOTO3_SCRIPT, '--endpoint', endpoint, '--bucket', BUCKET, '--prefix', 'boto3/', '--mode', mode, '--file', file], {
      env: awsEnv(key, configFile),
    });
    t.equal(r.code, 0, describeRun(`boto3 ${mode}`, r));
    return JSON.parse(r.stdout) as Record<string, { ok: boolean; value?: unknown; code?: string }>;
  };
  const rw = await py(keys.read_write, 'read_write');
  t.match(rw, {
    put: { ok: true }, uploadFile: { ok: true },
    listAfterPut: { ok: true, value: ['boto3/file.bin', 'boto3/kept.bin'] },
    getFile: { ok: true, value: fileSha },
    delete: { ok: true, value: 204 },
    listAfterDelete: { ok: true, value: ['boto3/kept.bin'] },
  }, 'boto3 read_write: put, upload_file, list, get, delete');
  const ro = await py(keys.read, 'read');
  t.match(ro, {
    list: { ok: true, value: ['boto3/kept.bin'] },
    get: { ok: true },
    put: { ok: false, code: 'AccessDenied' },
    delete: { ok: false, code: 'AccessDenied' },
    listAfter: { ok: true, value: ['boto3/kept.bin'] },
  }, 'boto3 read: list and get work, put and delete are AccessDenied');
}

async function rclone(t: Test): Promise<void> {
  // docs/CLIENTS.md: a remote of type s3, provider Other, the endpoint and the key; nothing else.
  const configFile = join(work, 'rclone.conf');
  const remote = (name: string, key: Credentials): string =>
    `[${name}]\ntype = s3\nprovider = Other\nendpoint = ${endpoint}\naccess_key_id = ${key.accessKeyId}\nsecret_access_key = ${key.secretAccessKey}\n`;
  await writeFile(configFile, remote('rw', keys.read_write) + remote('ro', keys.read));
  const rc = (args: string[]): Promise<RunResult> => run('rclone', ['--config', configFile, ...args], { env: cleanEnv({}) });
  ok(t, await rc(['copyto', file, `rw:${BUCKET}/rclone/file.bin`]), 'rclone copyto (read_write)');
  ok(t, await rc(['copyto', file, `rw:${BUCKET}/rclone/kept.bin`]), 'rclone copyto again (read_write)');
  const ls = await rc(['lsf', `rw:${BUCKET}/rclone/`]);
  t.same(ls.stdout.trim().split('\n').sort(), ['file.bin', 'kept.bin'], 'rclone lsf');
  ok(t, await rc(['copyto', `rw:${BUCKET}/rclone/file.bin`, join(work, 'rclone-rw.bin')]), 'rclone download (read_write)');
  t.equal(await sha256File(join(work, 'rclone-rw.bin')), fileSha, 'rclone read_write: the same bytes');
  ok(t, await rc(['deletefile', `rw:${BUCKET}/rclone/file.bin`]), 'rclone deletefile (read_write)');
  t.same(await objectKeys('rclone/'), ['rclone/kept.bin']);

  t.same((await rc(['lsf', `ro:${BUCKET}/rclone/`])).stdout.trim(), 'kept.bin', 'rclone lsf (read key)');
  ok(t, await rc(['copyto', `ro:${BUCKET}/rclone/kept.bin`, join(work, 'rclone-ro.bin')]), 'rclone download (read key)');
  t.equal(await sha256File(join(work, 'rclone-ro.bin')), fileSha, 'rclone read: the same bytes');
  denied(t, await rc(['copyto', file, `ro:${BUCKET}/rclone/denied.bin`, '--retries', '1', '--low-level-retries', '1']), 'rclone upload (read key)');
  denied(t, await rc(['deletefile', `ro:${BUCKET}/rclone/kept.bin`, '--retries', '1', '--low-level-retries', '1']), 'rclone deletefile (read key)');
  t.same(await objectKeys('rclone/'), ['rclone/kept.bin'], 'rclone: the read key changed nothing');
}

async function s3cmd(t: Test): Promise<void> {
  // docs/CLIENTS.md: host_base and host_bucket both the endpoint (path style), no HTTPS.
  const cfg = async (name: string, key: Credentials): Promise<string> => {
    const path = join(work, `s3cfg-${name}`);
    await writeFile(path, `[default]\naccess_key = ${key.accessKeyId}\nsecret_key = ${key.secretAccessKey}\nhost_base = ${hostPort}\nhost_bucket = ${hostPort}\nuse_https = False\n`);
    return path;
  };
  const rwCfg = await cfg('rw', keys.read_write);
  const roCfg = await cfg('ro', keys.read);
  const s3 = (config: string, args: string[]): Promise<RunResult> => run('s3cmd', ['-c', config, ...args], { env: cleanEnv({}) });
  ok(t, await s3(rwCfg, ['put', file, `s3://${BUCKET}/s3cmd/file.bin`]), 's3cmd put (read_write)');
  ok(t, await s3(rwCfg, ['put', file, `s3://${BUCKET}/s3cmd/kept.bin`]), 's3cmd put again (read_write)');
  t.match((await s3(rwCfg, ['ls', `s3://${BUCKET}/s3cmd/`])).stdout, /s3cmd\/file\.bin/, 's3cmd ls');
  ok(t, await s3(rwCfg, ['get', '--force', `s3://${BUCKET}/s3cmd/file.bin`, join(work, 's3cmd-rw.bin')]), 's3cmd get (read_write)');
  t.equal(await sha256File(join(work, 's3cmd-rw.bin')), fileSha, 's3cmd read_write: the same bytes');
  ok(t, await s3(rwCfg, ['del', `s3://${BUCKET}/s3cmd/file.bin`]), 's3cmd del (read_write)');
  t.same(await objectKeys('s3cmd/'), ['s3cmd/kept.bin']);

  t.match((await s3(roCfg, ['ls', `s3://${BUCKET}/s3cmd/`])).stdout, /s3cmd\/kept\.bin/, 's3cmd ls (read key)');
  ok(t, await s3(roCfg, ['get', '--force', `s3://${BUCKET}/s3cmd/kept.bin`, join(work, 's3cmd-ro.bin')]), 's3cmd get (read key)');
  t.equal(await sha256File(join(work, 's3cmd-ro.bin')), fileSha, 's3cmd read: the same bytes');
  denied(t, await s3(roCfg, ['put', file, `s3://${BUCKET}/s3cmd/denied.bin`]), 's3cmd put (read key)');
  denied(t, await s3(roCfg, ['del', `s3://${BUCKET}/s3cmd/kept.bin`]), 's3cmd del (read key)');
  t.same(await objectKeys('s3cmd/'), ['s3cmd/kept.bin'], 's3cmd: the read key changed nothing');
}

async function restic(t: Test): Promise<void> {
  // docs/CLIENTS.md: RESTIC_REPOSITORY=s3:<endpoint>/<bucket>/<path> and the key in AWS_* variables.
  const source = join(work, 'restic-source');
  await writeTree(source, { 'notes.txt': Buffer.from('restic through a bucket key\n'), 'data/blob.bin': randomBytes(200 * 1024) });
  const sourceHashes = await hashTree(source);
  const env = (key: Credentials, repo: string): NodeJS.ProcessEnv =>
    cleanEnv({
      AWS_ACCESS_KEY_ID: key.accessKeyId,
      AWS_SECRET_ACCESS_KEY: key.secretAccessKey,
      RESTIC_REPOSITORY: `s3:${endpoint}/${BUCKET}/${repo}`,
      RESTIC_PASSWORD: 'matrix password',
      RESTIC_CACHE_DIR: join(work, 'restic-cache'),
    });
  const rw = env(keys.read_write, 'restic');
  ok(t, await run('restic', ['init'], { env: rw }), 'restic init (read_write)');
  ok(t, await run('restic', ['backup', '--host', 'matrix', '.'], { env: rw, cwd: source }), 'restic backup (read_write)');
  const snaps = await run('restic', ['snapshots', '--json'], { env: rw });
  ok(t, snaps, 'restic snapshots (read_write)');
  t.equal((JSON.parse(snaps.stdout) as unknown[]).length, 1, 'one snapshot');
  ok(t, await run('restic', ['restore', 'latest', '--target', join(work, 'restic-rw')], { env: rw }), 'restic restore (read_write)');
  t.same(await hashTree(join(work, 'restic-rw')), sourceHashes, 'restic read_write: the same files back');

  // restic writes a lock file for most commands; a read key reads with --no-lock (docs/CLIENTS.md).
  const ro = env(keys.read, 'restic');
  const roSnaps = await run('restic', ['--no-lock', 'snapshots', '--json'], { env: ro });
  ok(t, roSnaps, 'restic --no-lock snapshots (read key)');
  t.equal((JSON.parse(roSnaps.stdout) as unknown[]).length, 1, 'the read key sees the snapshot');
  ok(t, await run('restic', ['--no-lock', 'restore', 'latest', '--target', join(work, 'restic-ro')], { env: ro }), 'restic restore (read key)');
  t.same(await hashTree(join(work, 'restic-ro')), sourceHashes, 'restic read: the same files back');
  // A write: init of a new repository fails at once (backup would retry its lock for ~45 s first).
  denied(t, await run('restic', ['init'], { env: env(keys.read, 'restic-denied') }), 'restic init (read key)');
  t.same(await objectKeys('restic-denied/'), [], 'restic: the read key created nothing');
}

// ---------------------------------------------------------------------------------------------- run

t.test('every client: read_write writes and reads, read reads and is refused writes', async (t) => {
  const clients: [string, (t: Test) => Promise<void>][] = [['aws cli', awsCli], ['boto3', boto3], ['rclone', rclone], ['s3cmd', s3cmd], ['restic', restic]];
  // Side by side: the clients are independent (own prefixes, own config files).
  await Promise.all(clients.map(([name, fn]) => t.test(name, fn)));
});

t.test('CreateBucket with a bucket key: its own bucket answers as for its owner; no other bucket is made', async (t) => {
  const signedAs = (key: Credentials): RawS3 => root.as(key);
  for (const [perm, key] of Object.entries(keys)) {
    // us-east-1: AWS's legacy 200 for a bucket one owns (elsewhere 409 BucketAlreadyOwnedByYou; both
    // are "it exists" to rclone's bucket check).
    const own = await signedAs(key).createBucket(BUCKET);
    t.equal(own.status, 200, `${perm}: its own bucket`);
    for (const name of ['other-bucket', 'brand-new-bucket']) {
      const res = await signedAs(key).createBucket(name);
      t.equal(res.status, 403, `${perm}: ${name}`);
      t.match(res.text, /<Code>AccessDenied<\/Code>/, `${perm}: ${name} is AccessDenied, existing or not`);
    }
  }
  const buckets = (await server.cli(['buckets', 'list'])).json as { name: string }[];
  t.same(buckets.map((b) => b.name).sort(), [BUCKET, 'other-bucket'], 'no bucket was created');
  const owner = await server.admin(['account-keys', 'create', '--user', 'mallory']);
  const ownerRes = await signedAs({ accessKeyId: String(owner['accessKeyId']), secretAccessKey: String(owner['secretAccessKey']) }).createBucket(BUCKET);
  t.equal(ownerRes.status, 200, 'the owner gets the same answer');
});

