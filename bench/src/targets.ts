// The servers under test, each started on 127.0.0.1 with a free port in its own temp dir and
// stopped (dir removed) at the end: s3edge (the built dist/bin/s3edge.js), s3rver, moto's S3 server,
// nginx (sendfile), the bare node:http ceiling and Varnish (--fastpath: malloc storage, one backend).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forgetTempDir, freePort, rememberTempDir, spawnManaged, waitForPort, type Managed } from './proc.js';
import type { Credentials } from './sigv4.js';

export type TargetName = 's3edge' | 's3rver' | 'moto' | 'nginx' | 'ceiling';
export const S3_TARGETS: readonly TargetName[] = ['s3edge', 's3rver', 'moto'];

export interface Target {
  name: TargetName;
  /** s3: a full S3 server; ceiling: PUT/GET of files; nginx: GET of files we place in wwwDir. */
  kind: 's3' | 'ceiling' | 'nginx';
  url: string;
  pid: number;
  credentials: Credentials;
  /** nginx only: its document root; objects are written here as <bucket>/<key>. */
  wwwDir?: string;
  /** Where the CDN workload sends its GETs: s3edge's CDN listener; nginx's own URL. */
  cdnUrl?: string;
  /** Serving processes: s3edge's `--workers` as its listening line reports it, nginx's `worker_processes`. */
  workers?: number;
  /** s3edge only: where its metadata lives, as its listening line names it ("sqlite" or "postgres"). */
  metadata?: string;
  /** s3edge only: the admin CLI on its data dir (`s3edge <args> --data-dir DIR --json`), parsed. */
  admin?(args: readonly string[]): Record<string, unknown>;
  /** s3edge only: its data directory (meta.db, storage/). */
  dataDir?: string;
  proc: Managed;
  stop(): Promise<void>;
}

/** The repository root: the nearest directory above this file whose package.json is "s3edge". */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        const name = (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name;
        if (name === 's3edge') return dir;
      } catch {
        /* not ours */
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the s3edge repository root above the harness');
    dir = up;
  }
}

/** The host's environment without anything that would change how a server or client behaves. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('S3EDGE_') || k.startsWith('AWS_') || k === 'NODE_OPTIONS' || k.startsWith('TAP') || k.startsWith('npm_')) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

async function tempDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `s3edge-bench-${name}-`));
  rememberTempDir(dir);
  return dir;
}

function stopper(proc: Managed, dir: string): () => Promise<void> {
  return async () => {
    await proc.stop();
    await rm(dir, { recursive: true, force: true });
    forgetTempDir(dir);
  };
}

function waitForJsonLine(proc: Managed, name: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let found = false;
    const timer = setTimeout(() => reject(new Error(`${name}: no listening line within ${timeoutMs} ms:\n${proc.output()}`)), timeoutMs);
    const stop = proc.onLine((line) => {
      if (found) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line) as unknown;
      } catch {
        return;
      }
      if (typeof parsed === 'object' && parsed !== null && (parsed as Record<string, unknown>)['event'] === 'listening') {
        found = true;
        clearTimeout(timer);
        stop();
        resolve(parsed as Record<string, unknown>);
      }
    });
    void proc.exited.then(() => {
      clearTimeout(timer);
      if (!found) reject(new Error(`${name} exited before listening:\n${proc.output()}`));
    });
  });
}

export interface S3edgeOptions {
  /** Extra S3EDGE_* environment (e.g. a max object size for the 10 GiB upload, S3EDGE_METADATA for PostgreSQL). */
  env?: Record<string, string>;
  /** Extra `serve` flags, passed through from --s3edge-arg. */
  args?: readonly string[];
  /** Node flags before the script, from --s3edge-node-arg (e.g. --cpu-prof, which NODE_OPTIONS refuses). */
  nodeArgs?: readonly string[];
  /**
   * `serve --workers N` (default 1: one process, as every figure before issue 21 was measured; s3edge's
   * own default is one worker per core). Only --scale asks for more.
   */
  workers?: number;
  /** Another build's repository root (its dist/ built): --fastpath-compare. Default: this one. */
  root?: string;
}

export async function startS3edge(opts: S3edgeOptions = {}): Promise<Target> {
  const bin = join(opts.root ?? repoRoot(), 'dist', 'bin', 's3edge.js');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run build first`);
  const dir = await tempDir('s3edge');
  const credentials: Credentials = {
    accessKeyId: `BENCH${randomBytes(6).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
  };
  const env = cleanEnv({ S3EDGE_ROOT_ACCESS_KEY: credentials.accessKeyId, S3EDGE_ROOT_SECRET_KEY: credentials.secretAccessKey, ...opts.env });
  const proc = spawnManaged(process.execPath, [...(opts.nodeArgs ?? []), bin, 'serve', '--data-dir', join(dir, 'data'), '--host', '127.0.0.1', '--port', '0', '--cdn-port', '0', '--json', '--workers', String(opts.workers ?? 1), ...(opts.args ?? [])], env, { stdoutFile: join(dir, 'stdout.log') });
  try {
    const line = await waitForJsonLine(proc, 's3edge');
    const url = line['s3'];
    const cdnUrl = line['cdn'];
    if (typeof url !== 'string' || typeof cdnUrl !== 'string') throw new Error(`s3edge listening line without "s3" and "cdn": ${JSON.stringify(line)}`);
    const dataDir = join(dir, 'data');
    const admin = (args: readonly string[]): Record<string, unknown> => {
      const out = execFileSync(process.execPath, [bin, ...args, '--data-dir', dataDir, '--json'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      const parsed: unknown = JSON.parse(out.trim().split('\n').pop() ?? '');
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`s3edge ${args.join(' ')}: no JSON object in ${out}`);
      return parsed as Record<string, unknown>;
    };
    const workers = typeof line['workers'] === 'number' ? line['workers'] : undefined;
    const metadata = typeof line['metadata'] === 'string' ? line['metadata'] : undefined;
    return { name: 's3edge', kind: 's3', url, pid: proc.pid, credentials, cdnUrl, ...(workers !== undefined ? { workers } : {}), ...(metadata !== undefined ? { metadata } : {}), admin, dataDir, proc, stop: stopper(proc, dir) };
  } catch (err) {
    await stopper(proc, dir)();
    throw err;
  }
}

export function s3rverBin(): string {
  return join(repoRoot(), 'bench', 'node_modules', 's3rver', 'bin', 's3rver.js');
}

export async function startS3rver(): Promise<Target> {
  const bin = s3rverBin();
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm --prefix bench ci`);
  const dir = await tempDir('s3rver');
  const port = await freePort();
  // s3rver encrypts LIST continuation tokens with DES, which OpenSSL 3 only has in its legacy provider:
  // without it every truncated ListObjectsV2 page is a 500.
  const proc = spawnManaged(process.execPath, ['--openssl-legacy-provider', bin, '-d', join(dir, 'data'), '-a', '127.0.0.1', '-p', String(port), '--silent'], cleanEnv());
  try {
    await waitForPort(port, proc, 's3rver');
  } catch (err) {
    await stopper(proc, dir)();
    throw err;
  }
  // s3rver verifies SigV4 against its one built-in key pair.
  return { name: 's3rver', kind: 's3', url: `http://127.0.0.1:${port}`, pid: proc.pid, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, proc, stop: stopper(proc, dir) };
}

export async function startMoto(): Promise<Target> {
  const dir = await tempDir('moto');
  const port = await freePort();
  const proc = spawnManaged('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], cleanEnv({ PYTHONUNBUFFERED: '1' }), { cwd: dir });
  try {
    await waitForPort(port, proc, 'moto');
  } catch (err) {
    await stopper(proc, dir)();
    throw err;
  }
  return { name: 'moto', kind: 's3', url: `http://127.0.0.1:${port}`, pid: proc.pid, credentials: { accessKeyId: 'bench', secretAccessKey: 'bench-secret' }, proc, stop: stopper(proc, dir) };
}

/** The nginx binary, or undefined with the reason. */
export function findNginx(): string | undefined {
  for (const p of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) if (existsSync(p)) return p;
  try {
    const out = execFileSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' }).trim();
    return out || undefined;
  } catch {
    return undefined;
  }
}

/** Installs Debian's nginx when we are root and it is missing; returns the binary or undefined. */
export function ensureNginx(log: (s: string) => void): string | undefined {
  const found = findNginx();
  if (found) return found;
  if (typeof process.getuid === 'function' && process.getuid() === 0) {
    log('nginx is missing: apt-get install -y nginx');
    try {
      execFileSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx'], { stdio: 'inherit' });
    } catch {
      /* reported below */
    }
  }
  return findNginx();
}

export interface NginxOptions {
  /** Proxy every request to this origin (`http://127.0.0.1:PORT`) instead of serving files: the --proxy mode. */
  proxyPass?: string;
  /** `worker_processes` (default 1: the Node servers it is compared with are one process each; --scale asks for more). */
  workers?: number;
}

/** The server block's locations: static files from www, or proxy_pass over a keep-alive upstream pool. */
function nginxServer(www: string, opts: NginxOptions): { upstream: string; location: string } {
  if (opts.proxyPass === undefined) return { upstream: '', location: `root ${www};\n    location / { }` };
  const origin = new URL(opts.proxyPass);
  return {
    upstream: `  upstream bench_origin {\n    server ${origin.host};\n    keepalive 64;\n  }\n`,
    // HTTP/1.1 and no Connection header: without them nginx closes every upstream connection.
    location: 'location / {\n      proxy_pass http://bench_origin;\n      proxy_http_version 1.1;\n      proxy_set_header Connection "";\n    }',
  };
}

/** nginx.conf of a bench nginx in `dir` (its pid, logs and temp paths there) listening on 127.0.0.1:`port`. */
export function nginxConfig(dir: string, port: number, opts: NginxOptions = {}): string {
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const server = nginxServer(join(dir, 'www'), opts);
  return `${asRoot ? 'user root;\n' : ''}worker_processes ${opts.workers ?? 1};
daemon off;
master_process on;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65s;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  types { }
  client_body_temp_path ${join(dir, 'tmp', 'body')};
  proxy_temp_path ${join(dir, 'tmp', 'proxy')};
  fastcgi_temp_path ${join(dir, 'tmp', 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'tmp', 'uwsgi')};
  scgi_temp_path ${join(dir, 'tmp', 'scgi')};
${server.upstream}  server {
    listen 127.0.0.1:${port};
    ${server.location}
  }
}
`;
}

export async function startNginx(binary: string, opts: NginxOptions = {}): Promise<Target> {
  const dir = await tempDir('nginx');
  const port = await freePort();
  const www = join(dir, 'www');
  await mkdir(www, { recursive: true });
  await mkdir(join(dir, 'tmp'), { recursive: true });
  const conf = nginxConfig(dir, port, opts);
  const confPath = join(dir, 'nginx.conf');
  await writeFile(confPath, conf);
  const proc = spawnManaged(binary, ['-p', dir, '-e', join(dir, 'error.log'), '-c', confPath], cleanEnv());
  try {
    await waitForPort(port, proc, 'nginx');
  } catch (err) {
    await stopper(proc, dir)();
    throw err;
  }
  const url = `http://127.0.0.1:${port}`;
  return { name: 'nginx', kind: 'nginx', url, pid: proc.pid, credentials: { accessKeyId: 'none', secretAccessKey: 'none' }, wwwDir: www, cdnUrl: url, workers: opts.workers ?? 1, proc, stop: stopper(proc, dir) };
}

/** Debian's varnishd, or undefined. */
export function findVarnishd(): string | undefined {
  for (const p of ['/usr/sbin/varnishd', '/usr/local/sbin/varnishd']) if (existsSync(p)) return p;
  try {
    return execFileSync('sh', ['-c', 'command -v varnishd'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The VCL of a bench Varnish: one backend and the built-in logic (it caches what the backend allows). */
export function varnishVcl(backendUrl: string): string {
  const u = new URL(backendUrl);
  return `vcl 4.1;\n\nbackend origin {\n  .host = "${u.hostname}";\n  .port = "${u.port}";\n}\n`;
}

export interface VarnishServer {
  url: string;
  pid: number;
  /** Its `-n` working directory (varnishadm reads it). */
  workDir: string;
  proc: Managed;
  stop(): Promise<void>;
}

/**
 * varnishd in the foreground (`-F`) on 127.0.0.1, `-s malloc,<mallocMiB>m`, its own `-n` working dir, in
 * front of `backendUrl`; default thread pools. `-j none`: no privilege separation, so a run as root
 * does not hand the temp dir to the varnish user (it cannot read a mode-700 dir).
 */
export async function startVarnish(binary: string, backendUrl: string, mallocMiB = 256): Promise<VarnishServer> {
  const dir = await tempDir('varnish');
  const port = await freePort();
  const vcl = join(dir, 'default.vcl');
  await writeFile(vcl, varnishVcl(backendUrl));
  const workDir = join(dir, 'work');
  const proc = spawnManaged(binary, ['-j', 'none', '-F', '-a', `127.0.0.1:${port}`, '-f', vcl, '-s', `malloc,${mallocMiB}m`, '-n', workDir], cleanEnv());
  try {
    await waitForPort(port, proc, 'varnishd');
  } catch (err) {
    await stopper(proc, dir)();
    throw err;
  }
  return { url: `http://127.0.0.1:${port}`, pid: proc.pid, workDir, proc, stop: stopper(proc, dir) };
}

/** Run-time parameters of a running Varnish (`varnishadm param.show NAME`), e.g. thread_pools: "2 [pools] (default)". */
export function varnishParams(varnishd: string, workDir: string, names: readonly string[]): Record<string, string> {
  const adm = join(dirname(varnishd).replace(/sbin$/, 'bin'), 'varnishadm');
  const out: Record<string, string> = {};
  for (const name of names) {
    const text = run(existsSync(adm) ? adm : 'varnishadm', ['-n', workDir, 'param.show', name]);
    const m = /Value is:\s*(.+)/.exec(text);
    out[name] = m?.[1]?.trim() ?? 'unknown';
  }
  return out;
}

/** `varnishd -V` prints "varnishd (varnish-7.1.1 revision ...)" on stderr. */
export function varnishVersion(binary: string): string {
  const r = spawnSync(binary, ['-V'], { encoding: 'utf8' });
  const m = /varnish-([\w.]+)/.exec(`${r.stderr ?? ''}${r.stdout ?? ''}`);
  return m?.[1] ?? 'unknown';
}

export async function startCeiling(): Promise<Target> {
  const dir = await tempDir('ceiling');
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  const proc = spawnManaged(process.execPath, [main, '--internal-ceiling-server', dir], cleanEnv());
  try {
    const line = await waitForJsonLine(proc, 'ceiling');
    const port = line['port'];
    if (typeof port !== 'number') throw new Error(`ceiling listening line without a port: ${JSON.stringify(line)}`);
    return { name: 'ceiling', kind: 'ceiling', url: `http://127.0.0.1:${port}`, pid: proc.pid, credentials: { accessKeyId: 'none', secretAccessKey: 'none' }, proc, stop: stopper(proc, dir) };
  } catch (err) {
    await stopper(proc, dir)();
    throw err;
  }
}

function run(cmd: string, args: readonly string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string };
    return (e.stderr ?? e.stdout ?? '').toString().trim();
  }
}

export interface Versions {
  node: string;
  s3edge: string;
  s3rver?: string;
  moto?: string;
  nginx?: string;
}

export function versions(which: ReadonlySet<TargetName>, nginxBinary: string | undefined): Versions {
  const root = repoRoot();
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string };
  const commit = run('git', ['-C', root, 'rev-parse', '--short', 'HEAD']);
  const dirty = run('git', ['-C', root, 'status', '--porcelain', '--', 'src', 'bin']) ? ' + uncommitted changes in src/' : '';
  const v: Versions = { node: process.version, s3edge: `${pkg.version ?? '?'} (${commit || 'no git'}${dirty})` };
  if (which.has('s3rver')) {
    try {
      v.s3rver = (JSON.parse(readFileSync(join(root, 'bench', 'node_modules', 's3rver', 'package.json'), 'utf8')) as { version?: string }).version;
    } catch {
      v.s3rver = 'missing';
    }
  }
  if (which.has('moto')) v.moto = run('python3', ['-c', 'import moto; print(moto.__version__)']);
  // nginx -v prints to stderr and exits 0.
  if (which.has('nginx') && nginxBinary) v.nginx = (spawnSync(nginxBinary, ['-v'], { encoding: 'utf8' }).stderr ?? '').trim().replace(/^nginx version:\s*/, '');
  return v;
}
