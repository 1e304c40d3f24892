// Runs the real `aws` command (aws-cli v1) with an environment of its own: config and credentials
// files in a temp dir, keys in env, no instance metadata, path-style addressing, one attempt only
// (a retried 5xx must not hide a server error).
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Credentials } from './signer.js';

export interface AwsConfigFiles {
  configFile: string;
  credentialsFile: string;
}

export async function writeAwsConfig(dir: string): Promise<AwsConfigFiles> {
  const configFile = join(dir, 'aws-config');
  const credentialsFile = join(dir, 'aws-credentials');
  await writeFile(
    configFile,
    ['[default]', 'region = us-east-1', 'output = json', 'max_attempts = 1', 's3 =', '    addressing_style = path', ''].join('\n'),
  );
  await writeFile(credentialsFile, '');
  return { configFile, credentialsFile };
}

/** process.env without any AWS_* variable, plus ours. Also used for boto3. */
export function isolatedAwsEnv(files: AwsConfigFiles, credentials: Credentials, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AWS_') && !k.startsWith('BOTO')) env[k] = v;
  return {
    ...env,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: files.configFile,
    AWS_SHARED_CREDENTIALS_FILE: files.credentialsFile,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_DEFAULT_REGION: 'us-east-1',
    AWS_PAGER: '',
    // Object names in output and local file names are UTF-8 whatever the machine's locale.
    PYTHONIOENCODING: 'utf-8',
    PYTHONUTF8: '1',
    ...extra,
  };
}

export interface AwsTarget {
  endpoint: string;
  caFile?: string;
  credentials: Credentials;
  files: AwsConfigFiles;
}

export interface AwsResult {
  code: number;
  stdout: string;
  stderr: string;
  json?: unknown;
}

export function runAws(target: AwsTarget, args: string[], cwd?: string): Promise<AwsResult> {
  const globalArgs = ['--endpoint-url', target.endpoint];
  if (target.caFile) globalArgs.push('--ca-bundle', target.caFile);
  return new Promise((resolve) => {
    execFile(
      'aws',
      [...globalArgs, ...args],
      { env: isolatedAwsEnv(target.files, target.credentials), cwd, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        let json: unknown;
        try {
          json = stdout.trim() ? (JSON.parse(stdout) as unknown) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ code, stdout, stderr, json });
      },
    );
  });
}

/** aws cli as root against a test's server: the config files in its temp dir, and a runner (the server's temp dir as cwd). */
export async function awsForServer(server: { url: string; rootKey: Credentials; tmpRoot: string }): Promise<{ files: AwsConfigFiles; aws(args: string[]): Promise<AwsResult> }> {
  const files = await writeAwsConfig(server.tmpRoot);
  return { files, aws: (args) => runAws({ endpoint: server.url, credentials: server.rootKey, files }, args, server.tmpRoot) };
}
