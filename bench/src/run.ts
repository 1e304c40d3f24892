// One benchmark run: start the targets, prepare objects, run every cell round by round with the
// targets interleaved (the order rotates each round), measure RSS under a 10 GiB streamed upload and
// with idle keep-alive connections, stop everything, write the report.
import type { FastpathCellName } from './fastpath-report.js';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cdnLogCounters, type CdnLogCounters } from './cdn.js';
import { computeFigures, renderCdnSection, renderReport, spliceSection, type BenchResult, type CellResult, type RssFigures } from './report.js';
import { fullPlan, smokePlan, type CellSpec, type Plan, type PlanOptions } from './plan.js';
import type { Bound } from './workloads.js';
import { CpuMeter } from './proc.js';
import { profileCell, type ProfileSummary } from './profile.js';
import {
  ensureNginx,
  startCeiling,
  startMoto,
  startNginx,
  startS3edge,
  startS3rver,
  versions,
  type Target,
  type TargetName,
} from './targets.js';
import { Bodies, GiB, TargetRunner, idleConnections, median, sizeLabel, streamedUpload, type RoundStats } from './workloads.js';

export interface BenchOptions extends PlanOptions {
  smoke?: boolean;
  /** Where the report goes. */
  out: string;
  /** Also write the raw results as JSON here. */
  json?: string;
  skipRss?: boolean;
  s3edgeEnv?: Record<string, string>;
  /** s3edge's bytes live on an upstream S3 (bench/src/upstream.ts); set by main before the run. */
  upstream?: boolean;
  /** The hashing comparison (bench/src/hashing.ts) instead of the matrix. */
  hashing?: boolean;
  /** --log-rows: the request log's rows on SQLite (bench/src/log-rows.ts). */
  logRows?: boolean;
  /** --busy-lock: GETs while meta.db is locked by another connection (bench/src/busy-lock.ts). */
  busyLock?: boolean;
  /** Domain search throughput, cached answers (bench/src/domains.ts) instead of the matrix. */
  domains?: boolean;
  /** The edge proxy vs nginx proxy_pass (bench/src/proxy.ts) instead of the matrix. */
  proxy?: boolean;
  /** s3edge --workers 1 vs 2 and nginx alike (bench/src/scale.ts) instead of the matrix. */
  scale?: boolean;
  /** --scale's worker counts (--scale-workers; default 1,2). */
  scaleWorkers?: readonly number[];
  /** --scale: s3edge on PostgreSQL too (--scale-postgres, the default; --no-scale-postgres: off). */
  scalePostgres?: boolean;
  /** --scale's load generator (--load; default node: this process's client; wrk: bench/src/wrk.ts). */
  load?: 'node' | 'wrk';
  /** Issue 30's fast path: s3edge's hot paths vs the bare node cluster, nginx and Varnish with wrk (bench/src/fastpath.ts). */
  fastpath?: boolean;
  /** --fastpath's worker counts (--fastpath-workers; default 1,2). */
  fastpathWorkers?: readonly number[];
  /** --fastpath's s3edge cells (--fastpath-cells; default all, smoke: cdn,presigned,signed). */
  fastpathCells?: readonly FastpathCellName[];
  /** --fastpath's untimed wrk run of every column before each concurrency's rounds, in seconds (--fastpath-warmup; default 1). */
  fastpathWarmup?: number;
  /** --fastpath-bare-work: µs of CPU the extra bare columns spin per answer. */
  fastpathBareWork?: number[];
  /** --start: start times and idle memory (bench/src/start.ts). */
  start?: boolean;
  /** --start-binary: the single binary to time (default dist/s3edge-<platform>-<arch> when built; none: skip). */
  startBinary?: string;
  /** --start-node: the node that runs s3edge (e.g. a Node 24). */
  startNode?: string;
  /** --start-compare [LABEL=]DIR (repeatable): other builds started beside this one. */
  startCompare?: string[];
  /** --fastpath-compare [LABEL=]DIR, repeatable: another build's s3edge cells beside this one's. */
  fastpathCompare?: string[];
  /** --start-no-compile-cache. */
  startWithoutCompileCache?: boolean;
  /** Distinct client IPs of the proxy's memory pass (--proxy-clients). */
  proxyClients?: number;
  s3edgeArgs?: readonly string[];
  s3edgeNodeArgs?: readonly string[];
  log?: (line: string) => void;
  /** The command line, quoted in the report. */
  command?: string;
  /** Profile s3edge in the cells of missed figures (default: on in a full run, off in smoke). */
  profileMisses?: boolean;
  /** Also replace the CDN section of this file (bench/RESULTS.md) with this run's: a CDN-only run. */
  cdnResults?: string;
}

function cellName(c: { workload: string; size: number; concurrency: number }): string {
  return `${c.workload} ${c.size ? sizeLabel(c.size) : ''} c${c.concurrency}`.replace(/\s+/g, ' ');
}

function fmt(n: number, digits = 1): string {
  return n >= 100 ? n.toFixed(0) : n.toFixed(digits);
}

async function startTarget(name: TargetName, opts: BenchOptions, nginxBinary: string | undefined): Promise<Target> {
  switch (name) {
    case 's3edge':
      return startS3edge({ env: opts.s3edgeEnv, args: opts.s3edgeArgs, nodeArgs: opts.s3edgeNodeArgs });
    case 's3rver':
      return startS3rver();
    case 'moto':
      return startMoto();
    case 'nginx':
      return startNginx(nginxBinary!);
    case 'ceiling':
      return startCeiling();
  }
}

export async function runBench(opts: BenchOptions): Promise<BenchResult> {
  const log = opts.log ?? ((s: string) => process.stderr.write(s + '\n'));
  const plan: Plan = opts.smoke ? smokePlan() : fullPlan(opts);
  const started = new Date();
  const t0 = performance.now();
  const load0 = loadavg()[0] ?? 0;
  const notes: string[] = [];

  const wanted = new Set<TargetName>();
  for (const c of plan.cells) for (const t of c.targets) wanted.add(t);
  let nginxBinary: string | undefined;
  if (wanted.has('nginx')) {
    nginxBinary = ensureNginx(log);
    if (!nginxBinary) {
      wanted.delete('nginx');
      notes.push('nginx is not installed (as root the harness runs `apt-get install -y nginx`): its cells are missing.');
    }
  }
  for (const c of plan.cells) c.targets = c.targets.filter((t) => wanted.has(t));

  const bodies = new Bodies();
  const runners = new Map<TargetName, TargetRunner>();
  const targets: Target[] = [];
  const maxConc = Math.max(...plan.cells.map((c) => c.concurrency));
  const cells: CellResult[] = [];
  let leftovers = 0;
  const otherCpu: number[] = [];
  const cpu = new CpuMeter(() => targets.map((t) => t.pid));
  let rss: RssFigures | undefined;
  let cdnLog: CdnLogCounters | undefined;
  try {
    for (const name of ['s3edge', 's3rver', 'moto', 'ceiling', 'nginx'] as const) {
      if (!wanted.has(name)) continue;
      let target: Target;
      try {
        target = await startTarget(name, opts, nginxBinary);
      } catch (err) {
        if (name === 's3edge') throw err;
        // A peer that cannot start leaves its cells out; the report says so.
        wanted.delete(name);
        for (const c of plan.cells) c.targets = c.targets.filter((t) => t !== name);
        notes.push(`${name} did not start, so its cells are missing: ${(err as Error).message.split('\n')[0] ?? ''}`);
        log(`bench: ${name} did not start: ${(err as Error).message}`);
        continue;
      }
      targets.push(target);
      const runner = new TargetRunner(target, bodies, maxConc);
      await runner.createBuckets();
      runners.set(name, runner);
      log(`bench: ${name} at ${target.url} (pid ${target.pid})`);
    }

    for (const spec of plan.cells) {
      const active = spec.targets.map((t) => runners.get(t)).filter((r): r is TargetRunner => r !== undefined);
      await prepare(plan, spec, active, log, notes);
      const lastRate = new Map<TargetName, number>();
      // DELETE consumes objects: before each round, enough for the round at the last rate seen.
      const topUp = async (r: TargetRunner, bound: Bound): Promise<void> => {
        if (spec.workload !== 'DELETE') return;
        const secs = (bound.durationMs ?? 0) / 1000;
        const want = bound.ops ?? Math.min(30_000, Math.ceil((lastRate.get(r.name) ?? 100) * secs * 1.3) + 50);
        await r.ensureDeletable(spec.size, want);
      };
      for (const r of active) {
        await topUp(r, spec.warmup);
        const w = await r.round(spec.workload, spec.size, spec.concurrency, spec.warmup);
        lastRate.set(r.name, w.opsPerSec);
        leftovers += await r.cleanUp();
      }
      const rounds = new Map<TargetName, RoundStats[]>(active.map((r) => [r.name, []]));
      for (let round = 0; round < plan.rounds; round++) {
        const order = active.map((_, i) => active[(i + round) % active.length]!);
        const line: string[] = [];
        for (const r of order) {
          await topUp(r, spec.bound);
          const s = await r.round(spec.workload, spec.size, spec.concurrency, spec.bound, cpu);
          lastRate.set(r.name, Math.max(s.opsPerSec, lastRate.get(r.name) ?? 0));
          leftovers += await r.cleanUp();
          rounds.get(r.name)!.push(s);
          line.push(`${r.name} ${fmt(s.opsPerSec)} op/s${s.errors ? ` ${s.errors} ERR` : ''}`);
          otherCpu.push(s.otherCpu);
        }
        log(`bench: ${cellName(spec)} round ${round + 1}/${plan.rounds}: ${line.join(', ')}; other processes ${Math.max(...otherCpu.slice(-order.length)).toFixed(2)} cores`);
      }
      for (const r of active) cells.push(summarise(spec, r.name, rounds.get(r.name)!));
    }

    const edge = runners.get('s3edge');
    if (edge && plan.cells.some((c) => c.workload === 'CDN')) cdnLog = await cdnLogCounters(edge.target).catch(() => undefined);

    if (!opts.skipRss) rss = await rssFigures(plan, opts, log);
  } finally {
    for (const r of runners.values()) await r.close().catch(() => undefined);
    for (const t of targets) await t.stop().catch(() => undefined);
  }

  if (leftovers > 0) notes.push(`${leftovers} large objects could not be deleted between rounds (untimed clean-up; s3rver answers 500 to some concurrent deletes).`);
  if (otherCpu.length > 0) {
    const mean = otherCpu.reduce((a, b) => a + b, 0) / otherCpu.length;
    const busy = otherCpu.filter((c) => c > 0.25).length;
    notes.push(
      `Other processes on the machine used ${mean.toFixed(2)} cores on average during the timed rounds (max ${Math.max(...otherCpu).toFixed(2)} of 2); ` +
        `${busy} of ${otherCpu.length} rounds saw more than 0.25 cores of foreign load` +
        (busy > otherCpu.length / 10 ? ': the machine was shared while this ran, so treat large spreads as disturbance, not as the servers.' : '.'),
    );
  }
  const errors = cells.reduce((n, c) => n + c.errors, 0);
  if (errors > 0) notes.push(`${errors} ops failed in the timed rounds; see the errors column and the first error of each such cell below.`);
  const result: BenchResult = {
    mode: plan.mode,
    started: started.toISOString(),
    durationMs: performance.now() - t0,
    rounds: plan.rounds,
    roundMs: plan.roundMs,
    command: opts.command ?? (opts.smoke ? 'bench --smoke' : 'npm run bench'),
    versions: versions(wanted, nginxBinary),
    loadAvg: [load0, loadavg()[0] ?? 0],
    plan: {
      listObjects: plan.list.objects,
      listPage: plan.list.page,
      large: plan.large,
      small: plan.small,
      idleConnections: plan.idleConnections,
      streamedUploadBytes: plan.streamedUploadBytes,
    },
    cells,
    rss,
    ...(cdnLog ? { cdnLog } : {}),
    figures: [],
    notes,
  };
  result.figures = computeFigures(result);
  if (opts.profileMisses ?? plan.mode === 'full') result.profiles = await profileMisses(plan, result, opts, log);
  await mkdir(dirname(opts.out), { recursive: true });
  await writeFile(opts.out, renderReport(result));
  if (opts.json) await writeFile(opts.json, JSON.stringify(result, null, 2) + '\n');
  if (opts.cdnResults) {
    const existing = await readFile(opts.cdnResults, 'utf8').catch(() => '');
    await writeFile(opts.cdnResults, spliceSection(existing, renderCdnSection(result, true)));
    log(`bench: CDN section written to ${opts.cdnResults}`);
  }
  log(`bench: report written to ${opts.out} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  return result;
}

async function prepare(plan: Plan, spec: CellSpec, active: readonly TargetRunner[], log: (s: string) => void, notes: string[]): Promise<void> {
  const needsReadable = spec.workload === 'GET' || spec.workload === 'HEAD' || spec.workload === 'MIXED';
  if (needsReadable) {
    const n = plan.readable.get(spec.size) ?? 1;
    for (const r of active) await r.ensureReadable(spec.size, n);
  }
  if (spec.workload === 'CDN') {
    for (const r of active) await r.ensureCdnObject(spec.size);
  }
  if (spec.workload === 'MIXED') {
    const n = plan.mixPreload.get(spec.size) ?? 0;
    for (const r of active) await r.ensureMixQueue(spec.size, n);
  }
  if (spec.workload === 'LIST') {
    // All targets load at once (untimed): their PUT rates are mostly fsync and Python waits.
    await Promise.all(
      active.map(async (r) => {
        const count = plan.list.objects[r.name] ?? 0;
        if (r.listCount >= count) return;
        const t = performance.now();
        await r.ensureListObjects(count, plan.list.page, plan.list.preloadConcurrency, (done) => {
          if (plan.mode === 'full') log(`bench: ${r.name}: ${done} of ${count} list objects`);
        });
        const secs = (performance.now() - t) / 1000;
        const msg = `LIST preload: ${r.name} took ${secs.toFixed(0)} s for ${count} 1-byte objects (${fmt(count / secs)} PUT/s at ${plan.list.preloadConcurrency} connections, all targets loading at once).`;
        notes.push(msg);
        log(`bench: ${msg}`);
      }),
    );
  }
}

function summarise(spec: CellSpec, target: TargetName, rounds: readonly RoundStats[]): CellResult {
  const ops = rounds.map((r) => r.opsPerSec);
  const firstError = rounds.find((r) => r.firstError !== undefined)?.firstError;
  return {
    workload: spec.workload,
    size: spec.size,
    concurrency: spec.concurrency,
    target,
    rounds: [...rounds],
    opsPerSec: median(ops),
    mbPerSec: median(rounds.map((r) => r.mbPerSec)),
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    rssMaxKiB: Math.max(0, ...rounds.map((r) => r.rssMaxKiB)),
    otherCpu: Math.max(0, ...rounds.map((r) => r.otherCpu)),
    cpuUsPerOp: median(rounds.map((r) => r.cpuUsPerOp)),
    ops: rounds.reduce((n, r) => n + r.ops, 0),
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    bound: spec.bound.ops !== undefined ? `${spec.bound.ops} ops` : `${((spec.bound.durationMs ?? 0) / 1000).toFixed(0)} s`,
    spread: ops.length > 1 && Math.min(...ops) > 0 ? Math.max(...ops) / Math.min(...ops) - 1 : 0,
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

/** A fresh s3edge (max object size raised for the 10 GiB body): idle connections, then the upload. */
async function rssFigures(plan: Plan, opts: BenchOptions, log: (s: string) => void): Promise<RssFigures> {
  const maxObject = String(Math.max(plan.streamedUploadBytes, 5 * GiB) + GiB);
  const target = await startS3edge({ env: { ...opts.s3edgeEnv, S3EDGE_MAX_OBJECT_SIZE: maxObject }, args: opts.s3edgeArgs, nodeArgs: opts.s3edgeNodeArgs });
  const runner = new TargetRunner(target, new Bodies(), 1);
  try {
    await runner.createBuckets();
    const idle = await idleConnections(target, plan.idleConnections, plan.idleHoldMs);
    log(`bench: ${idle.connected} idle connections: s3edge RSS ${(idle.rssMaxKiB / 1024).toFixed(0)} MiB (baseline ${(idle.baselineKiB / 1024).toFixed(0)} MiB)`);
    const upload = await streamedUpload(target, plan.streamedUploadBytes, 'streamed/big');
    log(`bench: streamed upload of ${sizeLabel(plan.streamedUploadBytes)}: ${upload.ok ? 'ok' : `FAILED ${upload.error ?? ''}`}, ${fmt(upload.mbPerSec)} MB/s, s3edge RSS max ${(upload.rssMaxKiB / 1024).toFixed(0)} MiB`);
    return { idle, upload };
  } finally {
    await runner.close().catch(() => undefined);
    await target.stop();
  }
}

/** Each missed figure's s3edge cell once more, under --cpu-prof (run.ts's servers are all stopped by now). */
async function profileMisses(plan: Plan, result: BenchResult, opts: BenchOptions, log: (s: string) => void): Promise<ProfileSummary[]> {
  const out: ProfileSummary[] = [];
  for (const f of result.figures) {
    if (f.pass !== false || !f.cell) continue;
    const cell = f.cell;
    const spec = plan.cells.find((c) => c.workload === cell.workload && c.size === cell.size && c.concurrency === cell.concurrency);
    if (!spec) continue;
    log(`bench: profiling s3edge for the missed figure "${f.name}"`);
    out.push(
      await profileCell(f.name, cell, spec.bound, plan.readable.get(cell.size) ?? 1, {
        env: opts.s3edgeEnv,
        args: opts.s3edgeArgs,
        nodeArgs: opts.s3edgeNodeArgs,
      }),
    );
  }
  return out;
}
