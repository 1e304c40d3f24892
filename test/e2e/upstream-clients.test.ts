// The gateway in upstream mode (object bytes on a moto S3 server started for this file) driven by the
// real clients: aws cli, boto3 and rclone put/get/list/multipart/copy/delete, byte-compared. Also
// checks the upstream bucket holds only opaque blob keys under the prefix, never object keys.
// Every other e2e file can run in this mode too: S3EDGE_TEST_UPSTREAM=1 (test/helpers/server.ts).
import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';
import { listKeys } from '../helpers/moto.js';
import { isolatedAwsEnv, runAws, writeAwsConfig, type AwsTarget } from '../helpers/aws-cli.js';
import { randomData } from '../helpers/s3-client.js';
import { describeRun, run } from '../helpers/conformance.js';

const server = await startServer({ upstream: true });
t.teardown(() => server.stop());
const moto = server.moto;
if (!moto) throw new Error('startServer did not start an upstream');
const files = await writeAwsConfig(server.tmpRoot);
const aws: AwsTarget = { endpoint: server.url, credentials: server.rootKey, files };
const work = join(server.tmpRoot, 'work');
await mkdir(work, { recursive: true });
const MiB = 1024 * 1024;
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

t.test('aws cli: put, multipart put, list, get, copy, delete', async (t) => {
  const small = randomData(100 * 1024);
  const big = randomData(20 * MiB + 3); // past aws cli's 8 MiB threshold: multipart
  await writeFile(join(work, 'small.bin'), small);
  await writeFile(join(work, 'big.bin'), big);
  const ok = async (args: string[]): Promise<void> => {
    const r = await runAws(aws, args);
    t.equal(r.code, 0, `aws ${args.slice(0, 3).join(' ')}: ${r.stderr.slice(-500)}`);
  };
  await ok(['s3', 'mb', 's3://cli-up']);
  await ok(['s3', 'cp', join(work, 'small.bin'), 's3://cli-up/dir/small.bin']);
  await ok(['s3', 'cp', join(work, 'big.bin'), 's3://cli-up/dir/big.bin']);
  const ls = await runAws(aws, ['s3api', 'list-objects-v2', '--bucket', 'cli-up']);
  const keys = ((ls.json as { Contents?: { Key: string; Size: number }[] }).Contents ?? []).map((c) => `${c.Key}:${c.Size}`);
  t.same(keys, [`dir/big.bin:${big.length}`, `dir/small.bin:${small.length}`]);
  await ok(['s3', 'cp', 's3://cli-up/dir/big.bin', join(work, 'big.back')]);
  t.equal(sha(await readFile(join(work, 'big.back'))), sha(big), 'multipart object byte-identical');
  await ok(['s3api', 'copy-object', '--bucket', 'cli-up', '--key', 'copy.bin', '--copy-source', 'cli-up/dir/small.bin']);
  await ok(['s3', 'cp', 's3://cli-up/copy.bin', join(work, 'copy.back')]);
  t.equal(sha(await readFile(join(work, 'copy.back'))), sha(small), 'copy byte-identical');
  await ok(['s3', 'rm', '--recursive', 's3://cli-up/']);
  const after = await runAws(aws, ['s3api', 'list-objects-v2', '--bucket', 'cli-up']);
  t.notOk((after.json as { Contents?: unknown[] } | undefined)?.Contents, 'empty after delete');
});

t.test('boto3: put, get, multipart, copy, list, delete', async (t) => {
  const script = `
import boto3, hashlib, json, os
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=os.environ['EP'], config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
s3.create_bucket(Bucket='py-up')
body = os.urandom(300000)
s3.put_object(Bucket='py-up', Key='a.bin', Body=body)
got = s3.get_object(Bucket='py-up', Key='a.bin')['Body'].read()
parts = [os.urandom(5 * 1024 * 1024), os.urandom(1234)]
up = s3.create_multipart_upload(Bucket='py-up', Key='mp.bin')['UploadId']
etags = [s3.upload_part(Bucket='py-up', Key='mp.bin', UploadId=up, PartNumber=i + 1, Body=p)['ETag'] for i, p in enumerate(parts)]
s3.complete_multipart_upload(Bucket='py-up', Key='mp.bin', UploadId=up, MultipartUpload={'Parts': [{'ETag': e, 'PartNumber': i + 1} for i, e in enumerate(etags)]})
mp = s3.get_object(Bucket='py-up', Key='mp.bin')['Body'].read()
rng = s3.get_object(Bucket='py-up', Key='mp.bin', Range='bytes=5242870-5242889')['Body'].read()
s3.copy_object(Bucket='py-up', Key='c.bin', CopySource={'Bucket': 'py-up', 'Key': 'mp.bin'})
cp = s3.get_object(Bucket='py-up', Key='c.bin')['Body'].read()
keys = [o['Key'] for o in s3.list_objects_v2(Bucket='py-up').get('Contents', [])]
for k in keys: s3.delete_object(Bucket='py-up', Key=k)
left = s3.list_objects_v2(Bucket='py-up').get('KeyCount')
whole = b''.join(parts)
print(json.dumps({'put': got == body, 'multipart': mp == whole, 'range': rng == whole[5242870:5242890], 'copy': cp == whole, 'keys': keys, 'left': left}))
`;
  const r = await run('python3', ['-c', script], { env: isolatedAwsEnv(files, server.rootKey, { EP: server.url }) });
  t.equal(r.code, 0, describeRun('boto3', r));
  t.same(JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}'), {
    put: true,
    multipart: true,
    range: true,
    copy: true,
    keys: ['a.bin', 'c.bin', 'mp.bin'],
    left: 0,
  });
});

t.test('rclone: copy (multipart), check, download, delete', async (t) => {
  const home = join(server.tmpRoot, 'rclone');
  const src = join(home, 'src');
  await mkdir(src, { recursive: true });
  const one = randomData(64 * 1024);
  await writeFile(join(src, 'one.bin'), one);
  await writeFile(join(src, 'two.bin'), randomData(12 * MiB));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RCLONE_') && !k.startsWith('AWS_')) env[k] = v;
  Object.assign(env, {
    RCLONE_CONFIG: join(home, 'rclone.conf'),
    HOME: home,
    XDG_CONFIG_HOME: home,
    XDG_CACHE_HOME: home,
    RCLONE_CONFIG_GW_TYPE: 's3',
    RCLONE_CONFIG_GW_PROVIDER: 'Other',
    RCLONE_CONFIG_GW_ENDPOINT: server.url,
    RCLONE_CONFIG_GW_ACCESS_KEY_ID: server.rootKey.accessKeyId,
    RCLONE_CONFIG_GW_SECRET_ACCESS_KEY: server.rootKey.secretAccessKey,
    RCLONE_CONFIG_GW_REGION: 'us-east-1',
    RCLONE_CONFIG_GW_FORCE_PATH_STYLE: 'true',
  });
  await writeFile(join(home, 'rclone.conf'), '');
  const rclone = (args: string[]): ReturnType<typeof run> => run('rclone', [...args, '--retries', '1', '--low-level-retries', '1'], { env });
  const mk = await rclone(['mkdir', 'gw:rc-up']);
  t.equal(mk.code, 0, describeRun('mkdir', mk));
  const cp = await rclone(['copy', src, 'gw:rc-up', '--s3-chunk-size', '5M', '--s3-upload-cutoff', '5M']);
  t.equal(cp.code, 0, describeRun('copy', cp));
  const check = await rclone(['check', src, 'gw:rc-up']);
  t.equal(check.code, 0, describeRun('check', check));
  const back = join(home, 'one.back');
  const get = await rclone(['copyto', 'gw:rc-up/one.bin', back]);
  t.equal(get.code, 0, describeRun('copyto', get));
  t.equal(sha(await readFile(back)), sha(one), 'download byte-identical');
  const del = await rclone(['delete', 'gw:rc-up']);
  t.equal(del.code, 0, describeRun('delete', del));
  const ls = await rclone(['lsf', 'gw:rc-up']);
  t.equal(ls.stdout, '', 'empty after delete');
});

t.test('the upstream bucket holds only opaque blob keys under the prefix', async (t) => {
  await writeFile(join(work, 'kept.bin'), randomData(200 * 1024));
  t.equal((await runAws(aws, ['s3', 'mb', 's3://layout'])).code, 0);
  t.equal((await runAws(aws, ['s3', 'cp', join(work, 'kept.bin'), 's3://layout/dir/kept.bin'])).code, 0);
  const keys = await listKeys(moto);
  t.ok(keys.length > 0, 'the object is stored upstream');
  t.ok(keys.every((k) => /^gw\/blobs\/[0-9a-v]{26}$/.test(k)), `blob keys only: ${keys.slice(0, 5).join(', ')}`);
  t.notOk(keys.some((k) => /\.bin|dir\//.test(k)), 'no object key reaches the upstream');
});
