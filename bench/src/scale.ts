// --scale (issue 21): what more cores buy. s3edge with `--workers 1` and `--workers 2` (a cluster:
// supervisor and workers on the same listeners) and nginx with `worker_processes 1` and 2, all in one run,
// rounds interleaved so machine noise hits every target alike. Workloads: the matrix's signed keep-alive
// 4 KiB S3 GET and its 4 KiB CDN GET (s3edge's edge cache warm: hits), through the same TargetRunner;
// nginx serves the same bytes as static files, as in the matrix. Reported: ops/s (median of rounds,
// spread), the ratios workers N / workers 1 and s3edge / nginx at equal workers, and the server's CPU per
// op summed over its process tree (supervisor + workers; master + workers). Targets are a list: s3edge on
// PostgreSQL (`--scale-postgres`, on when PostgreSQL is installed) is two more entries, `s3edge w1 pg` and
// `s3edge w2 pg`, on one PostgreSQL server the run starts (the tests' helper, dist/test/helpers/postgres.js),
// a database each, with the ratio PostgreSQL / SQLite at equal workers. Writes bench/RESULTS-scale.md unless told where.
// The load comes from this process's node client (default) or from wrk (`--load wrk`, bench/src/wrk.ts:
// far cheaper per request, so more of a small machine's cores go to the servers); wrk cannot sign
// each request, so its S3 GETs are presigned URLs of the same objects (query-string auth).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Client } from 'undici';
import { CpuMeter, forgetTempDir, rememberTempDir, sleep, treePids } from './proc.js';
import { SigV4Signer } from './sigv4.js';
import { ensureNginx, repoRoot, startNginx, startS3edge, versions, type Target, type TargetName } from './targets.js';
import { BUCKET, Bodies, KiB, TargetRunner, median, sizeLabel, type Bound } from './workloads.js';
import { WRK_MISSING, findWrk, measureWrkRound, wrkVersion, writeWrkScript, type WrkRoundStats } from './wrk.js';

export type ScaleWorkload = 'GET' | 'CDN';
/** Who generates the load: this process's node client, or wrk. */
export type ScaleLoad = 'node' | 'wrk';

export interface ScaleTarget {
  server: 's3edge' | 'nginx';
  /** s3edge's `--workers`, nginx's `worker_processes`. */
  workers: number;
  /** s3edge's metadata database: SQLite (meta.db in its data dir) or PostgreSQL (S3EDGE_METADATA). */
  database?: 'sqlite' | 'postgres';
}

/** `s3edge w1` on SQLite (as before PostgreSQL, so older result files compare), `s3edge w1 pg` on PostgreSQL. */
export function scaleLabel(t: ScaleTarget): string {
  return `${t.server} w${t.workers}${t.database === 'postgres' ? ' pg' : ''}`;
}

export interface ScaleOptions {
  rounds: number;
  /** A timed round (full run), or a number of ops (smoke). */
  bound: Bound;
  warmup: Bound;
  concurrency: readonly number[];
  /** Worker counts of each server (1 first: the ratios are over it). */
  workers: readonly number[];
  /** Compare with nginx (off in smoke runs, as in the other modes'). */
  nginx: boolean;
  /**
   * s3edge on PostgreSQL too, at each worker count (--scale-postgres, main's default for --scale): one
   * PostgreSQL server for the run, a database per target. Skipped with a note when it is not installed.
   */
  postgres?: boolean;
  /** 4 KiB objects the GET workload reads (random pick per op). */
  objects: number;
  out: string;
  command: string;
  /** The load generator (default node). wrk rounds are timed: `bound` needs a duration. */
  load?: ScaleLoad;
  log?: (line: string) => void;
}

export const SIZE = 4 * KiB;
export const SCALE_WORKLOADS: readonly ScaleWorkload[] = ['GET', 'CDN'];
/** Fresh connections that ask each s3edge's CDN for the file after the rounds, reading X-Cache. */
const CACHE_PROBES = 8;
/**
 * wrk's threads: one. One epoll thread drives far more requests/s than these servers answer (its CPU
 * per request is in the report), and a second would only take more of the cores the servers share.
 */
export const WRK_THREADS = 1;
/** How long the presigned GETs stay valid: a day, far beyond any run (AWS's maximum is a week). */
export const PRESIGN_EXPIRES_SECONDS = 86_400;

/**
 * A round as the report keeps it: the load generator's own CPU per op (`clientCpuUsPerOp`: this
 * process, or wrk) beside the server's.
 */
export type ScaleRound = WrkRoundStats;

export interface ScaleCell {
  target: string;
  spec: ScaleTarget;
  workload: ScaleWorkload;
  concurrency: number;
  rounds: ScaleRound[];
  /** Processes in the server's tree when its rounds ended: what its CPU per op is summed over. */
  processes: number;
}

export interface ScaleSummary {
  opsPerSec: number;
  /** max / min - 1 of the rounds' ops/s. */
  spread: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerOp: number;
  clientCpuUsPerOp: number;
  errors: number;
  otherCpu: number;
}

export interface ScaleRatio {
  name: string;
  /** workers: N over 1 of one server and database; nginx: s3edge over nginx; database: PostgreSQL over SQLite. */
  kind: 'workers' | 'nginx' | 'database';
  numerator: string;
  denominator: string;
}

export interface ScaleResult {
  started: string;
  durationMs: number;
  targets: ScaleTarget[];
  cells: ScaleCell[];
  /** Per s3edge target: the X-Cache answers of CACHE_PROBES fresh connections after the rounds. */
  cacheProbes: Record<string, Record<string, number>>;
  load: ScaleLoad;
  /** wrk's version when it ran. */
  wrk?: string;
  /** PostgreSQL's server_version when the PostgreSQL targets ran. */
  postgres?: string;
  notes: string[];
}

export function summariseScale(cell: ScaleCell): ScaleSummary {
  return summariseRounds(cell.rounds);
}

/** Medians of a cell's rounds (and the spread of their ops/s, the errors, the most other CPU). */
export function summariseRounds(rounds: readonly ScaleRound[]): ScaleSummary {
  const ops = rounds.map((r) => r.opsPerSec);
  return {
    opsPerSec: median(ops),
    spread: ops.length > 1 && Math.min(...ops) > 0 ? Math.max(...ops) / Math.min(...ops) - 1 : 0,
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    cpuUsPerOp: median(rounds.map((r) => r.cpuUsPerOp)),
    clientCpuUsPerOp: median(rounds.map((r) => r.clientCpuUsPerOp)),
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    otherCpu: Math.max(0, ...rounds.map((r) => r.otherCpu)),
  };
}

/**
 * The ratios of the report, from the targets that ran: each server (and database) at N workers over
 * itself at 1, s3edge over nginx at equal workers, and s3edge on PostgreSQL over s3edge on SQLite at
 * equal workers.
 */
export function scaleRatios(targets: readonly ScaleTarget[]): ScaleRatio[] {
  const out: ScaleRatio[] = [];
  const same = (a: ScaleTarget, b: ScaleTarget): boolean => a.server === b.server && a.database === b.database;
  for (const t of targets) {
    if (t.workers === 1) continue;
    const one = targets.find((o) => same(o, t) && o.workers === 1);
    if (one) out.push({ name: `${scaleLabel(t)} / w1`, kind: 'workers', numerator: scaleLabel(t), denominator: scaleLabel(one) });
  }
  for (const t of targets) {
    if (t.server !== 's3edge') continue;
    const peer = targets.find((o) => o.server === 'nginx' && o.workers === t.workers);
    if (peer) out.push({ name: `${scaleLabel(t)} / nginx w${t.workers}`, kind: 'nginx', numerator: scaleLabel(t), denominator: scaleLabel(peer) });
  }
  for (const t of targets) {
    if (t.server !== 's3edge' || t.database !== 'postgres') continue;
    const lite = targets.find((o) => o.server === 's3edge' && o.database !== 'postgres' && o.workers === t.workers);
    if (lite) out.push({ name: `s3edge w${t.workers} PostgreSQL / SQLite`, kind: 'database', numerator: scaleLabel(t), denominator: scaleLabel(lite) });
  }
  return out;
}

export function scaleRatio(cells: readonly ScaleCell[], ratio: ScaleRatio, workload: ScaleWorkload, concurrency: number): number | undefined {
  const find = (label: string): ScaleCell | undefined => cells.find((c) => c.target === label && c.workload === workload && c.concurrency === concurrency);
  const a = find(ratio.numerator);
  const b = find(ratio.denominator);
  if (!a || !b) return undefined;
  const d = summariseScale(b).opsPerSec;
  return d > 0 ? summariseScale(a).opsPerSec / d : undefined;
}

/** The tests' PostgreSQL helper (test/helpers/postgres.ts), as compiled to dist by `npm run build`. */
interface PostgresHelper {
  postgresBinDir(): string | undefined;
  startPostgres(t: { teardown(fn: () => void | Promise<void>): void }): Promise<RunningPostgres>;
}
interface RunningPostgres {
  url: string;
  database(name?: string): Promise<string>;
  admin(sql: string): Promise<{ rows: Record<string, unknown>[] }>;
  stop(): Promise<void>;
}

async function postgresHelper(): Promise<PostgresHelper> {
  const file = join(repoRoot(), 'dist', 'test', 'helpers', 'postgres.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build first (or --no-scale-postgres)`);
  return (await import(pathToFileURL(file).href)) as PostgresHelper;
}

async function startTarget(spec: ScaleTarget, nginxBinary: string | undefined, metadataUrl: string | undefined): Promise<Target> {
  if (spec.server === 'nginx') return startNginx(nginxBinary!, { workers: spec.workers });
  if (spec.database === 'postgres' && !metadataUrl) throw new Error(`${scaleLabel(spec)}: no PostgreSQL database`);
  const target = await startS3edge({ workers: spec.workers, ...(spec.database === 'postgres' ? { env: { S3EDGE_METADATA: metadataUrl! } } : {}) });
  // The listening line says how many workers serve and where the metadata is: a cluster that came up
  // smaller, or on the wrong database, would mislabel its column.
  const database = spec.database ?? 'sqlite';
  if (target.workers !== spec.workers || target.metadata !== database) {
    await target.stop();
    throw new Error(`${scaleLabel(spec)}: s3edge --workers ${spec.workers} on ${database} reports ${String(target.workers)} workers, metadata ${String(target.metadata)}`);
  }
  return target;
}

/**
 * `n` GETs of `path` from `origin`, each over a fresh connection (a cluster hands each to the next
 * worker), tallied by what `classify` makes of each answer (status and headers).
 */
export async function probeFresh(origin: string, path: string, headers: Readonly<Record<string, string>>, n: number, classify: (status: number, headers: Record<string, string | string[] | undefined>) => string): Promise<Record<string, number>> {
  const seen: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const client = new Client(origin);
    try {
      const r = await client.request({ path, method: 'GET', headers: { ...headers } });
      await r.body.dump();
      const said = classify(r.statusCode, r.headers);
      seen[said] = (seen[said] ?? 0) + 1;
    } finally {
      await client.close();
    }
  }
  return seen;
}

/** An s3edge CDN answer by its X-Cache (HIT, MISS, ...), or its status when not 200. */
export function xCache(status: number, headers: Record<string, string | string[] | undefined>): string {
  return status === 200 ? String(headers['x-cache'] ?? 'none') : `status ${status}`;
}

/** X-Cache of the CDN file over `n` fresh connections (the cluster hands each to the next worker). */
function probeCache(target: Target, runner: TargetRunner, n: number): Promise<Record<string, number>> {
  const o = runner.cdnObject(SIZE);
  return probeFresh(target.cdnUrl!, o.path, { host: o.host }, n, xCache);
}

/** What wrk sends to one target: presigned GETs of its objects, and the CDN file's URL with its Host. */
interface WrkPlan {
  getScript: string;
  cdnUrl: string;
  cdnHost: string;
  cdnScript: string;
}

/** One answer to a GET of `path`: "ok" when it is 200 with the 4 KiB body, else what came instead. */
export async function answer(client: Client, path: string, headers?: Readonly<Record<string, string>>): Promise<string> {
  const r = await client.request({ path, method: 'GET', ...(headers ? { headers: { ...headers } } : {}) });
  const body = Buffer.from(await r.body.arrayBuffer());
  return r.statusCode === 200 && body.length === SIZE ? 'ok' : `${r.statusCode} with ${body.length} bytes: ${body.subarray(0, 200).toString('utf8')}`;
}

/** Presigned GETs of `keys` in BUCKET on `target` (query-string SigV4, valid for a day). */
export function presignedPaths(target: Target, keys: readonly string[]): string[] {
  const host = new URL(target.url).host;
  const signer = new SigV4Signer(target.credentials);
  return keys.map((key) => signer.presign('GET', host, `/${BUCKET}/${key}`, PRESIGN_EXPIRES_SECONDS));
}

/**
 * The scripts of one target's wrk rounds, written to `dir`: every object of the GET workload presigned
 * (nginx serves its static file and ignores the query), each target checked once beforehand to answer
 * 200 with the 4 KiB body (wrk only counts statuses).
 */
async function planWrk(dir: string, label: string, target: Target, runner: TargetRunner): Promise<WrkPlan> {
  const paths = presignedPaths(target, runner.readableKeys(SIZE));
  const cdn = runner.cdnObject(SIZE);
  const s3 = new Client(target.url);
  const edge = new Client(target.cdnUrl!);
  try {
    for (const path of paths) {
      const got = await answer(s3, path);
      if (got !== 'ok') throw new Error(`${label}: presigned GET ${path.slice(0, path.indexOf('?'))} answered ${got}`);
    }
    const got = await answer(edge, cdn.path, { host: cdn.host });
    if (got !== 'ok') throw new Error(`${label}: CDN GET ${cdn.path} (Host ${cdn.host}) answered ${got}`);
  } finally {
    await s3.close();
    await edge.close();
  }
  const name = label.replace(/\W+/g, '-');
  return {
    getScript: await writeWrkScript(dir, `${name}-get.lua`, paths),
    cdnUrl: new URL(cdn.path, target.cdnUrl).href,
    cdnHost: cdn.host,
    cdnScript: await writeWrkScript(dir, `${name}-cdn.lua`),
  };
}

/** One timed round driven by wrk (measureWrkRound): its summary as the report's round, the server's CPU and RSS alongside. */
async function wrkRound(binary: string, target: Target, plan: WrkPlan, workload: ScaleWorkload, concurrency: number, bound: Bound, cpu?: CpuMeter): Promise<ScaleRound> {
  if (bound.durationMs === undefined) throw new Error('--load wrk runs timed rounds: give the rounds a duration, not a number of ops');
  return measureWrkRound({
    binary,
    url: workload === 'GET' ? target.url : plan.cdnUrl,
    script: workload === 'GET' ? plan.getScript : plan.cdnScript,
    ...(workload === 'CDN' ? { headers: { Host: plan.cdnHost } } : {}),
    connections: concurrency,
    threads: WRK_THREADS,
    durationMs: bound.durationMs,
    serverPid: target.pid,
    bodyBytes: SIZE,
    ...(cpu ? { cpu } : {}),
    what: workload,
  });
}

/** One round from this process's node client, with its CPU per op (the whole harness process). */
async function nodeRound(runner: TargetRunner, workload: ScaleWorkload, concurrency: number, bound: Bound, cpu?: CpuMeter): Promise<ScaleRound> {
  const before = process.cpuUsage();
  const s = await runner.round(workload, SIZE, concurrency, bound, cpu);
  const used = process.cpuUsage(before);
  return { ...s, clientCpuUsPerOp: s.ops > 0 ? (used.user + used.system) / s.ops : 0 };
}

export async function runScaleBench(opts: ScaleOptions): Promise<ScaleResult> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const started = new Date();
  const t0 = performance.now();
  const notes: string[] = [];
  const load = opts.load ?? 'node';
  let wrkBinary: string | undefined;
  if (load === 'wrk') {
    wrkBinary = findWrk();
    if (!wrkBinary) throw new Error(WRK_MISSING);
    if (opts.bound.durationMs === undefined) throw new Error('--load wrk runs timed rounds: give the rounds a duration, not a number of ops');
  }
  const specs: ScaleTarget[] = opts.workers.map((workers) => ({ server: 's3edge', workers, database: 'sqlite' }));
  let pgHelper: PostgresHelper | undefined;
  if (opts.postgres) {
    pgHelper = await postgresHelper();
    if (pgHelper.postgresBinDir() !== undefined) specs.push(...opts.workers.map((workers): ScaleTarget => ({ server: 's3edge', workers, database: 'postgres' })));
    else {
      notes.push('PostgreSQL is not installed (no initdb on PATH or under /usr/lib/postgresql/*/bin; `apt-get install -y postgresql`): the s3edge PostgreSQL columns are missing.');
      pgHelper = undefined;
    }
  }
  let nginxBinary: string | undefined;
  if (opts.nginx) {
    nginxBinary = ensureNginx(log);
    if (nginxBinary) specs.push(...opts.workers.map((workers): ScaleTarget => ({ server: 'nginx', workers })));
    else notes.push('nginx is not installed (as root the harness runs `apt-get install -y nginx`): its columns are missing.');
  }
  const bodies = new Bodies();
  const maxConc = Math.max(...opts.concurrency);
  const running: { spec: ScaleTarget; label: string; target: Target; runner: TargetRunner; wrk?: WrkPlan }[] = [];
  let wrkDir: string | undefined;
  const cells: ScaleCell[] = [];
  const cacheProbes: Record<string, Record<string, number>> = {};
  const cpu = new CpuMeter(() => running.map((r) => r.target.pid));
  let pg: RunningPostgres | undefined;
  let pgVersion: string | undefined;
  try {
    // One PostgreSQL for the run (stopped below), a database per target on it.
    const metadataUrls = new Map<ScaleTarget, string>();
    if (pgHelper) {
      pg = await pgHelper.startPostgres({ teardown: () => undefined });
      pgVersion = String((await pg.admin('SHOW server_version')).rows[0]?.['server_version'] ?? '?');
      for (const spec of specs) if (spec.database === 'postgres') metadataUrls.set(spec, await pg.database(`w${spec.workers}`));
      log(`bench: scale: PostgreSQL ${pgVersion} at ${new URL(pg.url).host}`);
    }
    // Started and loaded at once (untimed); every one that started is stopped below, whatever failed.
    const started = await Promise.allSettled(specs.map((spec) => startTarget(spec, nginxBinary, metadataUrls.get(spec))));
    started.forEach((s, i) => {
      if (s.status === 'fulfilled') running.push({ spec: specs[i]!, label: scaleLabel(specs[i]!), target: s.value, runner: new TargetRunner(s.value, bodies, maxConc) });
    });
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    await Promise.all(
      running.map(async ({ runner }) => {
        await runner.createBuckets();
        await runner.ensureReadable(SIZE, opts.objects);
        await runner.ensureCdnObject(SIZE);
      }),
    );
    if (wrkBinary) {
      wrkDir = await mkdtemp(join(tmpdir(), 's3edge-bench-wrk-'));
      rememberTempDir(wrkDir);
      for (const r of running) r.wrk = await planWrk(wrkDir, r.label, r.target, r.runner);
    }
    for (const { label, target } of running) log(`bench: scale: ${label} at ${target.url} (pid ${target.pid}, ${treePids(target.pid).length} processes)`);
    // A round of one target by the chosen load generator.
    const oneRound = (r: (typeof running)[number], workload: ScaleWorkload, concurrency: number, bound: Bound, meter?: CpuMeter): Promise<ScaleRound> =>
      wrkBinary && r.wrk && bound.durationMs !== undefined ? wrkRound(wrkBinary, r.target, r.wrk, workload, concurrency, bound, meter) : nodeRound(r.runner, workload, concurrency, bound, meter);
    for (const workload of SCALE_WORKLOADS) {
      for (const concurrency of opts.concurrency) {
        // Untimed warm-up of every target: connections open, CDN caches of every worker filled (by wrk
        // too when the warm-up is timed: the presigned path is then warm as well).
        for (const r of running) await oneRound(r, workload, concurrency, opts.warmup);
        const mine = running.map((r): ScaleCell => ({ target: r.label, spec: r.spec, workload, concurrency, rounds: [], processes: 0 }));
        for (let round = 0; round < opts.rounds; round++) {
          const line: string[] = [];
          for (let i = 0; i < running.length; i++) {
            const at = (i + round) % running.length;
            const r = running[at]!;
            const s = await oneRound(r, workload, concurrency, opts.bound, cpu);
            const cell = mine[at]!;
            cell.rounds.push(s);
            cell.processes = Math.max(cell.processes, treePids(r.target.pid).length);
            line.push(`${r.label} ${s.opsPerSec.toFixed(0)} op/s${s.errors ? ` ${s.errors} ERR` : ''}`);
            await sleep(100);
          }
          log(`bench: scale ${workload} ${sizeLabel(SIZE)} c${concurrency} round ${round + 1}/${opts.rounds}: ${line.join(', ')}`);
        }
        cells.push(...mine);
      }
    }
    for (const r of running) if (r.spec.server === 's3edge') cacheProbes[r.label] = await probeCache(r.target, r.runner, CACHE_PROBES);
  } finally {
    for (const r of running) await r.runner.close().catch(() => undefined);
    for (const r of running) await r.target.stop().catch(() => undefined);
    await pg?.stop().catch(() => undefined);
    if (wrkDir) {
      await rm(wrkDir, { recursive: true, force: true });
      forgetTempDir(wrkDir);
    }
  }
  const errors = cells.reduce((n, c) => n + summariseScale(c).errors, 0);
  if (errors > 0) notes.push(`${errors} ops failed in the timed rounds; the first errors are listed below.`);
  const result: ScaleResult = { started: started.toISOString(), durationMs: performance.now() - t0, targets: specs, cells, cacheProbes, load, ...(wrkBinary ? { wrk: wrkVersion(wrkBinary) } : {}), ...(pgVersion !== undefined ? { postgres: pgVersion } : {}), notes };
  const which = new Set<TargetName>(nginxBinary ? ['s3edge', 'nginx'] : ['s3edge']);
  await writeFile(opts.out, scaleReport(result, opts, versions(which, nginxBinary)));
  log(`bench: scale report written to ${opts.out} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  return result;
}

const WORKLOAD_TEXT: Record<ScaleLoad, Record<ScaleWorkload, string>> = {
  node: { GET: '4 KiB S3 GET (signed)', CDN: '4 KiB CDN hit' },
  wrk: { GET: '4 KiB S3 GET (presigned)', CDN: '4 KiB CDN hit' },
};

/** The report's lines on the workloads and on who generated the load, which differ by load generator. */
function loadText(r: ScaleResult, opts: ScaleOptions): string[] {
  const cores = cpus().length;
  const cdn = "s3edge's CDN listener (its edge cache warm: each worker's memory tier holds the file after the warm-up) or nginx's root.";
  if (r.load === 'wrk') {
    return [
      `The load generator is **wrk ${r.wrk ?? ''}** (\`-t ${WRK_THREADS}\`, one C thread on epoll, a child process; bench/src/wrk.ts), one run of it per round.`,
      `The S3 GET cell is **presigned GETs**: wrk cannot sign each request, so each of the ${opts.objects} objects (4 KiB) has a presigned URL`,
      `(query-string SigV4, X-Amz-Expires ${PRESIGN_EXPIRES_SECONDS}), cycled through by a Lua script: the same S3 GET path as the signed cells of the node client,`,
      "with query-string auth instead of the Authorization header (nginx serves the same files and ignores the query). The CDN cell: keep-alive GETs of one 4 KiB public asset from",
      `${cdn} Every target was checked to answer 200 with the 4 KiB body for each URL before the rounds; wrk counts statuses above 399 as errors.`,
      `**wrk runs on the same ${cores} cores as the servers**: far cheaper per request than the node client (its CPU per op is the "client CPU" column),`,
      'but it still takes a share of the cores a second worker would use, so the ratios are still those of a machine that also generates its load.',
    ];
  }
  return [
    'The workloads are the matrix\'s: signed keep-alive',
    'GETs of 4 KiB objects (a random one of ' + String(opts.objects) + ' per op; nginx ignores the signature) and unsigned keep-alive GETs of one 4 KiB public asset from',
    cdn,
    `**The load generator (this process, one thread) runs on the same ${cores} cores as the servers**: a server with more workers competes with it,`,
    'so the ratios are what a second worker buys on a machine that also generates its load, not the server alone (`--load wrk` is a cheaper generator).',
  ];
}

/** What the PostgreSQL columns measure, when they ran. */
function postgresText(r: ScaleResult): string[] {
  if (!r.targets.some((t) => t.database === 'postgres')) return [];
  return [
    `\`s3edge wN pg\`: the same server with its metadata in PostgreSQL ${r.postgres ?? ''} (\`S3EDGE_METADATA\`; its listening line said \`"metadata":"postgres"\`): one PostgreSQL server the harness started`,
    "for the run (the tests' helper: loopback TCP, fsync and synchronous_commit off), a database of its own per target. Object bytes stay in the data dir's blob files as on SQLite.",
    'What its columns measure: **4 KiB S3 GET**: one object-row read per request from PostgreSQL on loopback (a round trip to another process instead of',
    "SQLite's in-process read), so its ratio PostgreSQL / SQLite is the price of that read; **CDN hit**: served from the edge cache, not the database, so it",
    "is the SQLite column's path again (a check that the database does not slow the cache). PostgreSQL's own processes are not in the server CPU column",
    "(s3edge's tree only): their CPU shows under other CPU in these cells.",
  ];
}

export function pct(spread: number): string {
  return `${(spread * 100).toFixed(0)}%`;
}

function scaleReport(r: ScaleResult, opts: ScaleOptions, v: ReturnType<typeof versions>): string {
  const text = WORKLOAD_TEXT[r.load];
  const labels = r.targets.map(scaleLabel);
  const find = (label: string, w: ScaleWorkload, c: number): ScaleCell | undefined => r.cells.find((x) => x.target === label && x.workload === w && x.concurrency === c);
  const bound = opts.bound.durationMs !== undefined ? `${opts.bound.durationMs / 1000} s` : `${opts.bound.ops ?? 0} ops`;
  const lines = [
    `# s3edge on more cores: --workers ${opts.workers.join(' vs ')}, and nginx alike`,
    '',
    `Machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? '?'}) · ${(totalmem() / 2 ** 30).toFixed(1)} GiB · node ${process.version} · ${r.started.slice(0, 16).replace('T', ' ')} UTC · 1-minute load ${loadavg()[0]?.toFixed(2)}`,
    '',
    `Versions: s3edge ${v.s3edge} · nginx ${v.nginx ?? 'not run'} · PostgreSQL ${r.postgres ?? 'not run'} · load generator: ${r.load === 'wrk' ? `wrk ${r.wrk ?? ''}` : `node ${process.version} (undici)`}`,
    '',
    `Run: \`${opts.command}\` (${opts.rounds} round${opts.rounds === 1 ? '' : 's'} of ${bound} per cell after an untimed warm-up, the targets' order rotating each round; medians). Written by the harness (bench/src/scale.ts) in ${(r.durationMs / 1000).toFixed(0)} s.`,
    '',
    's3edge: `serve --workers N` with its defaults (SQLite, request log on; its stdout, a JSON line a request, to a file as `serve > s3edge.log` would); `w2` is a supervisor and two workers sharing the listeners (node:cluster, docs/SCALE.md).',
    ...postgresText(r),
    'nginx: `worker_processes N`, `sendfile on`, serving the same bytes as static files.',
    ...loadText(r, opts),
    'Server CPU µs/op: user + system time of the whole process tree (s3edge\'s supervisor and workers, nginx\'s master and workers; /proc)',
    `over the round, divided by its ops. Client CPU µs/op: the load generator's own (${r.load === 'wrk' ? "wrk's process, os.clock() in its done hook" : 'this process, process.cpuUsage()'}).`,
    'other CPU: the most cores the rest of the machine used during one of the cell\'s rounds (above ~0.3: disturbed).',
    '',
    '## Requests/s',
    '',
    `| workload | conc | ${labels.join(' | ')} |`,
    `|---|---:|${labels.map(() => '---:').join('|')}|`,
  ];
  for (const w of SCALE_WORKLOADS) {
    for (const c of opts.concurrency) {
      const row = labels.map((l) => {
        const cell = find(l, w, c);
        if (!cell) return 'n/a';
        const s = summariseScale(cell);
        return `${s.opsPerSec.toFixed(0)} (${pct(s.spread)})`;
      });
      lines.push(`| ${text[w]} | ${c} | ${row.join(' | ')} |`);
    }
  }
  lines.push('', "In parentheses: the spread, max / min - 1 of the rounds' requests/s.");
  const ratios = scaleRatios(r.targets);
  if (ratios.length > 0) {
    lines.push('', '## Ratios (of the medians)', '', `| workload | conc | ${ratios.map((x) => x.name).join(' | ')} |`, `|---|---:|${ratios.map(() => '---:').join('|')}|`);
    for (const w of SCALE_WORKLOADS) {
      for (const c of opts.concurrency) {
        const row = ratios.map((x) => {
          const v = scaleRatio(r.cells, x, w, c);
          return v === undefined ? 'n/a' : `${v.toFixed(2)}x`;
        });
        lines.push(`| ${text[w]} | ${c} | ${row.join(' | ')} |`);
      }
    }
    const db = ratios.filter((x) => x.kind === 'database');
    if (db.length > 0) {
      const cells = SCALE_WORKLOADS.flatMap((w) =>
        opts.concurrency.map((c) => {
          const each = db.map((x) => {
            const v = scaleRatio(r.cells, x, w, c);
            return `${x.numerator.replace(/^s3edge (w\d+) pg$/, '$1')} ${v === undefined ? 'n/a' : `${v.toFixed(2)}x`}`;
          });
          return `${text[w]} c${c}: ${each.join(', ')}`;
        }),
      );
      lines.push('', `s3edge PostgreSQL / SQLite at equal workers: ${cells.join('; ')}.`);
    }
  }
  lines.push(
    '',
    '## Every cell',
    '',
    '| workload | conc | target | processes | req/s | spread | p50 ms | p99 ms | server CPU µs/op | client CPU µs/op | errors | other CPU |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const w of SCALE_WORKLOADS) {
    for (const c of opts.concurrency) {
      for (const l of labels) {
        const cell = find(l, w, c);
        if (!cell) continue;
        const s = summariseScale(cell);
        lines.push(
          `| ${text[w]} | ${c} | ${l} | ${cell.processes} | ${s.opsPerSec.toFixed(0)} | ${pct(s.spread)} | ${s.p50Ms.toFixed(2)} | ${s.p99Ms.toFixed(2)} | ${s.cpuUsPerOp.toFixed(0)} | ${s.clientCpuUsPerOp.toFixed(0)} | ${s.errors} | ${s.otherCpu.toFixed(2)} |`,
        );
      }
    }
  }
  const probes = Object.entries(r.cacheProbes);
  if (probes.length > 0) {
    const said = probes.map(([label, seen]) => `${label}: ${Object.entries(seen).map(([k, n]) => `${k} ${n}`).join(', ')}`).join('; ');
    lines.push('', `X-Cache of the CDN file asked over ${CACHE_PROBES} fresh connections after the rounds (spread over the workers): ${said}.`);
  }
  const firstErrors = r.cells.flatMap((c) => c.rounds.filter((x) => x.firstError).map((x) => `${c.target} ${c.workload} c${c.concurrency}: ${x.firstError}`));
  if (firstErrors.length > 0) lines.push('', 'First errors:', '', ...firstErrors.slice(0, 5).map((e) => `- ${e}`));
  if (r.notes.length > 0) lines.push('', ...r.notes.map((n) => `- ${n}`));
  return lines.join('\n') + '\n';
}

/** Where --scale writes by default. */
export function scaleResultsFile(): string {
  return join(repoRoot(), 'bench', 'RESULTS-scale.md');
}
