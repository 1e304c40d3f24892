// Bucket versioning (docs/COMPATIBILITY.md "Versioning") driven by boto3 (test/python/
// boto3_versioning.py: one scenario, judged here), aws cli, rclone, and raw signed requests for the
// edges clients never send. One server for the file.
import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startServer } from '../helpers/server.js';
import { isolatedAwsEnv, runAws, writeAwsConfig, type AwsResult } from '../helpers/aws-cli.js';
import { RawS3, errorCode } from '../helpers/s3-client.js';

const PY_SCRIPT = fileURLToPath(new URL('../../../test/python/boto3_versioning.py', import.meta.url));

const server = await startServer();
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);
const root = new RawS3({ url: server.url }, server.rootKey);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, cwd: server.tmpRoot, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

function aws(args: string[]): Promise<AwsResult> {
  return runAws({ endpoint: server.url, credentials: server.rootKey, files: awsFiles }, args, server.tmpRoot);
}

t.test('boto3: a versioned bucket from first write to bucket delete', async (t) => {
  const bucket = 'ver-boto3';
  t.equal((await root.createBucket(bucket)).status, 200);
  const r = await run('python3', [PY_SCRIPT, '--endpoint', server.url, '--bucket', bucket], isolatedAwsEnv(awsFiles, server.rootKey));
  t.equal(r.code, 0, r.stderr);
  const o = JSON.parse(r.stdout) as Record<string, any>;
  (await import("node:fs")).writeFileSync("/tmp/vt/out.json", JSON.stringify(o));
  t.notOk(o.exception, o.exception);
});
