// --start: how fast s3edge answers after its process starts, and what it holds once idle. Each round
// spawns every target once, on a data directory that already exists (migrations, root user and TLD seed
// done by a first start), and polls it over fresh connections every few milliseconds: /healthz until
// 200, an anonymous S3 request until the S3 handler answers (XML), a management API request until the
// API answers (JSON). Baselines: `node -e 0` (spawn to exit) and a bare node:http server (spawn to its
// first 200). A few rounds then leave s3edge idle for a while and read the RSS of every process of its
// tree (the single process, or the supervisor and its workers). One more start, under --cpu-prof, says
// where the time to the first 200 went (module loading by package, start-up work by area).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CpuMeter, freePort, rememberTempDir, forgetTempDir, pssKiB, rssKiB, sleep, spawnManaged, treePids, type Managed } from './proc.js';
import { cleanEnv, repoRoot } from './targets.js';

export type StartTargetKind = 'node-exit' | 'node-http' | 's3edge';

export interface StartTarget {
  name: string;
  kind: StartTargetKind;
  /** s3edge: `serve --workers N`. */
  workers?: number;
  /** s3edge: the command (node + dist/bin/s3edge.js, or the single binary). */
  command?: readonly string[];
  /** Set in this target's environment on top of the run's. */
  env?: Record<string, string>;
}

export interface StartSample {
  /** Spawn to the first /healthz 200 (node -e 0: spawn to exit). */
  healthzMs: number;
  /** Spawn to the listening line on stdout. */
  listeningMs?: number;
  /** Spawn to the first answer of the S3 handler (an anonymous ListBuckets: 403 XML). */
  s3Ms?: number;
  /** Spawn to the first answer of the management API (an unauthenticated /api/v3 request: JSON). */
  apiMs?: number;
  /** CPU seconds of the whole process tree when /healthz first answered 200, in ms. */
  cpuMs?: number;
}

export interface ProcessRss {
  role: 'single' | 'supervisor' | 'worker' | 'process';
  pid: number;
  rssKiB: number;
  /** Proportional set size (proc.ts pssKiB): shared pages divided among the processes that map them. */
  pssKiB: number;
}

export interface RssSample {
  totalKiB: number;
  /** The tree's PSS: what it holds, each shared page once. */
  totalPssKiB: number;
  processes: ProcessRss[];
}

export interface TargetFigures {
  target: StartTarget;
  samples: StartSample[];
  /** Idle: no management request was made (the API is built for the first one). */
  rss: RssSample[];
  /** The same starts, a moment after one management API request (one worker built the API). */
  rssAfterApi: RssSample[];
  errors: string[];
}

export interface ProfileArea {
  area: string;
  ms: number;
}

export interface StartProfile {
  target: string;
  /** Wall time from the process's start to the first /healthz 200, as the bench saw it. */
  healthzMs: number;
  /** Main thread CPU profile up to that moment (profiled starts are slower: the profiler's own cost). */
  profiledMs: number;
  /** Samples under node's module loader (resolve, read, compile, evaluate a module's top level). */
  moduleLoadingMs: number;
  /** Samples of the app's start (context, listeners), outside the module loader. */
  startupMs: number;
  gcMs: number;
  idleMs: number;
  /** Module loading by package (or src/ directory): self time inside the loader's stacks. */
  loading: ProfileArea[];
  /** Start-up work by package (or src/ directory). */
  startup: ProfileArea[];
  /** CommonJS modules loaded by then (require.cache), ES modules (our dist/ files are all ESM). */
  cjsModules?: number;
  esmModules?: number;
}

export interface StartFigures {
  node: string;
  cores: number;
  loadBefore: number[];
  loadAfter: number[];
  rounds: number;
  pollMs: number;
  settleMs: number;
  targets: TargetFigures[];
  profile?: StartProfile;
  /** Cores other processes used during the run: the noise the figures carry. */
  otherCores: number;
  notes: string[];
}

export interface MeasureStartOptions {
  /** Starts per target (default 10). */
  rounds?: number;
  /** Of those, how many leave s3edge idle for `settleMs` and read its RSS (default 3). */
  rssRounds?: number;
  /** Idle time before the RSS is read (default 5000). */
  settleMs?: number;
  /** The polling interval (default 5). */
  pollMs?: number;
  /** s3edge worker counts (default 1,2). */
  workers?: number[];
  /** The single binary, when built (default: dist/s3edge-<platform>-<arch> if present). null: none. */
  binary?: string | null;
  /** One more w1 start under --cpu-prof, summarised (default true). */
  profile?: boolean;
  /** The node that runs s3edge (default this one). */
  nodePath?: string;
  /**
   * Other builds to start beside this one, interleaved (e.g. a checkout of the commit before a change,
   * built with npm run build, and build:binary for its binary rows): their targets are named `<label> w1`...
   */
  compare?: { label: string; root: string }[];
  /** This build's s3edge rows again with Node's compile cache off (NODE_DISABLE_COMPILE_CACHE=1), interleaved. */
  withoutCompileCache?: boolean;
  log?: (line: string) => void;
}

const BARE_HTTP = "require('node:http').createServer((q,s)=>{s.writeHead(200,{'content-type':'text/plain'});s.end('ok')}).listen(+process.argv[1],'127.0.0.1')";

interface Probe {
  status: number;
  type: string;
}

/** One GET over a fresh connection; undefined when nothing answered (refused, reset, timed out). */
function probe(port: number, path: string, timeoutMs = 2000): Promise<Probe | undefined> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? '') }));
      res.once('error', () => resolve(undefined));
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(undefined));
    req.end();
  });
}

/** Polls until `done` accepts an answer; resolves with the time of that answer (performance.now()). */
async function pollUntil(port: number, path: string, pollMs: number, done: (p: Probe) => boolean, alive: () => boolean, deadline: number): Promise<number> {
  for (;;) {
    const p = await probe(port, path);
    const at = performance.now();
    if (p && done(p)) return at;
    if (!alive()) throw new Error(`exited before ${path} answered`);
    if (at > deadline) throw new Error(`${path} did not answer in time`);
    await sleep(pollMs);
  }
}

function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The s3edge targets: node + dist/bin/s3edge.js, and the binary when there is one. */
function s3edgeTargets(workers: number[], binary: string | undefined, nodePath: string, root = repoRoot(), label = ''): StartTarget[] {
  const bin = join(root, 'dist', 'bin', 's3edge.js');
  const prefix = label ? `${label} ` : '';
  const out: StartTarget[] = workers.map((w) => ({ name: `${prefix}s3edge w${w}`, kind: 's3edge', workers: w, command: [nodePath, bin] }));
  if (binary) for (const w of workers) out.push({ name: `${prefix}binary w${w}`, kind: 's3edge', workers: w, command: [binary] });
  return out;
}

export function defaultBinary(root = repoRoot()): string | undefined {
  const path = join(root, 'dist', `s3edge-${process.platform}-${process.arch}`);
  return existsSync(path) ? path : undefined;
}

interface Env {
  dataDir: string;
  env: NodeJS.ProcessEnv;
}

function serveArgs(t: StartTarget, e: Env, port: number, cdnPort: number): string[] {
  const [cmd, ...rest] = t.command ?? [];
  if (!cmd) throw new Error(`${t.name}: no command`);
  return [cmd, ...rest, 'serve', '--data-dir', e.dataDir, '--host', '127.0.0.1', '--port', String(port), '--cdn-port', String(cdnPort), '--json', '--workers', String(t.workers ?? 1)];
}

/** The process tree's RSS with each process's role: the root is the single process or the supervisor. */
export function treeRss(rootPid: number, workers: number): RssSample {
  const processes: ProcessRss[] = treePids(rootPid).map((pid) => ({
    role: pid === rootPid ? (workers > 1 ? 'supervisor' : 'single') : workers > 1 ? 'worker' : 'process',
    pid,
    rssKiB: rssKiB(pid),
    pssKiB: pssKiB(pid),
  }));
  return { totalKiB: processes.reduce((n, p) => n + p.rssKiB, 0), totalPssKiB: processes.reduce((n, p) => n + p.pssKiB, 0), processes };
}

/** One start of one target: its figures, and (for s3edge, when asked) its RSS once idle. */
async function startOnce(
  t: StartTarget,
  e: Env,
  pollMs: number,
  withRss: boolean,
  settleMs: number,
  nodeArgs: readonly string[] = [],
  /** Only /healthz (the profiled starts: no S3 or API request loads anything before it answers). */
  healthzOnly = false,
): Promise<{ sample: StartSample; rss?: RssSample; rssAfterApi?: RssSample; proc?: Managed }> {
  if (t.kind === 'node-exit') {
    const t0 = performance.now();
    const proc = spawnManaged(t.command?.[0] ?? process.execPath, ['-e', '0'], e.env);
    await proc.exited;
    return { sample: { healthzMs: performance.now() - t0 } };
  }
  const port = await freePort();
  const deadline = performance.now() + 60_000;
  if (t.kind === 'node-http') {
    const t0 = performance.now();
    const proc = spawnManaged(t.command?.[0] ?? process.execPath, ['-e', BARE_HTTP, String(port)], e.env);
    try {
      const at = await pollUntil(port, '/healthz', pollMs, (p) => p.status === 200, () => !proc.hasExited(), deadline);
      return { sample: { healthzMs: at - t0, cpuMs: CpuMeter.treeSeconds(proc.pid) * 1000 } };
    } finally {
      await proc.stop('SIGKILL');
    }
  }
  const cdnPort = await freePort();
  const [cmd, ...args] = serveArgs(t, e, port, cdnPort);
  const t0 = performance.now();
  const proc = spawnManaged(cmd as string, [...nodeArgs, ...args], t.env ? { ...e.env, ...t.env } : e.env);
  let listeningMs: number | undefined;
  const stopListening = proc.onLine((line) => {
    if (listeningMs !== undefined || !line.includes('"event":"listening"')) return;
    listeningMs = performance.now() - t0;
    stopListening();
  });
  const alive = (): boolean => !proc.hasExited();
  try {
    let cpuMs: number | undefined;
    const healthz = pollUntil(port, '/healthz', pollMs, (p) => p.status === 200, alive, deadline).then((at) => {
      cpuMs = CpuMeter.treeSeconds(proc.pid) * 1000;
      return at;
    });
    const s3 = healthzOnly ? Promise.resolve(undefined) : pollUntil(port, '/', pollMs, (p) => p.type.includes('xml'), alive, deadline);
    // A start whose idle memory is read makes no management request before (the API is built for the first).
    // Asked once /healthz and S3 have answered: the API's build holds its process's event loop for most of
    // a second, and a management request racing them stalled their first answers by as much (a third of
    // the starts measured ~1.0-1.4 s instead of 0.2-0.4 s).
    const api =
      withRss || healthzOnly
        ? Promise.resolve(undefined)
        : Promise.all([healthz, s3]).then(() => pollUntil(port, '/api/v3/buckets', pollMs, (p) => p.type.includes('json'), alive, deadline));
    const [h, s, a] = await Promise.all([healthz, s3, api]);
    // The listening line may trail the first answers by a moment (the supervisor prints it once every worker listens).
    while (listeningMs === undefined && alive() && performance.now() < deadline) await sleep(pollMs);
    const sample: StartSample = { healthzMs: h - t0, ...(s !== undefined ? { s3Ms: s - t0 } : {}), ...(a !== undefined ? { apiMs: a - t0 } : {}), ...(listeningMs !== undefined ? { listeningMs } : {}), ...(cpuMs !== undefined ? { cpuMs } : {}) };
    if (!withRss) return { sample, proc };
    await sleep(settleMs);
    const rss = treeRss(proc.pid, t.workers ?? 1);
    await probe(port, '/api/v3/buckets', 60_000);
    await sleep(Math.min(settleMs, 2000));
    return { sample, rss, rssAfterApi: treeRss(proc.pid, t.workers ?? 1), proc };
  } catch (err) {
    const exit = proc.hasExited() ? ` (exit ${proc.child.exitCode ?? proc.child.signalCode})` : '';
    throw new Error(`${t.name}: ${(err as Error).message}${exit}\n${proc.output().slice(-2000)}`);
  }
}

/** A data directory that exists: one start of s3edge on it, to its first 200, then a stop. */
async function prepareDataDir(e: Env, nodePath: string, pollMs: number): Promise<void> {
  const [t] = s3edgeTargets([1], undefined, nodePath);
  const { proc } = await startOnce(t as StartTarget, e, pollMs, false, 0);
  await proc?.stop();
}

function classify(url: string): string {
  if (!url) return '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg?.[1]) return pkg[1];
  if (url.startsWith('node:')) return 'node internals';
  const src = /\/dist\/(src\/[^/]+|bin)/.exec(url);
  if (src?.[1]) return src[1].replace(/\.js$/, '');
  return url;
}

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

/** Splits a start's main-thread profile into module loading and start-up work, by package, up to `untilMs`. */
export function summariseStartProfile(p: { nodes: CpuProfileNode[]; samples: number[]; timeDeltas: number[] }, untilMs: number): Omit<StartProfile, 'target' | 'healthzMs'> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const underLoader = new Map<number, boolean>();
  const loaderOf = (id: number): boolean => {
    const known = underLoader.get(id);
    if (known !== undefined) return known;
    const n = byId.get(id);
    const url = n?.callFrame.url ?? '';
    const fn = n?.callFrame.functionName ?? '';
    const p2 = parent.get(id);
    // A module's top-level code runs under the loader's evaluate(); that counts as loading it.
    const here = url.startsWith('node:internal/modules/') || fn === 'evaluate' || fn === 'compileSourceTextModule';
    const v = here || (p2 !== undefined && loaderOf(p2));
    underLoader.set(id, v);
    return v;
  };
  const loadingBy = new Map<string, number>();
  const startupBy = new Map<string, number>();
  let t = 0;
  let total = 0;
  let gc = 0;
  let idle = 0;
  let loadingMs = 0;
  let startupMs = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += (p.timeDeltas[i] ?? 0) / 1000;
    if (t > untilMs) break;
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
    const id = p.samples[i] as number;
    const n = byId.get(id);
    if (!n) continue;
    total += dt;
    const fn = n.callFrame.functionName;
    if (fn === '(idle)') {
      idle += dt;
      continue;
    }
    if (fn === '(garbage collector)') {
      gc += dt;
      continue;
    }
    // A sample counts for the nearest frame of a package or of ours: a native read or compile, or node's
    // loader resolving a require, is the work of the module that asked for it. The ES module graph's
    // own linking and compiling, which no module's code asks for, is counted as such.
    let owner: CpuProfileNode | undefined = n;
    while (owner && (!owner.callFrame.url || owner.callFrame.url.startsWith('node:'))) owner = byId.get(parent.get(owner.id) ?? -1);
    const loading = loaderOf(id);
    const area = owner ? classify(owner.callFrame.url) : loading ? '(ES module graph: resolve, compile, link)' : n.callFrame.url.startsWith('node:') ? 'node internals' : '(native)';
    if (loading) {
      loadingMs += dt;
      loadingBy.set(area, (loadingBy.get(area) ?? 0) + dt);
    } else {
      startupMs += dt;
      startupBy.set(area, (startupBy.get(area) ?? 0) + dt);
    }
  }
  const top = (m: Map<string, number>): ProfileArea[] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([area, ms]) => ({ area, ms }));
  return { profiledMs: total, moduleLoadingMs: loadingMs, startupMs, gcMs: gc, idleMs: idle, loading: top(loadingBy), startup: top(startupBy) };
}

/**
 * A preloaded script that prints, on SIGTERM, how many modules the process had loaded: files through the ES
 * module loader (ours, and CommonJS packages imported from them: counted in both), and CommonJS files.
 */
const COUNT_MODULES = `
const { register, default: Module } = await import('node:module');
const { MessageChannel } = await import('node:worker_threads');
let esm = 0;
const { port1, port2 } = new MessageChannel();
port1.on('message', () => esm++);
port1.unref();
register('data:text/javascript,' + encodeURIComponent("let port; const seen = new Set(); export function initialize(d) { port = d.port; } export async function load(url, ctx, next) { if (!url.startsWith('node:') && !seen.has(url)) { seen.add(url); port.postMessage(1); } return next(url, ctx); }"), { parentURL: 'file:///', data: { port: port2 }, transferList: [port2] });
process.prependListener('SIGTERM', () => process.stderr.write('bench-modules ' + JSON.stringify({ cjs: Object.keys(Module._cache).length, esm }) + '\\n'));
`;

/** One w1 start under --cpu-prof (and a module count): where its time to the first 200 went. */
async function profileStart(e: Env, nodePath: string, pollMs: number): Promise<StartProfile> {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-startprof-'));
  try {
    const [t] = s3edgeTargets([1], undefined, nodePath);
    const target = t as StartTarget;
    const counted = await startOnce(target, e, pollMs, false, 0, ['--import', `data:text/javascript,${encodeURIComponent(COUNT_MODULES)}`], true);
    await counted.proc?.stop();
    const counts = /bench-modules (\{.*\})/.exec(counted.proc?.output() ?? '')?.[1];
    const { sample, proc } = await startOnce(target, e, pollMs, false, 0, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval', '250'], true);
    await proc?.stop();
    const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
    const main = files.find((f) => f.split('.')[4] === '0') ?? files[0];
    if (!main) throw new Error('no CPU profile written');
    const profile = JSON.parse(await readFile(join(dir, main), 'utf8')) as Parameters<typeof summariseStartProfile>[0];
    const parsed = counts ? (JSON.parse(counts) as { cjs: number; esm: number }) : undefined;
    return {
      target: target.name,
      healthzMs: sample.healthzMs,
      ...summariseStartProfile(profile, sample.healthzMs),
      ...(parsed ? { cjsModules: parsed.cjs, esmModules: parsed.esm } : {}),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every target started `rounds` times, interleaved; RSS of the s3edge ones in `rssRounds` of them. */
export async function measureStart(opts: MeasureStartOptions = {}): Promise<StartFigures> {
  const rounds = opts.rounds ?? 10;
  const rssRounds = Math.min(opts.rssRounds ?? 3, rounds);
  const settleMs = opts.settleMs ?? 5000;
  const pollMs = opts.pollMs ?? 5;
  const nodePath = opts.nodePath ?? process.execPath;
  const binary = opts.binary === null ? undefined : (opts.binary ?? defaultBinary());
  const log = opts.log ?? (() => undefined);
  const notes: string[] = [];
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-start-'));
  rememberTempDir(dir);
  const e: Env = {
    dataDir: join(dir, 'data'),
    env: cleanEnv({
      S3EDGE_ROOT_ACCESS_KEY: `BENCH${randomBytes(6).toString('hex').toUpperCase()}`,
      S3EDGE_ROOT_SECRET_KEY: randomBytes(30).toString('base64url'),
      // The binary's unpacked tree: in this run's directory, unpacked by its first start (not timed below).
      XDG_CACHE_HOME: join(dir, 'cache'),
    }),
  };
  const targets: StartTarget[] = [
    { name: 'node -e 0', kind: 'node-exit', command: [nodePath] },
    { name: 'bare node:http', kind: 'node-http', command: [nodePath] },
    ...s3edgeTargets(opts.workers ?? [1, 2], binary, nodePath),
    ...(opts.compare ?? []).flatMap((c) => s3edgeTargets(opts.workers ?? [1, 2], defaultBinary(c.root), nodePath, c.root, c.label)),
    ...(opts.withoutCompileCache
      ? s3edgeTargets(opts.workers ?? [1, 2], binary, nodePath, repoRoot(), 'no compile cache').map((t) => ({ ...t, env: { NODE_DISABLE_COMPILE_CACHE: '1' } }))
      : []),
  ];
  const figures: TargetFigures[] = targets.map((target) => ({ target, samples: [], rss: [], rssAfterApi: [], errors: [] }));
  const meter = new CpuMeter(() => []);
  const loadBefore = loadavg();
  try {
    log('preparing the data directory (one start)');
    await prepareDataDir(e, nodePath, pollMs);
    // Each binary's tree is unpacked by its first start: one start each, not timed.
    for (const bt of targets.filter((x) => x.command?.[0] !== nodePath && x.kind === 's3edge' && x.workers === 1)) {
      log(`unpacking ${bt.name} (one start, not timed)`);
      const { proc } = await startOnce(bt, e, pollMs, false, 0);
      await proc?.stop();
    }
    const from = meter.snapshot();
    for (let round = 0; round < rounds; round++) {
      for (const f of figures) {
        const withRss = f.target.kind === 's3edge' && round < rssRounds;
        try {
          const { sample, rss, rssAfterApi, proc } = await startOnce(f.target, e, pollMs, withRss, settleMs);
          await proc?.stop();
          f.samples.push(sample);
          if (rss) f.rss.push(rss);
          if (rssAfterApi) f.rssAfterApi.push(rssAfterApi);
          log(`round ${round + 1}/${rounds} ${f.target.name}: ${sample.healthzMs.toFixed(0)} ms${rss ? `, idle RSS ${(rss.totalKiB / 1024).toFixed(0)} MiB` : ''}`);
        } catch (err) {
          f.errors.push((err as Error).message.split('\n')[0] ?? 'failed');
          log(`round ${round + 1}/${rounds} ${f.target.name}: ${(err as Error).message}`);
        }
      }
    }
    const otherCores = meter.otherCores(from);
    let profile: StartProfile | undefined;
    if (opts.profile !== false) {
      log('profiling one start of s3edge w1');
      try {
        profile = await profileStart(e, nodePath, pollMs);
      } catch (err) {
        notes.push(`The profiled start failed: ${(err as Error).message.split('\n')[0]}`);
      }
    }
    if (!binary) notes.push('No single binary was found (dist/s3edge-<platform>-<arch>; `npm run build:binary`): its rows are absent.');
    return {
      node: (await nodeVersion(nodePath)) ?? process.version,
      cores: cpus().length,
      loadBefore,
      loadAfter: loadavg(),
      rounds,
      pollMs,
      settleMs,
      targets: figures,
      ...(profile ? { profile } : {}),
      otherCores,
      notes,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    forgetTempDir(dir);
  }
}

async function nodeVersion(nodePath: string): Promise<string | undefined> {
  const proc = spawnManaged(nodePath, ['-p', 'process.version'], {});
  await proc.exited;
  return proc.output().trim() || undefined;
}

const ms = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? 'n/a' : `${v.toFixed(0)}`);
const mib = (kib: number): string => (kib / 1024).toFixed(0);

/** The "Start and memory" section: times to the first answers, the idle RSS per process, the profile. */
export function renderStartSection(f: StartFigures, heading = '## Start and memory'): string {
  const lines: string[] = [heading, ''];
  lines.push(
    `${f.rounds} starts per target, interleaved, on a data directory that exists; polled every ${f.pollMs} ms over fresh connections.`,
    `Node ${f.node}, ${f.cores} cores; load average ${f.loadBefore.map((x) => x.toFixed(2)).join(' ')} before, ${f.loadAfter.map((x) => x.toFixed(2)).join(' ')} after; other processes used ${f.otherCores.toFixed(2)} cores meanwhile.`,
    '',
    'Medians; the first API answer is of the starts whose idle memory was not read (those make no API request before), asked once /healthz and S3 have answered (its build holds the event loop).',
    '',
    '| target | /healthz 200, median ms | min-max | listening line | first S3 answer | first API answer | CPU ms at /healthz (tree) |',
    '|---|---:|---:|---:|---:|---:|---:|',
  );
  for (const t of f.targets) {
    const s = t.samples;
    const h = s.map((x) => x.healthzMs);
    const pick = (k: keyof StartSample): string => {
      const v = s.map((x) => x[k]).filter((x): x is number => x !== undefined);
      return v.length ? ms(median(v)) : '';
    };
    const range = h.length ? `${ms(Math.min(...h))}-${ms(Math.max(...h))}` : 'n/a';
    const label = t.target.kind === 'node-exit' ? `${t.target.name} (to exit)` : t.target.name;
    lines.push(`| ${label} | ${ms(median(h))} | ${range} | ${pick('listeningMs')} | ${pick('s3Ms')} | ${pick('apiMs')} | ${pick('cpuMs')} |`);
    if (t.errors.length) lines.push(`| ${t.target.name}: ${t.errors.length} failed start(s): ${t.errors[0]} | | | | | | |`);
  }
  const withRss = f.targets.filter((t) => t.rss.length > 0);
  if (withRss.length) {
    lines.push(
      '',
      `Idle RSS of the whole process tree ${(f.settleMs / 1000).toFixed(0)} s after the start, no management request made (median of ${withRss[0]?.rss.length} starts; MiB); then the same a moment after one management API request (the worker it reached built the API).`,
      "PSS: the tree's proportional set size, each page its processes share counted once (RSS counts it in every process: node's code, and the more of it the more of the executable the page cache holds, as right after a build).",
      '',
    );
    lines.push('| target | idle total | idle PSS | per process | after one API request | per process |', '|---|---:|---:|---|---:|---|');
    // The per-process split of the start whose total is the median (or nearest it).
    const middle = (rs: RssSample[]): { total: string; pss: string; split: string } => {
      if (rs.length === 0) return { total: 'n/a', pss: 'n/a', split: '' };
      const mid = median(rs.map((r) => r.totalKiB));
      const shown = [...rs].sort((a, b) => Math.abs(a.totalKiB - mid) - Math.abs(b.totalKiB - mid))[0];
      return { total: mib(mid), pss: mib(median(rs.map((r) => r.totalPssKiB))), split: shown ? shown.processes.map((p) => `${p.role} ${mib(p.rssKiB)}`).join(', ') : '' };
    };
    for (const t of withRss) {
      const idle = middle(t.rss);
      const api = middle(t.rssAfterApi);
      lines.push(`| ${t.target.name} | ${idle.total} | ${idle.pss} | ${idle.split} | ${api.total} | ${api.split} |`);
    }
  }
  const p = f.profile;
  if (p) {
    lines.push(
      '',
      `Where the time goes: one more start of ${p.target} under \`--cpu-prof\`, polled on /healthz only (${ms(p.healthzMs)} ms to its 200 with the profiler on), its main thread up to that moment:`,
      `${ms(p.moduleLoadingMs)} ms loading modules (resolving, reading, compiling and running their top level), ${ms(p.startupMs)} ms of start-up work, ${ms(p.gcMs)} ms GC, ${ms(p.idleMs)} ms idle (waiting on I/O, threads, timers)` +
        (p.cjsModules !== undefined ? `; ${p.esmModules} ES modules and ${p.cjsModules} CommonJS modules loaded by then.` : '.'),
      '',
      '| module loading, by package | ms | | start-up work, by package | ms |',
      '|---|---:|---|---|---:|',
    );
    const n = Math.max(p.loading.length, p.startup.length);
    for (let i = 0; i < Math.min(n, 12); i++) {
      const a = p.loading[i];
      const b = p.startup[i];
      lines.push(`| ${a?.area ?? ''} | ${a ? ms(a.ms) : ''} | | ${b?.area ?? ''} | ${b ? ms(b.ms) : ''} |`);
    }
  }
  if (f.notes.length) lines.push('', ...f.notes.map((n) => `- ${n}`));
  return lines.join('\n') + '\n';
}

export function startResultsFile(): string {
  return join(repoRoot(), 'bench', 'RESULTS-start.md');
}
