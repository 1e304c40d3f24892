// Runs the real aws cli (v1) with an environment of its own: config and credentials files in a temp
// dir, keys in env, no instance metadata, path-style addressing, one attempt only (a retried 5xx must
// not hide a server error).
//
// Each command runs aws cli's own entry point (what the `aws` script runs) in a long-lived Python
// process of this test file (test/python/aws_cli_driver.py), one command at a time per process, with
// the command's environment, working directory and output: a fresh `aws` process's behaviour without
// its 0.6 s of start-up, which over the suite's hundreds of commands was minutes of CI. Commands run
// at once get a process each. Where `aws` is not aws cli v1's Python script, each command is an `aws`
// process as before.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Readable, Writable } from 'node:stream';
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

const DRIVER = fileURLToPath(new URL('../../../test/python/aws_cli_driver.py', import.meta.url));
const TIMEOUT_MS = 120_000;

/** The Python that runs `aws` on PATH, when it is aws cli v1's script (its #! line); else undefined. */
function awsPython(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (!dir) continue;
    let head: string;
    try {
      head = readFileSync(join(dir, 'aws'), 'utf8').slice(0, 4096);
    } catch {
      continue;
    }
    const shebang = /^#!(\S*python[\d.]*)\s*\n/.exec(head);
    return shebang && head.includes('awscli.clidriver') ? shebang[1] : undefined;
  }
  return undefined;
}

interface Pending {
  resolve(r: { code: number; stdout: Buffer; stderr: Buffer }): void;
  timer: NodeJS.Timeout;
}

/** One Python process running aws cli commands in turn. Holds the event loop only while a command runs. */
class AwsDriver {
  private readonly child: ChildProcess;
  private readonly answers: Readable;
  private readonly requests: Writable;
  private pending: Pending | undefined;
  private buffered = '';
  dead = false;

  constructor(python: string, private readonly onIdle: (d: AwsDriver) => void) {
    this.child = spawn(python, [DRIVER], {
      stdio: ['pipe', 'ignore', 'inherit', 'pipe'],
      env: { ...process.env, PYTHONUTF8: '1', PYTHONIOENCODING: 'utf-8' },
    });
    this.requests = this.child.stdin as Writable;
    this.answers = this.child.stdio[3] as Readable;
    this.answers.setEncoding('utf8');
    this.answers.on('data', (chunk: string) => this.read(chunk));
    this.child.on('exit', () => this.fail('the aws cli driver exited'));
    this.child.on('error', (err) => this.fail(err.message));
    this.requests.on('error', () => undefined);
    this.hold(false);
  }

  /** Keeps the test process alive while a command runs, and not a moment longer. */
  private hold(on: boolean): void {
    for (const h of [this.child, this.requests, this.answers] as unknown as Array<{ ref(): void; unref(): void }>) {
      if (on) h.ref();
      else h.unref();
    }
  }

  run(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number; stdout: Buffer; stderr: Buffer }> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.fail(`aws ${args.slice(0, 4).join(' ')}: no answer within ${TIMEOUT_MS} ms`);
        this.child.kill('SIGKILL');
      }, TIMEOUT_MS);
      this.pending = { resolve, timer };
      this.hold(true);
      this.requests.write(`${JSON.stringify({ args, env, cwd })}\n`);
    });
  }

  private read(chunk: string): void {
    this.buffered += chunk;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      const answer = JSON.parse(line) as { code: number; stdout: string; stderr: string };
      this.settle({ code: answer.code, stdout: Buffer.from(answer.stdout, 'base64'), stderr: Buffer.from(answer.stderr, 'base64') });
    }
  }

  private settle(r: { code: number; stdout: Buffer; stderr: Buffer }): void {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    clearTimeout(p.timer);
    if (!this.dead) {
      this.hold(false);
      this.onIdle(this);
    }
    p.resolve(r);
  }

  private fail(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    this.settle({ code: 1, stdout: Buffer.alloc(0), stderr: Buffer.from(`${reason}\n`) });
  }
}

const idle: AwsDriver[] = [];
let python: string | undefined | null = null;

function driver(): AwsDriver | undefined {
  if (python === null) python = awsPython();
  if (python === undefined) return undefined;
  let d = idle.pop();
  while (d?.dead) d = idle.pop();
  return d ?? new AwsDriver(python, (done) => idle.push(done));
}

function result(code: number, stdout: string, stderr: string): AwsResult {
  let json: unknown;
  try {
    json = stdout.trim() ? (JSON.parse(stdout) as unknown) : undefined;
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json };
}

export async function runAws(target: AwsTarget, args: string[], cwd?: string): Promise<AwsResult> {
  const globalArgs = ['--endpoint-url', target.endpoint];
  if (target.caFile) globalArgs.push('--ca-bundle', target.caFile);
  const env = isolatedAwsEnv(target.files, target.credentials);
  const d = driver();
  if (d) {
    const r = await d.run([...globalArgs, ...args], env, cwd ?? process.cwd());
    return result(r.code, r.stdout.toString('utf8'), r.stderr.toString('utf8'));
  }
  return new Promise((resolve) => {
    execFile('aws', [...globalArgs, ...args], { env, cwd, maxBuffer: 64 * 1024 * 1024, timeout: TIMEOUT_MS }, (err, stdout, stderr) => {
      resolve(result(err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr));
    });
  });
}

/** aws cli as root against a test's server: the config files in its temp dir, and a runner (the server's temp dir as cwd). */
export async function awsForServer(server: { url: string; rootKey: Credentials; tmpRoot: string }): Promise<{ files: AwsConfigFiles; aws(args: string[]): Promise<AwsResult> }> {
  const files = await writeAwsConfig(server.tmpRoot);
  return { files, aws: (args) => runAws({ endpoint: server.url, credentials: server.rootKey, files }, args, server.tmpRoot) };
}
