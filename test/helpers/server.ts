// Spawns the compiled gateway (dist/bin/s3edge.js) as a real process on 127.0.0.1, port 0, and
// waits for its one JSON "listening" line. The admin CLI runs against the same data dir.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { childProcessEnv, s3edgeCommand } from './child-env.js';
import { onTestProcessExit } from './exit-cleanup.js';
import { runS3edge } from './cli.js';
import { generateSelfSignedCert } from './tls.js';
import type { Credentials } from './signer.js';
import { startMoto, type RunningMoto } from './moto.js';
import { OutputTail } from './output-tail.js';
import { REQUEST_LINES_HELD_MS } from '../../src/log-format.js';

export { S3EDGE_BIN } from './child-env.js';

export interface StartServerOptions {
  /** Also start the HTTPS listener with a certificate generated for this run. */
  tls?: boolean;
  /** Extra environment for the server and the admin CLI. */
  env?: Record<string, string>;
  /** Use this data dir (the caller owns it) instead of a fresh one under os.tmpdir(). */
  dataDir?: string;
  /**
   * Store object bytes on an upstream S3 (a moto server started for this gateway, stopped with it)
   * instead of the data dir. Default: on when S3EDGE_TEST_UPSTREAM=1, so any e2e file can run in
   * upstream mode unchanged.
   */
  upstream?: boolean | RunningMoto;
  /**
   * The metadata store (`--metadata`, through S3EDGE_METADATA): a PostgreSQL URL puts this gateway on that
   * database, as one of many nodes (with the same `rootKey`, masterKey and upstream as the others).
   */
  metadata?: string;
  /** This root key instead of a fresh one: nodes of one deployment share it. */
  rootKey?: Credentials;
  /** How long to wait for the listening line; a safety net, not an assertion. Default 30 s. */
  startTimeoutMs?: number;
  /** Run this executable (the single binary) instead of node on dist/bin/s3edge.js; the admin CLI too. */
  executable?: string;
  /** The environment under ours, instead of childProcessEnv() (the binary's test: a PATH without node). */
  baseEnv?: NodeJS.ProcessEnv;
  /** The server's working directory (default: the test's). */
  cwd?: string;
  /**
   * Serving processes (`--workers`). Default 1: a test sees one process unless it is about the cluster
   * (the server's own default is one per core).
   */
  workers?: number;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json?: unknown;
}

export interface RunningServer {
  url: string;
  tlsUrl?: string;
  /** The CDN listener (requests need `Host: <cdn hostname>`). */
  cdnUrl: string;
  caFile?: string;
  dataDir: string;
  /** Temp dir holding everything this helper created (data dir unless given, certs). */
  tmpRoot: string;
  rootKey: Credentials;
  /** The JSON line the server printed. */
  listening: Record<string, unknown>;
  /** `s3edge <args> --data-dir DIR --json`. Never throws for a non-zero exit. */
  cli(args: string[]): Promise<CliResult>;
  /** Like cli() but fails with the output when the exit code is not 0 or stdout is not JSON. */
  admin(args: string[]): Promise<Record<string, unknown>>;
  /** The upstream S3 (moto) when started with `upstream`. */
  moto?: RunningMoto;
  /** Captured stdout+stderr of the server (the last 256 KiB). */
  output(): string;
  /**
   * output() once the request lines logged before the call are in it: the server holds them up to
   * REQUEST_LINES_HELD_MS before writing (src/log-format.ts). For counting them; to wait for one, poll output().
   */
  loggedOutput(): Promise<string>;
  /** The server process's id (to read its /proc/<pid>/status, for instance). */
  pid: number;
  /** Sends the server process a signal; stop() still cleans up after it. */
  kill(signal: NodeJS.Signals): void;
  /** Settles when the server process exits, with its exit code (null when a signal ended it). */
  exited: Promise<ServerExit>;
  stop(): Promise<void>;
}

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const live = new Set<ChildProcess>();
const tmpRoots = new Set<string>();
function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
  for (const dir of tmpRoots) rmSync(dir, { recursive: true, force: true });
}
/** A test process stopped by a signal (tap's timeout sends SIGTERM) must not leave servers behind. */
function installExitHook(): void {
  onTestProcessExit(killAll);
}

/** The environment of the server and CLI: ours, never the host's S3EDGE_* / AWS_* settings. */
function childEnv(root: Credentials, extra: Record<string, string> | undefined, base: NodeJS.ProcessEnv = childProcessEnv()): NodeJS.ProcessEnv {
  const env = { ...base };
  for (const k of Object.keys(env)) if (k.startsWith('AWS_')) delete env[k];
  env['S3EDGE_ROOT_ACCESS_KEY'] = root.accessKeyId;
  env['S3EDGE_ROOT_SECRET_KEY'] = root.secretAccessKey;
  return { ...env, ...(extra ?? {}) };
}

function parseJsonOutput(stdout: string): unknown {
  const trimmed = stdout.trim();
  if (!trimmed) return undefined;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    // Logs may share stdout: take the last line that is JSON.
    for (const line of trimmed.split('\n').reverse()) {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        /* not this one */
      }
    }
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export async function startServer(opts: StartServerOptions = {}): Promise<RunningServer> {
  installExitHook();
  const tmpRoot = await mkdtemp(join(tmpdir(), 's3edge-e2e-'));
  tmpRoots.add(tmpRoot);
  const dataDir = opts.dataDir ?? join(tmpRoot, 'data');
  await mkdir(dataDir, { recursive: true });
  const rootKey: Credentials = opts.rootKey ?? {
    accessKeyId: `E2EROOT${randomBytes(6).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
  };
  const upstream = opts.upstream ?? process.env.S3EDGE_TEST_UPSTREAM === '1';
  // A moto given by the caller is shared (several nodes on one upstream store): the caller stops it.
  const sharedMoto = typeof upstream === 'object' ? upstream : undefined;
  const ownMoto = upstream === true ? await startMoto() : undefined;
  const moto = sharedMoto ?? ownMoto;
  const metadataEnv: Record<string, string> = opts.metadata !== undefined ? { S3EDGE_METADATA: opts.metadata } : {};
  const env = childEnv(rootKey, { ...moto?.gatewayEnv('gw/'), ...metadataEnv, ...opts.env }, opts.baseEnv);
  const args = ['serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', '0', '--cdn-port', '0', '--json'];
  // Unless the test's own env says otherwise (S3EDGE_WORKERS), which the flag would override.
  // S3EDGE_TEST_WORKERS=2 runs any e2e file on a cluster unchanged (as S3EDGE_TEST_UPSTREAM=1 does upstream).
  const workers = opts.workers ?? Number(process.env.S3EDGE_TEST_WORKERS ?? 1);
  if (opts.workers !== undefined || opts.env?.['S3EDGE_WORKERS'] === undefined) args.push('--workers', String(workers));
  let caFile: string | undefined;
  if (opts.tls) {
    const tlsDir = join(tmpRoot, 'tls');
    await mkdir(tlsDir);
    const tls = await generateSelfSignedCert(tlsDir);
    caFile = tls.caFile;
    args.push('--tls-port', '0', '--tls-cert', tls.certFile, '--tls-key', tls.keyFile);
  }

  const child = spawn(...s3edgeCommand(args, opts.executable), { env, stdio: ['ignore', 'pipe', 'pipe'], ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  live.add(child);
  const captured = new OutputTail(256 * 1024);
  const capture = (s: string): void => captured.add(s);
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (d: string) => capture(d));
  let exited = false;
  const exitPromise = new Promise<ServerExit>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      live.delete(child);
      resolve({ code, signal });
    });
  });

  const cleanup = async (): Promise<void> => {
    if (!exited) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exitPromise;
      clearTimeout(timer);
    }
    await ownMoto?.stop();
    await rm(tmpRoot, { recursive: true, force: true });
    tmpRoots.delete(tmpRoot);
  };

  let listening: Record<string, unknown>;
  try {
    listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timeoutMs = opts.startTimeoutMs ?? 30_000;
      const timer = setTimeout(() => reject(new Error(`server did not print its listening line within ${timeoutMs} ms; output:\n${captured.text()}`)), timeoutMs);
      const lines = createInterface({ input: child.stdout! });
      let found = false;
      lines.on('line', (line) => {
        capture(line + '\n');
        if (found) return;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line) as unknown;
        } catch {
          return;
        }
        if (isRecord(parsed) && parsed['event'] === 'listening') {
          found = true;
          clearTimeout(timer);
          resolve(parsed);
        }
      });
      void exitPromise.then(() => {
        clearTimeout(timer);
        if (!found) reject(new Error(`server exited (code ${String(child.exitCode)}, signal ${String(child.signalCode)}) before listening; output:\n${captured.text()}`));
      });
    });
  } catch (err) {
    await cleanup();
    throw err;
  }

  const url = listening['s3'];
  const tlsUrl = listening['s3Tls'];
  const cdnUrl = listening['cdn'];
  if (typeof url !== 'string' || typeof cdnUrl !== 'string' || (opts.tls && typeof tlsUrl !== 'string')) {
    await cleanup();
    throw new Error(`listening line lacks the endpoints: ${JSON.stringify(listening)}`);
  }

  const cli = (cliArgs: string[]): Promise<CliResult> => runCli(dataDir, cliArgs, env, opts.executable, opts.cwd);

  return {
    url,
    tlsUrl: typeof tlsUrl === 'string' ? tlsUrl : undefined,
    cdnUrl,
    caFile,
    dataDir,
    moto,
    tmpRoot,
    rootKey,
    listening,
    cli,
    async admin(cliArgs) {
      const r = await cli(cliArgs);
      if (r.code !== 0 || !isRecord(r.json)) {
        throw new Error(`s3edge ${cliArgs.join(' ')} failed (exit ${r.code}):\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
      }
      return r.json;
    },
    output: () => captured.text(),
    loggedOutput: async () => {
      await sleep(REQUEST_LINES_HELD_MS + 250);
      return captured.text();
    },
    pid: child.pid ?? -1,
    kill: (signal) => child.kill(signal),
    exited: exitPromise,
    stop: cleanup,
  };
}

/** `s3edge <args> --data-dir DIR --json` in another process, with `env` (default: childProcessEnv()). Never throws for a non-zero exit. */
export async function runCli(dataDir: string, cliArgs: string[], env: NodeJS.ProcessEnv = childProcessEnv(), executable?: string, cwd?: string): Promise<CliResult> {
  const r = await runS3edge([...cliArgs, '--data-dir', dataDir, '--json'], {}, cwd, env, executable);
  return { code: r.code ?? 1, stdout: r.stdout, stderr: r.stderr, json: parseJsonOutput(r.stdout) };
}

/** Create a user, or a bucket owned by one, or a key, through the admin CLI; typed results. */
export async function createAccountKey(server: RunningServer, user: string): Promise<Credentials> {
  const j = await server.admin(['account-keys', 'create', '--user', user]);
  return credentialsFrom(j);
}

export async function createBucketKey(server: RunningServer, bucket: string, permission: 'read' | 'read_write'): Promise<Credentials> {
  const j = await server.admin(['access-keys', 'create', '--bucket', bucket, '--permission', permission]);
  return credentialsFrom(j);
}

export function credentialsFrom(j: Record<string, unknown>): Credentials {
  const accessKeyId = j['accessKeyId'];
  const secretAccessKey = j['secretAccessKey'];
  if (typeof accessKeyId !== 'string' || typeof secretAccessKey !== 'string') throw new Error(`no credentials in ${JSON.stringify(j)}`);
  return { accessKeyId, secretAccessKey };
}
