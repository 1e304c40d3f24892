// --fastpath (issue 30): s3edge's hot paths against what the same cores do without s3edge, in one run
// with wrk (-t 1, keep-alive), 4 KiB bodies, every column's rounds rotating within a concurrency as
// --scale's do. s3edge `serve --workers N` (one server per worker count): the CDN hit, the presigned and
// the header-signed S3 GET, and the edge proxy for a verified project hostname. Beside them: a bare
// node:http cluster of N workers and a bare node proxy (bench/src/bare.ts), nginx static and nginx proxy_pass (worker_processes
// N) and Varnish (malloc) in front of a bare origin. Then the edge cache's origin fetches and hit ratio
// over fresh connections. The report (bench/src/fastpath-report.ts) gives the issue's acceptance ratios
// beside its thresholds. Writes bench/RESULTS-fastpath.md unless told where.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'undici';
import { BARE_PATH, startBareCluster, startBareProxy } from './bare.js';
import { edgeCacheCounters, placeCdnObject, type CdnObject, type EdgeCacheCounters } from './cdn.js';
import {
  FASTPATH_CELLS,
  fastpathSubjects,
  renderFastpathReport,
  subjectLabel,
  type CacheDelta,
  type FastpathCell,
  type FastpathCellName,
  type FastpathResult,
  type HitRatioResult,
  type Subject,
} from './fastpath-report.js';
import { CpuMeter, forgetTempDir, rememberTempDir, sleep, treePids, type Managed } from './proc.js';
import { CACHEABLE_ORIGIN_PATH, ORIGIN_PATHS, PROXY_HOSTNAME, addProjectHostname, startOrigin, until } from './proxy.js';
import { SIZE, WRK_THREADS, answer, presignedPaths, probeFresh, xCache, type ScaleRound } from './scale.js';
import { EMPTY_SHA256, SigV4Signer } from './sigv4.js';
import { findNginx, findVarnishd, repoRoot, startNginx, startS3edge, startVarnish, varnishParams, varnishVersion, versions, type Target, type VarnishServer } from './targets.js';
import { BUCKET, Bodies, TargetRunner } from './workloads.js';
import { WRK_MISSING, findWrk, measureWrkRound, wrkVersion, writeWrkScript, type WrkRequest } from './wrk.js';

export interface FastpathOptions {
  rounds: number;
  /** A timed round, in whole seconds (wrk's -d). */
  roundSeconds: number;
  /** wrk's untimed warm-up of every column before each concurrency's rounds; 0: none. */
  warmupSeconds: number;
  concurrency: readonly number[];
  workers: readonly number[];
  cells: readonly FastpathCellName[];
  /** Run nginx's and Varnish's columns when installed (off in smoke runs). */
  nginx: boolean;
  varnish: boolean;
  /** 4 KiB objects the S3 GET cells cycle through. */
  objects: number;
  /** The hit-ratio pass: assets and requests per asset (runs with the CDN cell; 0 assets: skipped). */
  hitObjects: number;
  hitRequests: number;
  out: string;
  /** Node flags for the s3edge processes (--s3edge-node-arg, e.g. --cpu-prof --cpu-prof-dir=DIR). */
  nodeArgs?: readonly string[];
  /** Other builds (--fastpath-compare LABEL=DIR: a repository root with dist/ built) whose s3edge cells run beside this one's. */
  compare?: readonly { label: string; root: string }[];
  /** --fastpath-bare-work: the bare cluster again at each worker count, spinning this many µs of CPU per answer. */
  bareWork?: readonly number[];
  command: string;
  /** The "Start and memory" section's body, when a caller measured it (bench/src/start.ts). */
  startAndMemory?: string;
  log?: (line: string) => void;
}

export const NGINX_MISSING = 'nginx is not installed (apt-get install -y nginx): its columns are missing.';
export const VARNISH_MISSING = 'varnishd is not installed (apt-get install -y varnish): its column is missing.';
/** Fresh connections that ask each cache for its file after the first warm-up. */
const PROBES = 8;
/** The user and project that own the proxied hostname (the CDN's API key belongs to the user `bench`). */
const PROXY_OWNER = { user: 'bench-edge', project: 'edge' };

/** What wrk sends to one column: where, with which headers, and its script (rebuilt per round for signed GETs). */
interface Plan {
  subject: Subject;
  label: string;
  /** The process tree whose CPU is the server's. */
  pid: number;
  url: string;
  headers?: Record<string, string>;
  script(): Promise<string>;
}

/** An s3edge serving every chosen cell at one worker count (of another build when `build` is set). */
interface Edge {
  workers: number;
  build?: string;
  target: Target;
  runner: TargetRunner;
}

function machine(): FastpathResult['machine'] {
  return { cores: cpus().length, model: cpus()[0]?.model.trim() ?? '?', memGiB: totalmem() / 2 ** 30, node: process.version, load1: loadavg()[0] ?? 0 };
}

export interface SignedRequest {
  path: string;
  /** Host (as wrk names it, so it sends this one instead of its own), x-amz-date, x-amz-content-sha256, authorization. */
  headers: Record<string, string>;
}

/** SigV4 header-signed GETs of `keys` in BUCKET, signed now, as wrk sends them. */
export function signedRequests(target: Pick<Target, 'url' | 'credentials'>, keys: readonly string[]): SignedRequest[] {
  const host = new URL(target.url).host;
  const signer = new SigV4Signer(target.credentials);
  return keys.map((key) => {
    const path = `/${BUCKET}/${key}`;
    const { host: signed, ...rest } = signer.sign('GET', host, path, '', EMPTY_SHA256);
    return { path, headers: { Host: signed ?? host, ...rest } };
  });
}

async function checkAll(origin: string, what: string, requests: readonly { path: string; headers?: Record<string, string> }[]): Promise<void> {
  const client = new Client(origin);
  try {
    for (const r of requests) {
      const got = await answer(client, r.path, r.headers);
      if (got !== 'ok') throw new Error(`${what}: GET ${r.path.slice(0, r.path.indexOf('?') >= 0 ? r.path.indexOf('?') : undefined)} answered ${got}`);
    }
  } finally {
    await client.close();
  }
}

const ok200 = (status: number): string => (status === 200 ? 'ok' : `status ${status}`);

/** Varnish's answer: a hit names two transactions in X-Varnish (this request's and the one that filled the object). */
function varnishHit(status: number, headers: Record<string, string | string[] | undefined>): string {
  if (status !== 200) return `status ${status}`;
  return String(headers['x-varnish'] ?? '').trim().split(/\s+/).length === 2 ? 'HIT' : 'MISS';
}

function delta(a: EdgeCacheCounters, b: EdgeCacheCounters, requests: number): CacheDelta {
  return { requests, hits: b.hits - a.hits, misses: b.misses - a.misses, expired: b.expired - a.expired, storageReads: b.storageReads - a.storageReads };
}

/**
 * The hit-ratio pass on one s3edge: `objects` public assets of distinct bytes, each asked `requests`
 * times over fresh connections, the edge cache's counters read around each part: first every object
 * once, then each object's other requests one after another, so consecutive connections (which
 * node:cluster hands to the workers in turn) bring every object to every worker. (Pass after pass of
 * an even number of objects would bring each object back to the same worker every time.)
 */
async function hitRatioPass(edge: Edge, objects: number, requests: number): Promise<HitRatioResult> {
  const placed: { o: CdnObject; body: Buffer }[] = [];
  for (let i = 0; i < objects; i++) {
    const body = randomBytes(SIZE);
    placed.push({ o: await placeCdnObject(edge.target, body, `fp-hit-${i}.bin`), body });
  }
  const xc: Record<string, number> = {};
  let errors = 0;
  const ask = async ({ o, body }: { o: CdnObject; body: Buffer }): Promise<void> => {
    const client = new Client(edge.target.cdnUrl!);
    try {
      const r = await client.request({ path: o.path, method: 'GET', headers: { host: o.host } });
      const got = Buffer.from(await r.body.arrayBuffer());
      const said = xCache(r.statusCode, r.headers);
      xc[said] = (xc[said] ?? 0) + 1;
      if (r.statusCode !== 200 || !got.equals(body)) errors++;
    } catch {
      errors++;
      xc['failed'] = (xc['failed'] ?? 0) + 1;
    } finally {
      await client.close();
    }
  };
  const c0 = await edgeCacheCounters(edge.target);
  for (const p of placed) await ask(p);
  const c1 = await edgeCacheCounters(edge.target);
  for (const p of placed) for (let i = 1; i < requests; i++) await ask(p);
  const c2 = await edgeCacheCounters(edge.target);
  return {
    label: `s3edge w${edge.workers}${edge.build !== undefined ? ` ${edge.build}` : ''}`,
    workers: edge.workers,
    objects,
    requestsPerObject: requests,
    first: delta(c0, c1, objects),
    later: delta(c1, c2, objects * (requests - 1)),
    xCache: xc,
    errors,
  };
}

export async function runFastpathBench(opts: FastpathOptions): Promise<FastpathResult> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const startedAt = new Date();
  const atStart = machine();
  const t0 = performance.now();
  const notes: string[] = [];
  const wrk = findWrk();
  if (!wrk) throw new Error(WRK_MISSING.replace('--load wrk', '--fastpath'));
  const nginxBinary = opts.nginx ? findNginx() : undefined;
  if (opts.nginx && !nginxBinary && (opts.cells.includes('cdn') || opts.cells.includes('proxy'))) {
    log(`bench: fastpath: ${NGINX_MISSING}`);
    notes.push(NGINX_MISSING);
  }
  const varnishd = opts.varnish && opts.cells.includes('cdn') ? findVarnishd() : undefined;
  if (opts.varnish && opts.cells.includes('cdn') && !varnishd) {
    log(`bench: fastpath: ${VARNISH_MISSING}`);
    notes.push(VARNISH_MISSING);
  }
  const builds = [{ label: undefined, root: undefined }, ...(opts.compare ?? [])];
  const subjects = fastpathSubjects(opts.cells, opts.workers, { nginx: nginxBinary !== undefined, varnish: varnishd !== undefined }, (opts.compare ?? []).map((c) => c.label), opts.bareWork ?? []);
  const has = (k: Subject['kind']): boolean => subjects.some((s) => s.kind === k);
  const s3edgeCells = opts.cells.length > 0;

  const stops: (() => Promise<void>)[] = [];
  const edges: Edge[] = [];
  const plans: Plan[] = [];
  const cells: FastpathCell[] = [];
  const probes: Record<string, Record<string, number>> = {};
  const hitRatio: HitRatioResult[] = [];
  let varnish: VarnishServer | undefined;
  let vParams: Record<string, string> | undefined;
  let scriptDir: string | undefined;
  const cpuPids: number[] = [];
  const cpu = new CpuMeter(() => cpuPids);
  try {
    scriptDir = await mkdtemp(join(tmpdir(), 's3edge-bench-fastpath-'));
    rememberTempDir(scriptDir);
    const dir = scriptDir;
    const script = async (name: string, requests?: readonly WrkRequest[]): Promise<string> => writeWrkScript(dir, `${name.replace(/\W+/g, '-')}.lua`, requests);

    // Servers, started at once (untimed); every one that started is stopped in the end.
    const keep = <T extends { stop(): Promise<void>; pid: number }>(x: T): T => {
      stops.push(() => x.stop());
      cpuPids.push(x.pid);
      return x;
    };
    const keepManaged = (x: { url: string; proc: Managed }): { url: string; pid: number; stop(): Promise<void> } => keep({ url: x.url, pid: x.proc.pid, stop: () => x.proc.stop() });
    const origin = has('proxy') || has('varnish') ? keepManaged(await startOrigin()) : undefined;
    const started = await Promise.allSettled([
      ...(s3edgeCells
        ? builds.flatMap(({ label: build, root }) =>
            opts.workers.map(async (workers) => {
              const target = keep(
                await startS3edge({ workers, nodeArgs: [...(opts.nodeArgs ?? [])], ...(root !== undefined ? { root } : {}), ...(has('proxy') ? { env: { S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true' } } : {}) }),
              );
              // The listening line says how many workers serve: a cluster that came up smaller would mislabel its columns.
              if (target.workers !== workers) throw new Error(`s3edge --workers ${workers} reports ${String(target.workers)} workers`);
              edges.push({ workers, ...(build !== undefined ? { build } : {}), target, runner: new TargetRunner(target, new Bodies(), Math.max(...opts.concurrency)) });
            }),
          )
        : []),
      ...subjects.map(async (s) => {
        const label = subjectLabel(s);
        switch (s.kind) {
          case 'bare': {
            const b = keepManaged(await startBareCluster(s.workers, s.workUs ?? 0));
            plans.push({ subject: s, label, pid: b.pid, url: b.url + BARE_PATH, script: () => script(label) });
            return;
          }
          case 'bare-proxy': {
            const b = keepManaged(await startBareProxy(s.workers, origin!.url));
            plans.push({ subject: s, label, pid: b.pid, url: b.url + ORIGIN_PATHS.get(SIZE)!, script: () => script(label) });
            return;
          }
          case 'nginx-static': {
            const n = keep(await startNginx(nginxBinary!, { workers: s.workers }));
            const o = await placeCdnObject(n, randomBytes(SIZE));
            plans.push({ subject: s, label, pid: n.pid, url: n.url + o.path, script: () => script(label) });
            return;
          }
          case 'nginx-proxy': {
            const n = keep(await startNginx(nginxBinary!, { workers: s.workers, proxyPass: origin!.url }));
            plans.push({ subject: s, label, pid: n.pid, url: n.url + ORIGIN_PATHS.get(SIZE)!, script: () => script(label) });
            return;
          }
          case 'varnish': {
            varnish = keep(await startVarnish(varnishd!, origin!.url));
            plans.push({ subject: s, label, pid: varnish.pid, url: varnish.url + CACHEABLE_ORIGIN_PATH, script: () => script(label) });
            return;
          }
          default:
            return; // s3edge's columns: planned once it is loaded
        }
      }),
    ]);
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    edges.sort((a, b) => a.workers - b.workers);
    if (varnish) vParams = varnishParams(varnishd!, varnish.workDir, ['thread_pools', 'thread_pool_min', 'thread_pool_max']);

    // s3edge loaded (untimed): objects for the S3 GETs, the CDN asset, the proxied hostname.
    await Promise.all(
      edges.map(async ({ workers, build, target, runner }) => {
        await runner.createBuckets();
        if (has('presigned') || has('signed')) await runner.ensureReadable(SIZE, opts.objects);
        if (has('cdn')) await runner.ensureCdnObject(SIZE);
        for (const kind of opts.cells) {
          const subject = subjects.find((s) => s.kind === kind && s.workers === workers && s.build === build)!;
          const label = subjectLabel(subject);
          switch (kind) {
            case 'cdn': {
              const o = runner.cdnObject(SIZE);
              await checkAll(target.cdnUrl!, label, [{ path: o.path, headers: { host: o.host } }]);
              plans.push({ subject, label, pid: target.pid, url: target.cdnUrl! + o.path, headers: { Host: o.host }, script: () => script(label) });
              break;
            }
            case 'presigned': {
              const paths = presignedPaths(target, runner.readableKeys(SIZE));
              await checkAll(target.url, label, paths.map((path) => ({ path })));
              const file = await script(label, paths);
              plans.push({ subject, label, pid: target.pid, url: target.url, script: () => Promise.resolve(file) });
              break;
            }
            case 'signed': {
              const keys = runner.readableKeys(SIZE);
              const requests = signedRequests(target, keys).map(({ path, headers: { Host, ...rest } }) => ({ path, headers: { ...rest, host: Host ?? '' } }));
              await checkAll(target.url, label, requests);
              // Signed anew before every round: x-amz-date stays within s3edge's 15 minutes of skew however long the run.
              plans.push({ subject, label, pid: target.pid, url: target.url, script: () => script(label, signedRequests(target, keys)) });
              break;
            }
            case 'proxy': {
              const admin = target.admin!;
              admin(['users', 'create', PROXY_OWNER.user]);
              admin(['projects', 'create', PROXY_OWNER.project, '--user', PROXY_OWNER.user]);
              addProjectHostname(admin, PROXY_HOSTNAME, origin!.url, PROXY_OWNER);
              // Every worker has loaded the route (fresh connections reach each in turn) before anything is timed.
              await until(`s3edge w${workers} does not proxy ${PROXY_HOSTNAME}`, async () => {
                const seen = await probeFresh(target.cdnUrl!, ORIGIN_PATHS.get(SIZE)!, { host: PROXY_HOSTNAME }, 2 * workers, ok200);
                return seen['ok'] === 2 * workers ? undefined : JSON.stringify(seen);
              });
              await checkAll(target.cdnUrl!, label, [{ path: ORIGIN_PATHS.get(SIZE)!, headers: { host: PROXY_HOSTNAME } }]);
              plans.push({ subject, label, pid: target.pid, url: target.cdnUrl! + ORIGIN_PATHS.get(SIZE)!, headers: { Host: PROXY_HOSTNAME }, script: () => script(label) });
              break;
            }
          }
        }
      }),
    );
    // The peers answer 200 with 4 KiB too.
    for (const p of plans) {
      // Every column that is not one of s3edge's cells is a peer.
      if (!(FASTPATH_CELLS as readonly string[]).includes(p.subject.kind)) {
        const u = new URL(p.url);
        await checkAll(u.origin, p.label, [{ path: u.pathname }]);
      }
    }
    // The report's order, whatever finished starting first.
    const ordered = subjects.map((s) => {
      const p = plans.find((x) => x.subject === s);
      if (!p) throw new Error(`${subjectLabel(s)}: not planned`);
      return p;
    });
    for (const p of ordered) log(`bench: fastpath: ${p.label} at ${p.url} (pid ${p.pid}, ${treePids(p.pid).length} processes)`);

    const round = async (p: Plan, concurrency: number, seconds: number, meter?: CpuMeter): Promise<ScaleRound> =>
      measureWrkRound({
        binary: wrk,
        url: p.url,
        script: await p.script(),
        ...(p.headers ? { headers: p.headers } : {}),
        connections: concurrency,
        threads: WRK_THREADS,
        durationMs: seconds * 1000,
        serverPid: p.pid,
        bodyBytes: SIZE,
        ...(meter ? { cpu: meter } : {}),
        what: p.label,
      });
    let probed = false;
    for (const concurrency of opts.concurrency) {
      if (opts.warmupSeconds > 0) for (const p of ordered) await round(p, concurrency, opts.warmupSeconds);
      if (!probed) {
        probed = true;
        for (const p of ordered) {
          const u = new URL(p.url);
          if (p.subject.kind === 'cdn') probes[p.label] = await probeFresh(u.origin, u.pathname, { host: p.headers?.['Host'] ?? u.host }, PROBES, xCache);
          if (p.subject.kind === 'varnish') probes[p.label] = await probeFresh(u.origin, u.pathname, {}, PROBES, varnishHit);
        }
      }
      const mine = ordered.map((p): FastpathCell => ({ subject: p.subject, label: p.label, concurrency, rounds: [], processes: 0 }));
      for (let r = 0; r < opts.rounds; r++) {
        const line: string[] = [];
        for (let i = 0; i < ordered.length; i++) {
          const at = (i + r) % ordered.length;
          const p = ordered[at]!;
          const s = await round(p, concurrency, opts.roundSeconds, cpu);
          const cell = mine[at]!;
          cell.rounds.push(s);
          cell.processes = Math.max(cell.processes, treePids(p.pid).length);
          line.push(`${p.label} ${s.opsPerSec.toFixed(0)}${s.errors ? ` ${s.errors} ERR` : ''}`);
          await sleep(100);
        }
        log(`bench: fastpath c${concurrency} round ${r + 1}/${opts.rounds}: ${line.join(', ')}`);
      }
      cells.push(...mine);
    }
    if (opts.cells.includes('cdn') && opts.hitObjects > 0) {
      for (const e of edges) {
        const h = await hitRatioPass(e, opts.hitObjects, opts.hitRequests);
        log(`bench: fastpath: hit ratio ${h.label}: first pass ${h.first.storageReads} storage reads, later ${h.later.storageReads}; X-Cache ${JSON.stringify(h.xCache)}`);
        hitRatio.push(h);
      }
    }
  } finally {
    for (const e of edges) await e.runner.close().catch(() => undefined);
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    if (scriptDir) {
      await rm(scriptDir, { recursive: true, force: true });
      forgetTempDir(scriptDir);
    }
  }
  const errors = cells.reduce((n, c) => n + c.rounds.reduce((m, r) => m + r.errors, 0), 0);
  if (errors > 0) notes.push(`${errors} requests failed in the timed rounds; the first errors are listed above.`);
  const v = versions(new Set(nginxBinary ? ['s3edge', 'nginx'] : ['s3edge']), nginxBinary);
  const result: FastpathResult = {
    started: startedAt.toISOString(),
    durationMs: performance.now() - t0,
    machine: atStart,
    versions: { s3edge: v.s3edge, node: v.node, wrk: wrkVersion(wrk), ...(v.nginx ? { nginx: v.nginx } : {}), ...(varnishd ? { varnish: varnishVersion(varnishd) } : {}) },
    subjects,
    cells,
    probes,
    hitRatio,
    ...(vParams ? { varnishParams: vParams } : {}),
    notes,
  };
  await writeFile(
    opts.out,
    renderFastpathReport({
      result,
      command: opts.command,
      rounds: opts.rounds,
      roundSeconds: opts.roundSeconds,
      warmupSeconds: opts.warmupSeconds,
      concurrency: opts.concurrency,
      workers: opts.workers,
      objects: opts.objects,
      ...(opts.startAndMemory !== undefined ? { startAndMemory: opts.startAndMemory } : {}),
    }),
  );
  log(`bench: fastpath report written to ${opts.out} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  return result;
}

/** Where --fastpath writes by default. */
export function fastpathResultsFile(): string {
  return join(repoRoot(), 'bench', 'RESULTS-fastpath.md');
}
