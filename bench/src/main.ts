// bench entry point.
//   npm run bench                       (root) build s3edge, run everything, rewrite bench/RESULTS.md
//   node bench/dist/main.js --smoke     seconds: s3edge + ceiling, 4 KiB, a handful of ops; report to a temp file
// Options: --out FILE  --json FILE  --rounds N  --round-seconds S  --list-objects N  --moto-list-objects N
//          --targets s3edge,s3rver,...  --workloads PUT,GET,...,CDN  --sizes 4KiB,1MiB,256MiB  --concurrency 1,16  --skip-rss  --no-profile
//          --s3edge-env KEY=VALUE (repeatable)  --s3edge-arg ARG (repeatable)
//          --s3edge-node-arg ARG (repeatable: node flags, e.g. --cpu-prof --cpu-prof-dir=DIR)
//          --upstream (s3edge stores bytes on a moto of its own: compare with --targets s3edge,moto)
//          --hashing (hashing on the event loop vs in the worker: small-GET latency during 4 large uploads;
//          bench/RESULTS-hashing.md; --rounds, --out and --smoke apply)
//          --busy-lock (small GETs while another connection holds meta.db's lock for 10 s and PUTs wait;
//          bench/RESULTS-busy-lock.md; --out and --smoke apply)
//          --log-rows (the request log's rows on SQLite: CPU per request of the writer thread's inserts;
//          bench/RESULTS-log-rows.md; --rounds, --out and --smoke apply)
//          --domains (POST /api/v3/domains/search with cached answers vs a bare node:http JSON server;
//          bench/RESULTS-domains.md; --rounds, --round-seconds, --concurrency, --out and --smoke apply)
//          --proxy (the edge proxy vs nginx proxy_pass to one origin, then RSS under a million client IPs;
//          bench/RESULTS-proxy.md; --rounds, --round-seconds, --concurrency, --proxy-clients N, --out and --smoke apply)
//          --scale (s3edge --workers 1 vs 2 and nginx worker_processes 1 vs 2: 4 KiB S3 GET and CDN hit;
//          bench/RESULTS-scale.md; --rounds, --round-seconds, --concurrency (16,64), --scale-workers 1,2, --out and --smoke apply)
//          with --scale-postgres (default when PostgreSQL is installed; --no-scale-postgres: SQLite only): s3edge on PostgreSQL too
//          with --load node|wrk (the load generator: this process's client, default, or Debian's wrk with presigned S3 GETs)
//          --fastpath (issue 30: s3edge's CDN hit, presigned and header-signed S3 GET and edge proxy vs a bare node:http
//          cluster, nginx static and proxy_pass and Varnish, wrk -t1, 4 KiB; bench/RESULTS-fastpath.md; --rounds,
//          --round-seconds, --concurrency (16,64), --out and --smoke apply) with --fastpath-workers 1,2 and
//          --fastpath-cells cdn,presigned,signed,proxy, --fastpath-warmup S, --s3edge-node-arg,
//          --fastpath-compare [LABEL=]DIR (repeatable: another build's s3edge cells in the same run, e.g. the commit before),
//          --fastpath-bare-work US,... (the bare cluster again with US µs of CPU spun per answer: what an added µs costs here)
//          --start (time from spawn to the first /healthz 200 of serve --workers 1 and 2 and the single binary, beside
//          node -e 0 and a bare node:http server; idle RSS per process; a profiled start; bench/RESULTS-start.md;
//          --rounds (10), --out and --smoke apply) with --start-binary PATH|none, --start-node PATH (another node) and
//          --start-compare [LABEL=]DIR (repeatable: another build, e.g. the commit before, started beside this one),
//          --start-no-compile-cache (this build's rows again with Node's compile cache off, NODE_DISABLE_COMPILE_CACHE=1)
// A partial run (filters) still writes a full report, with n/a for the figures it did not measure.
// A CDN-only run (--workloads CDN, no --out) also replaces the CDN section of bench/RESULTS.md.
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { runBareCluster, runBareProxy } from './bare.js';
import { runCeilingServer } from './ceiling.js';
import { fastpathResultsFile, runFastpathBench, type FastpathOptions } from './fastpath.js';
import { FASTPATH_CELLS, type FastpathCellName } from './fastpath-report.js';
import { runHashingBench } from './hashing.js';
import { logRowsResultsFile, runLogRowsBench } from './log-rows.js';
import { busyLockResultsFile, runBusyLockBench } from './busy-lock.js';
import { domainsResultsFile, runDomainsBench, runJsonServer } from './domains.js';
import { installExitHandlers } from './proc.js';
import { proxyResultsFile, runOriginServer, runProxyBench } from './proxy.js';
import { formatFigure } from './report.js';
import { runBench, type BenchOptions } from './run.js';
import { runScaleBench, scaleResultsFile } from './scale.js';
import { measureStart, renderStartSection, startResultsFile } from './start.js';
import { WRK_MISSING, findWrk } from './wrk.js';
import { repoRoot, type TargetName } from './targets.js';
import { startUpstream, type Upstream } from './upstream.js';
import { GiB, KiB, MiB, type Workload } from './workloads.js';

export { runBench } from './run.js';
export type { BenchOptions } from './run.js';
export type { BenchResult, CellResult, Figure } from './report.js';
export { measureStart, renderStartSection } from './start.js';
export type { MeasureStartOptions, StartFigures } from './start.js';

const TARGETS: readonly TargetName[] = ['s3edge', 's3rver', 'moto', 'nginx', 'ceiling'];
const WORKLOADS: readonly Workload[] = ['PUT', 'GET', 'HEAD', 'DELETE', 'LIST', 'MIXED', 'CDN'];

export function parseBenchArgs(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      smoke: { type: 'boolean' },
      out: { type: 'string' },
      json: { type: 'string' },
      rounds: { type: 'string' },
      'round-seconds': { type: 'string' },
      'list-objects': { type: 'string' },
      'moto-list-objects': { type: 'string' },
      workloads: { type: 'string' },
      sizes: { type: 'string' },
      concurrency: { type: 'string' },
      targets: { type: 'string' },
      'skip-rss': { type: 'boolean' },
      'no-profile': { type: 'boolean' },
      's3edge-env': { type: 'string', multiple: true },
      's3edge-arg': { type: 'string', multiple: true },
      's3edge-node-arg': { type: 'string', multiple: true },
      upstream: { type: 'boolean' },
      hashing: { type: 'boolean' },
      'log-rows': { type: 'boolean' },
      'busy-lock': { type: 'boolean' },
      domains: { type: 'boolean' },
      proxy: { type: 'boolean' },
      'proxy-clients': { type: 'string' },
      scale: { type: 'boolean' },
      'scale-workers': { type: 'string' },
      'scale-postgres': { type: 'boolean' },
      'no-scale-postgres': { type: 'boolean' },
      load: { type: 'string' },
      fastpath: { type: 'boolean' },
      'fastpath-workers': { type: 'string' },
      'fastpath-cells': { type: 'string' },
      'fastpath-warmup': { type: 'string' },
      'fastpath-compare': { type: 'string', multiple: true },
      'fastpath-bare-work': { type: 'string' },
      start: { type: 'boolean' },
      'start-binary': { type: 'string' },
      'start-node': { type: 'string' },
      'start-compare': { type: 'string', multiple: true },
      'start-no-compile-cache': { type: 'boolean' },
    },
  });
  const smoke = values.smoke === true || process.env['BENCH_SMOKE'] === '1';
  const positive = (name: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number (got ${v})`);
    return n;
  };
  let targets: TargetName[] | undefined;
  if (values.targets !== undefined) {
    targets = [];
    for (const t of values.targets.split(',')) {
      const name = TARGETS.find((x) => x === t.trim());
      if (!name) throw new Error(`--targets: unknown target ${t} (known: ${TARGETS.join(', ')})`);
      targets.push(name);
    }
  }
  let workloads: Workload[] | undefined;
  if (values.workloads !== undefined) {
    workloads = [];
    for (const w of values.workloads.split(',')) {
      const name = WORKLOADS.find((x) => x === w.trim().toUpperCase());
      if (!name) throw new Error(`--workloads: unknown workload ${w} (known: ${WORKLOADS.join(', ')})`);
      workloads.push(name);
    }
  }
  let sizes: number[] | undefined;
  if (values.sizes !== undefined) {
    sizes = [];
    for (const s of values.sizes.split(',')) {
      const m = /^(\d+)\s*(KiB|MiB|GiB)$/i.exec(s.trim());
      if (!m?.[1] || !m[2]) throw new Error(`--sizes: want e.g. 4KiB,1MiB,256MiB (got ${s})`);
      sizes.push(Number(m[1]) * (m[2].toLowerCase() === 'kib' ? KiB : m[2].toLowerCase() === 'mib' ? MiB : GiB));
    }
  }
  let concurrency: number[] | undefined;
  if (values.concurrency !== undefined) {
    // --scale and --fastpath also measure 64 connections (a server with more workers may need more to fill them).
    const allowed = values.scale === true || values.fastpath === true ? [1, 16, 64] : [1, 16];
    concurrency = values.concurrency.split(',').map((c) => {
      const n = Number(c.trim());
      if (!allowed.includes(n)) throw new Error(`--concurrency: want ${allowed.slice(0, -1).join(', ')} and/or ${allowed[allowed.length - 1]} (got ${c})`);
      return n;
    });
  }
  let scaleWorkers: number[] | undefined;
  if (values['scale-workers'] !== undefined) {
    scaleWorkers = values['scale-workers'].split(',').map((w) => {
      const n = Number(w.trim());
      if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`--scale-workers: want worker counts from 1 to 64, e.g. 1,2 (got ${w})`);
      return n;
    });
    // The ratios are over one worker: measure it first.
    if (!scaleWorkers.includes(1)) scaleWorkers.unshift(1);
    scaleWorkers = [...new Set(scaleWorkers)].sort((a, b) => a - b);
  }
  let fastpathWorkers: number[] | undefined;
  if (values['fastpath-workers'] !== undefined) {
    if (values.fastpath !== true) throw new Error('--fastpath-workers applies to --fastpath only');
    fastpathWorkers = values['fastpath-workers'].split(',').map((w) => {
      const n = Number(w.trim());
      if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`--fastpath-workers: want worker counts from 1 to 64, e.g. 1,2 (got ${w})`);
      return n;
    });
    fastpathWorkers = [...new Set(fastpathWorkers)].sort((a, b) => a - b);
  }
  let fastpathCells: FastpathCellName[] | undefined;
  if (values['fastpath-cells'] !== undefined) {
    if (values.fastpath !== true) throw new Error('--fastpath-cells applies to --fastpath only');
    fastpathCells = [];
    for (const c of values['fastpath-cells'].split(',')) {
      const name = FASTPATH_CELLS.find((x) => x === c.trim().toLowerCase());
      if (!name) throw new Error(`--fastpath-cells: unknown cell ${c} (known: ${FASTPATH_CELLS.join(', ')})`);
      if (!fastpathCells.includes(name)) fastpathCells.push(name);
    }
  }
  if (values['fastpath-compare'] !== undefined && values.fastpath !== true) throw new Error('--fastpath-compare applies to --fastpath only');
  let fastpathBareWork: number[] | undefined;
  if (values['fastpath-bare-work'] !== undefined) {
    if (values.fastpath !== true) throw new Error('--fastpath-bare-work applies to --fastpath only');
    fastpathBareWork = values['fastpath-bare-work'].split(',').map((w) => {
      const n = Number(w);
      if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new Error(`--fastpath-bare-work: want whole µs from 1 to 10000, e.g. 5,10,20 (got ${w})`);
      return n;
    });
  }
  let fastpathWarmup: number | undefined;
  if (values['fastpath-warmup'] !== undefined) {
    if (values.fastpath !== true) throw new Error('--fastpath-warmup applies to --fastpath only');
    fastpathWarmup = Number(values['fastpath-warmup']);
    // wrk's -d is whole seconds; 0 turns the warm-up off.
    if (!Number.isInteger(fastpathWarmup) || fastpathWarmup < 0 || fastpathWarmup > 600) {
      throw new Error(`--fastpath-warmup: want whole seconds from 0 to 600 (got ${values['fastpath-warmup']})`);
    }
  }
  let load: 'node' | 'wrk' | undefined;
  if (values.load !== undefined) {
    if (values.scale !== true) throw new Error('--load applies to --scale only');
    if (values.load !== 'node' && values.load !== 'wrk') throw new Error(`--load: want node or wrk (got ${values.load})`);
    load = values.load;
  }
  let scalePostgres: boolean | undefined;
  if (values['scale-postgres'] === true || values['no-scale-postgres'] === true) {
    if (values.scale !== true) throw new Error('--scale-postgres and --no-scale-postgres apply to --scale only');
    if (values['scale-postgres'] === true && values['no-scale-postgres'] === true) throw new Error('--scale-postgres or --no-scale-postgres, not both');
    scalePostgres = values['scale-postgres'] === true;
  }
  const s3edgeEnv: Record<string, string> = {};
  for (const kv of values['s3edge-env'] ?? []) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new Error(`--s3edge-env wants KEY=VALUE (got ${kv})`);
    s3edgeEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  // Only a full, unfiltered run rewrites bench/RESULTS.md unless told where to write.
  if ((values['start-binary'] !== undefined || values['start-node'] !== undefined || values['start-compare'] !== undefined || values['start-no-compile-cache'] !== undefined) && values.start !== true) {
    throw new Error('--start-binary, --start-node, --start-compare and --start-no-compile-cache apply to --start only');
  }
  const partial = smoke || values.start === true || values.fastpath === true || values.upstream === true || values.hashing === true || values['log-rows'] === true || values['busy-lock'] === true || values.domains === true || values.proxy === true || values.scale === true || workloads !== undefined || sizes !== undefined || targets !== undefined || concurrency !== undefined;
  // A --fastpath run of some cells, worker counts or connection counts is a draft: a temp file unless told where.
  const fastpathSubset = fastpathCells !== undefined || fastpathWorkers !== undefined || concurrency !== undefined || values['fastpath-compare'] !== undefined || fastpathBareWork !== undefined;
  const results = join(repoRoot(), 'bench', 'RESULTS.md');
  const hashingResults = join(repoRoot(), 'bench', 'RESULTS-hashing.md');
  const out = values.out ?? (values.fastpath === true && !smoke && !fastpathSubset ? fastpathResultsFile() : values.hashing === true && !smoke ? hashingResults : values['log-rows'] === true && !smoke ? logRowsResultsFile() : values['busy-lock'] === true && !smoke ? busyLockResultsFile() : values.domains === true && !smoke ? domainsResultsFile() : values.proxy === true && !smoke ? proxyResultsFile() : values.scale === true && !smoke ? scaleResultsFile() : values.start === true && !smoke ? startResultsFile() : partial ? join(tmpdir(), `s3edge-bench-${smoke ? 'smoke' : 'partial'}-${process.pid}.md`) : results);
  const cdnOnly = !smoke && values.out === undefined && workloads !== undefined && workloads.every((w) => w === 'CDN');
  const rounds = positive('rounds', values.rounds);
  return {
    smoke,
    out,
    ...(values.json !== undefined ? { json: values.json } : {}),
    ...(rounds !== undefined ? { rounds: Math.round(rounds) } : {}),
    ...(values['round-seconds'] !== undefined ? { roundSeconds: positive('round-seconds', values['round-seconds']) } : {}),
    ...(values['list-objects'] !== undefined ? { listObjects: Math.round(positive('list-objects', values['list-objects']) ?? 0) } : {}),
    ...(values['moto-list-objects'] !== undefined ? { motoListObjects: Math.round(positive('moto-list-objects', values['moto-list-objects']) ?? 0) } : {}),
    ...(targets ? { targets } : {}),
    ...(workloads ? { workloads } : {}),
    ...(sizes ? { sizes } : {}),
    ...(concurrency ? { concurrency } : {}),
    // The RSS figures (a 10 GiB upload) say nothing about the CDN.
    skipRss: values['skip-rss'] === true || cdnOnly,
    ...(values['no-profile'] === true ? { profileMisses: false } : {}),
    s3edgeEnv,
    ...(values.upstream === true ? { upstream: true } : {}),
    ...(values.hashing === true ? { hashing: true } : {}),
    ...(values['log-rows'] === true ? { logRows: true } : {}),
    ...(values['busy-lock'] === true ? { busyLock: true } : {}),
    ...(values.domains === true ? { domains: true } : {}),
    ...(values.proxy === true ? { proxy: true } : {}),
    ...(values.scale === true ? { scale: true } : {}),
    ...(values.fastpath === true ? { fastpath: true } : {}),
    ...(fastpathWorkers ? { fastpathWorkers } : {}),
    ...(fastpathCells ? { fastpathCells } : {}),
    ...(fastpathWarmup !== undefined ? { fastpathWarmup } : {}),
    ...(fastpathBareWork ? { fastpathBareWork } : {}),
    ...(scaleWorkers ? { scaleWorkers } : {}),
    ...(scalePostgres !== undefined ? { scalePostgres } : {}),
    ...(load ? { load } : {}),
    ...(values.start === true ? { start: true } : {}),
    ...(values['start-binary'] !== undefined ? { startBinary: values['start-binary'] } : {}),
    ...(values['start-node'] !== undefined ? { startNode: values['start-node'] } : {}),
    ...(values['start-compare'] !== undefined ? { startCompare: values['start-compare'] } : {}),
    ...(values['fastpath-compare'] !== undefined ? { fastpathCompare: values['fastpath-compare'] } : {}),
    ...(values['start-no-compile-cache'] === true ? { startWithoutCompileCache: true } : {}),
    ...(values['proxy-clients'] !== undefined ? { proxyClients: Math.round(positive('proxy-clients', values['proxy-clients']) ?? 0) } : {}),
    s3edgeArgs: values['s3edge-arg'] ?? [],
    s3edgeNodeArgs: values['s3edge-node-arg'] ?? [],
    ...(cdnOnly ? { cdnResults: results } : {}),
    command: argv.length ? `node bench/dist/main.js ${argv.join(' ')}` : 'npm run bench',
  };
}

/** --fastpath's configuration from the arguments; smoke: s3edge and the bare ceiling only, one worker, 1 s rounds, a small hit-ratio pass. */
export function fastpathOptions(opts: BenchOptions): FastpathOptions {
  return {
    rounds: opts.rounds ?? (opts.smoke ? 1 : 5),
    // wrk's -d is whole seconds.
    roundSeconds: opts.smoke ? 1 : Math.max(1, Math.round(opts.roundSeconds ?? 3)),
    warmupSeconds: opts.fastpathWarmup ?? (opts.smoke ? 0 : 1),
    concurrency: opts.concurrency ?? (opts.smoke ? [4] : [16, 64]),
    workers: opts.fastpathWorkers ?? (opts.smoke ? [1] : [1, 2]),
    cells: opts.fastpathCells ?? (opts.smoke ? ['cdn', 'presigned', 'signed'] : FASTPATH_CELLS),
    nginx: !opts.smoke,
    varnish: !opts.smoke,
    objects: opts.smoke ? 8 : 256,
    hitObjects: opts.smoke ? 4 : 32,
    hitRequests: opts.smoke ? 3 : 20,
    out: opts.out,
    nodeArgs: opts.s3edgeNodeArgs ?? [],
    ...(opts.fastpathCompare !== undefined ? { compare: opts.fastpathCompare.map(parseCompare) } : {}),
    ...(opts.fastpathBareWork !== undefined ? { bareWork: opts.fastpathBareWork } : {}),
    command: opts.command ?? 'node bench/dist/main.js --fastpath',
    ...(opts.log ? { log: opts.log } : {}),
  };
}

/** --start-compare / --fastpath-compare LABEL=DIR (or DIR: labelled "before"): another build's repository root. */
function parseCompare(value: string): { label: string; root: string } {
  const eq = value.indexOf('=');
  return eq > 0 ? { label: value.slice(0, eq), root: value.slice(eq + 1) } : { label: 'before', root: value };
}

export async function main(argv: readonly string[]): Promise<number> {
  if (argv[0] === '--internal-json-server') {
    const file = argv[1];
    if (!file) throw new Error('--internal-json-server FILE');
    await runJsonServer(file);
    return -1; // keep running
  }
  if (argv[0] === '--internal-origin-server') {
    await runOriginServer();
    return -1; // keep running
  }
  if (argv[0] === '--internal-bare-cluster') {
    const workers = Number(argv[1]);
    const workUs = Number(argv[2] ?? 0);
    if (!Number.isInteger(workers) || workers < 1 || !Number.isInteger(workUs) || workUs < 0) throw new Error('--internal-bare-cluster WORKERS [WORK_US]');
    await runBareCluster(workers, workUs);
    return -1; // keep running
  }
  if (argv[0] === '--internal-bare-proxy') {
    const workers = Number(argv[1]);
    const origin = argv[2];
    if (!Number.isInteger(workers) || workers < 1 || !origin) throw new Error('--internal-bare-proxy WORKERS ORIGIN_URL');
    await runBareProxy(workers, origin);
    return -1; // keep running
  }
  if (argv[0] === '--internal-ceiling-server') {
    const dir = argv[1];
    if (!dir) throw new Error('--internal-ceiling-server DIR');
    await runCeilingServer(dir);
    return -1; // keep running
  }
  let opts: BenchOptions;
  try {
    opts = parseBenchArgs(argv);
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n`);
    return 2;
  }
  installExitHandlers();
  if (opts.hashing) {
    const MiB = 1024 * 1024;
    const result = await runHashingBench({
      rounds: opts.rounds ?? (opts.smoke ? 1 : 4),
      uploads: 4,
      uploadBytes: opts.smoke ? 2 * MiB : 256 * MiB,
      getBytes: 4 * 1024,
      getRate: 200,
      idleMs: opts.smoke ? 300 : 3000,
      out: opts.out,
      command: opts.command ?? 'node bench/dist/main.js --hashing',
    });
    for (const s of result.summary) {
      process.stdout.write(`${s.variant}: GET p99 idle ${s.idleP99Ms.toFixed(2)} ms, during uploads ${s.loadedP99Ms.toFixed(2)} ms; uploads ${s.uploadMBps.toFixed(0)} MB/s\n`);
    }
    process.stdout.write(`report: ${opts.out}\n`);
    return result.summary.some((s) => s.errors > 0) ? 1 : 0;
  }
  if (opts.busyLock) {
    const result = await runBusyLockBench({
      lockMs: opts.smoke ? 1500 : 10_000,
      idleMs: opts.smoke ? 500 : 3000,
      getRate: 200,
      out: opts.out,
      command: opts.command ?? 'node bench/dist/main.js --busy-lock',
    });
    process.stdout.write(result.report);
    process.stdout.write(`report: ${opts.out}\n`);
    return result.idle.errors + result.locked.errors > 0 ? 1 : 0;
  }
  if (opts.logRows) {
    const result = await runLogRowsBench({
      rounds: opts.rounds ?? (opts.smoke ? 1 : 5),
      records: opts.smoke ? 256 : 16384,
      flush: opts.smoke ? 64 : 4096,
      preload: opts.smoke ? 256 : 200_000,
      out: opts.out,
      command: opts.command ?? 'node bench/dist/main.js --log-rows',
    });
    process.stdout.write(`${result.report.split('\n').filter((l) => l.startsWith('| ')).join('\n')}\n`);
    process.stdout.write(`report: ${opts.out}\n`);
    return 0;
  }
  if (opts.domains) {
    const cells = await runDomainsBench({
      rounds: opts.rounds ?? (opts.smoke ? 1 : 3),
      roundMs: opts.smoke ? 300 : (opts.roundSeconds ?? 3) * 1000,
      concurrency: opts.concurrency ?? [1, 16],
      out: opts.out,
      command: opts.command ?? 'node bench/dist/main.js --domains',
      ...(opts.s3edgeNodeArgs ? { s3edgeNodeArgs: opts.s3edgeNodeArgs } : {}),
    });
    process.stdout.write(`report: ${opts.out}\n`);
    return cells.some((c) => c.target === 's3edge' && c.rounds.some((r) => r.errors > 0)) ? 1 : 0;
  }
  if (opts.proxy) {
    const result = await runProxyBench({
      rounds: opts.rounds ?? (opts.smoke ? 1 : 3),
      roundMs: opts.smoke ? 300 : (opts.roundSeconds ?? 3) * 1000,
      concurrency: opts.concurrency ?? [1, 16],
      clients: opts.proxyClients ?? (opts.smoke ? 2000 : 1_000_000),
      clientConnections: 32,
      nginx: !opts.smoke,
      out: opts.out,
      command: opts.command ?? 'node bench/dist/main.js --proxy',
      ...(opts.s3edgeNodeArgs ? { s3edgeNodeArgs: opts.s3edgeNodeArgs } : {}),
    });
    process.stdout.write(`report: ${opts.out}\n`);
    const failed = result.cells.some((c) => c.target === 's3edge' && c.rounds.some((r) => r.errors > 0)) || result.memory.firstError !== undefined;
    return failed ? 1 : 0;
  }
  if (opts.fastpath) {
    if (!findWrk()) {
      process.stderr.write(`bench: ${WRK_MISSING.replace('--load wrk', '--fastpath')}\n`);
      return 2;
    }
    // Start and idle memory first, on a machine nothing of this run loads yet (a smoke run leaves them to --start).
    let startAndMemory: string | undefined;
    if (!opts.smoke && (opts.fastpathCells === undefined || opts.fastpathCells.length === 4)) {
      const figures = await measureStart({ rounds: 5, rssRounds: 2, settleMs: 3000, workers: [1, 2], profile: false, log: (line) => process.stderr.write(`${line}\n`) });
      startAndMemory = renderStartSection(figures, '');
    }
    const result = await runFastpathBench({ ...fastpathOptions(opts), ...(startAndMemory !== undefined ? { startAndMemory } : {}) });
    process.stdout.write(`report: ${opts.out}\n`);
    const failed = result.cells.some((c) => ['cdn', 'presigned', 'signed', 'proxy'].includes(c.subject.kind) && c.rounds.some((r) => r.errors > 0)) || result.hitRatio.some((h) => h.errors > 0);
    return failed ? 1 : 0;
  }
  if (opts.start) {
    const figures = await measureStart({
      rounds: opts.rounds ?? (opts.smoke ? 1 : 10),
      rssRounds: opts.smoke ? 1 : 3,
      settleMs: opts.smoke ? 1000 : 5000,
      workers: [1, 2],
      ...(opts.startBinary !== undefined ? { binary: opts.startBinary === 'none' ? null : opts.startBinary } : {}),
      ...(opts.startNode !== undefined ? { nodePath: opts.startNode } : {}),
      ...(opts.startCompare !== undefined ? { compare: opts.startCompare.map(parseCompare) } : {}),
      ...(opts.startWithoutCompileCache ? { withoutCompileCache: true } : {}),
      profile: !opts.smoke,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    const body = renderStartSection(figures, '## Start and memory');
    await writeFile(opts.out, `# s3edge: start time and idle memory\n\nCommand: \`${opts.command ?? 'node bench/dist/main.js --start'}\` (run on ${new Date().toISOString().slice(0, 10)}).\n\n${body}`);
    process.stdout.write(body);
    process.stdout.write(`report: ${opts.out}\n`);
    return figures.targets.some((t) => t.errors.length > 0) ? 1 : 0;
  }
  if (opts.scale) {
    if (opts.load === 'wrk' && !findWrk()) {
      process.stderr.write(`bench: ${WRK_MISSING}\n`);
      return 2;
    }
    // wrk's rounds are timed only (whole seconds): its smoke round is one second.
    const wrk = opts.load === 'wrk';
    const result = await runScaleBench({
      rounds: opts.rounds ?? (opts.smoke ? 1 : 5),
      bound: opts.smoke ? (wrk ? { durationMs: 1000 } : { ops: 64 }) : { durationMs: (opts.roundSeconds ?? 3) * 1000 },
      warmup: opts.smoke ? { ops: 16 } : { durationMs: 1000 },
      concurrency: opts.concurrency ?? (opts.smoke ? [4] : [16, 64]),
      workers: opts.scaleWorkers ?? [1, 2],
      nginx: !opts.smoke,
      // On unless turned off; without PostgreSQL installed the run says so in its notes and goes on.
      postgres: opts.scalePostgres ?? true,
      objects: opts.smoke ? 8 : 256,
      out: opts.out,
      command: opts.command ?? 'node bench/dist/main.js --scale',
      load: opts.load ?? 'node',
    });
    process.stdout.write(`report: ${opts.out}\n`);
    return result.cells.some((c) => c.spec.server === 's3edge' && c.rounds.some((r) => r.errors > 0)) ? 1 : 0;
  }
  let upstream: Upstream | undefined;
  if (opts.upstream) {
    upstream = await startUpstream();
    opts = { ...opts, s3edgeEnv: { ...opts.s3edgeEnv, ...upstream.env } };
  }
  const result = await runBench(opts).finally(() => upstream?.stop());
  // Exit 1 when s3edge failed an op; a peer's failures are reported, not ours to fail on.
  const failed = result.cells.filter((c) => c.target === 's3edge').reduce((n, c) => n + c.errors, 0);
  for (const f of result.figures) {
    const v = formatFigure(f);
    process.stdout.write(`${f.pass === undefined ? 'n/a ' : f.pass ? 'PASS' : 'MISS'}  ${f.name}: ${v} (${f.goal})\n`);
  }
  process.stdout.write(`report: ${opts.out}\n`);
  return failed > 0 ? 1 : 0;
}

const invoked = process.argv[1];
if (invoked && import.meta.url === pathToFileURL(invoked).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exit(code);
    },
    (err: unknown) => {
      process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
