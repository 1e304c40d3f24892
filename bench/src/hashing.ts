// --hashing: does hashing uploads in the worker thread keep small GETs fast while large uploads run?
// s3edge servers in one run, the same build: one hashing on the event loop (workerThreshold 0), one with
// one worker thread and one with two (MD5 + SHA-256 + checksum off the loop), rounds interleaved so a
// noisy machine hits them alike. Each round and server: small GETs at a fixed rate on an idle server (the
// baseline), then the same GETs while `uploads` PUTs of `uploadBytes` run at once; reported are the
// GETs' p50/p99 latency (measured from when each was due, so a stalled event loop counts in full) and
// the uploads' combined MB/s. Writes bench/RESULTS-hashing.md unless told where.
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { writeFile } from 'node:fs/promises';
import { S3HttpClient } from './client.js';
import { CpuMeter, sleep } from './proc.js';
import { EMPTY_SHA256 } from './sigv4.js';
import { repoRoot, startS3edge, type Target } from './targets.js';
import { Bodies, median, percentile } from './workloads.js';

export interface HashingVariant {
  name: string;
  /** S3EDGE_* settings of this server. */
  env: Record<string, string>;
}

export const HASHING_VARIANTS: readonly HashingVariant[] = [
  { name: 'event loop', env: { S3EDGE_HASHING_WORKER_THRESHOLD: '0' } },
  { name: 'worker', env: { S3EDGE_HASHING_WORKER_THRESHOLD: '1MiB', S3EDGE_HASHING_WORKER_THREADS: '1' } },
  { name: '2 workers', env: { S3EDGE_HASHING_WORKER_THRESHOLD: '1MiB', S3EDGE_HASHING_WORKER_THREADS: '2' } },
];

export interface HashingOptions {
  rounds: number;
  uploads: number;
  uploadBytes: number;
  getBytes: number;
  /** Small GETs sent per second, whatever the answers do (an open loop). */
  getRate: number;
  /** How long the idle baseline sends GETs. */
  idleMs: number;
  out: string;
  command: string;
  log?: (line: string) => void;
}

export interface HashingRound {
  variant: string;
  round: number;
  idle: LatencyStats;
  loaded: LatencyStats;
  /** All uploads' bytes over the time from the first start to the last end. */
  uploadMBps: number;
  uploadErrors: number;
  /** Cores the rest of the machine used during the loaded phase. */
  otherCpu: number;
}

export interface LatencyStats {
  count: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface HashingSummary {
  variant: string;
  idleP50Ms: number;
  idleP99Ms: number;
  loadedP50Ms: number;
  loadedP99Ms: number;
  loadedMaxMs: number;
  uploadMBps: number;
  errors: number;
  otherCpu: number;
}

export interface HashingResult {
  started: string;
  durationMs: number;
  options: Omit<HashingOptions, 'log' | 'out'>;
  rounds: HashingRound[];
  summary: HashingSummary[];
  loadAvg: [number, number];
}

export function latencyStats(latencies: readonly number[], errors: number): LatencyStats {
  const sorted = Float64Array.from(latencies).sort();
  return { count: latencies.length, errors, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted[sorted.length - 1] ?? 0 };
}

/** Per variant, the median of each figure over its rounds (errors summed, other CPU the worst). */
export function summariseHashing(rounds: readonly HashingRound[]): HashingSummary[] {
  const names = [...new Set(rounds.map((r) => r.variant))];
  return names.map((variant) => {
    const mine = rounds.filter((r) => r.variant === variant);
    return {
      variant,
      idleP50Ms: median(mine.map((r) => r.idle.p50Ms)),
      idleP99Ms: median(mine.map((r) => r.idle.p99Ms)),
      loadedP50Ms: median(mine.map((r) => r.loaded.p50Ms)),
      loadedP99Ms: median(mine.map((r) => r.loaded.p99Ms)),
      loadedMaxMs: median(mine.map((r) => r.loaded.maxMs)),
      uploadMBps: median(mine.map((r) => r.uploadMBps)),
      errors: mine.reduce((n, r) => n + r.idle.errors + r.loaded.errors + r.uploadErrors, 0),
      otherCpu: Math.max(0, ...mine.map((r) => r.otherCpu)),
    };
  });
}

/** GETs of `path` at a fixed rate until `until` resolves; each latency counts from when the GET was due. */
export async function pacedGets(client: S3HttpClient, rate: number, until: Promise<unknown>, path = '/hashing/small'): Promise<LatencyStats> {
  const latencies: number[] = [];
  let errors = 0;
  let done = false;
  void until.finally(() => (done = true));
  const inFlight: Promise<void>[] = [];
  const interval = 1000 / rate;
  const t0 = performance.now();
  for (let i = 0; !done; i++) {
    const due = t0 + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    if (done) break;
    inFlight.push(
      client.send('GET', { path, payloadHash: EMPTY_SHA256 }).then(
        (r) => {
          if (r.status === 200) latencies.push(performance.now() - due);
          else errors++;
        },
        () => void errors++,
      ),
    );
  }
  await Promise.all(inFlight);
  return latencyStats(latencies, errors);
}

async function prepare(target: Target, bodies: Bodies, getBytes: number): Promise<S3HttpClient> {
  const client = new S3HttpClient(target.url, target.credentials, 8);
  const bucket = await client.send('PUT', { path: '/hashing', payloadHash: EMPTY_SHA256 });
  const small = bodies.get(getBytes);
  const put = await client.send('PUT', { path: '/hashing/small', body: small.buf, payloadHash: small.sha256 });
  if (bucket.status !== 200 || put.status !== 200) throw new Error(`hashing bench: setup answered ${bucket.status} / ${put.status}`);
  return client;
}

async function oneRound(target: Target, variant: string, round: number, bodies: Bodies, o: HashingOptions, cpu: CpuMeter): Promise<HashingRound> {
  const gets = new S3HttpClient(target.url, target.credentials, 8);
  const uploads = new S3HttpClient(target.url, target.credentials, o.uploads);
  try {
    const idle = await pacedGets(gets, o.getRate, sleep(o.idleMs));
    const body = bodies.get(o.uploadBytes);
    const cpuStart = cpu.snapshot();
    const start = performance.now();
    let uploadErrors = 0;
    const all = Promise.all(
      Array.from({ length: o.uploads }, async (_, i) => {
        const r = await uploads.send('PUT', { path: `/hashing/large-${i}`, body: body.buf, payloadHash: body.sha256 }).catch(() => undefined);
        if (r?.status !== 200) uploadErrors++;
      }),
    );
    const loaded = await pacedGets(gets, o.getRate, all);
    const secs = (performance.now() - start) / 1000;
    return {
      variant,
      round,
      idle,
      loaded,
      uploadMBps: (o.uploads * o.uploadBytes) / 1e6 / secs,
      uploadErrors,
      otherCpu: cpu.otherCores(cpuStart),
    };
  } finally {
    await Promise.all([gets.pool.close(), uploads.pool.close()]);
  }
}

export async function runHashingBench(o: HashingOptions): Promise<HashingResult> {
  const log = o.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const started = new Date();
  const load1 = loadavg()[0] ?? 0;
  const bodies = new Bodies();
  const maxObject = String(Math.max(o.uploadBytes * 2, 5 * 1024 ** 3));
  const targets: Target[] = [];
  try {
    for (const v of HASHING_VARIANTS) targets.push(await startS3edge({ env: { ...v.env, S3EDGE_MAX_OBJECT_SIZE: maxObject } }));
    for (const t of targets) await (await prepare(t, bodies, o.getBytes)).pool.close();
    const cpu = new CpuMeter(() => targets.map((t) => t.pid));
    const rounds: HashingRound[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      // Each round starts with the next variant, and every other round runs them backwards (ABC, CAB, BCA...).
      const n = HASHING_VARIANTS.length;
      const rotated = Array.from({ length: n }, (_, k) => (k + round - 1) % n);
      const order = round % 2 === 1 ? rotated : rotated.reverse();
      for (const i of order) {
        const variant = HASHING_VARIANTS[i] as HashingVariant;
        const r = await oneRound(targets[i] as Target, variant.name, round, bodies, o, cpu);
        rounds.push(r);
        log(
          `bench hashing: round ${round} ${variant.name}: GET p99 idle ${r.idle.p99Ms.toFixed(2)} ms, during uploads ${r.loaded.p99Ms.toFixed(2)} ms; ` +
            `uploads ${r.uploadMBps.toFixed(0)} MB/s; other CPU ${r.otherCpu.toFixed(2)}`,
        );
      }
    }
    const { log: _log, out: _out, ...options } = o;
    const result: HashingResult = {
      started: started.toISOString(),
      durationMs: Date.now() - started.getTime(),
      options,
      rounds,
      summary: summariseHashing(rounds),
      loadAvg: [load1, loadavg()[0] ?? 0],
    };
    await writeFile(o.out, renderHashingReport(result));
    return result;
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot(), encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

const f2 = (n: number): string => (n >= 100 ? n.toFixed(0) : n.toFixed(2));

export function renderHashingReport(r: HashingResult): string {
  const o = r.options;
  const mib = (n: number): string => (n >= 1024 * 1024 ? `${n / 1024 / 1024} MiB` : `${n / 1024} KiB`);
  const out = [
    '# Hashing on the event loop vs in the worker thread',
    '',
    `Machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}) · ${(totalmem() / 1024 ** 3).toFixed(1)} GiB RAM · node ${process.versions.node} · s3edge ${commit()} · ${r.started.slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `Run: \`${o.command}\` took ${(r.durationMs / 1000).toFixed(0)} s; ${o.rounds} rounds per server, servers interleaved (the order rotates and reverses round by round); 1-minute load average ${r.loadAvg[0].toFixed(2)} at the start, ${r.loadAvg[1].toFixed(2)} at the end. Written by the harness (bench/src/hashing.ts).`,
    '',
    `Each round: ${mib(o.getBytes)} GETs at ${o.getRate}/s on the idle server for ${(o.idleMs / 1000).toFixed(0)} s, then the same GETs while ${o.uploads} PUTs of ${mib(o.uploadBytes)} run at once (signed payload: the server computes MD5, SHA-256 and checks the signed hash). Latency counts from when each GET was due. Medians over the rounds; other CPU is the most the rest of the machine used during one loaded phase (cores of ${cpus().length}).`,
    '',
    '| hashing | GET p50 idle ms | GET p99 idle ms | GET p50 during uploads ms | GET p99 during uploads ms | GET max during uploads ms | uploads MB/s | errors | other CPU |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.summary.map(
      (s) =>
        `| ${s.variant} | ${f2(s.idleP50Ms)} | ${f2(s.idleP99Ms)} | ${f2(s.loadedP50Ms)} | ${f2(s.loadedP99Ms)} | ${f2(s.loadedMaxMs)} | ${f2(s.uploadMBps)} | ${s.errors} | ${s.otherCpu.toFixed(2)} |`,
    ),
    '',
    '## Every round',
    '',
    '| round | hashing | GETs idle | p99 idle ms | GETs during uploads | p99 during uploads ms | max ms | uploads MB/s | other CPU |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.rounds.map(
      (x) =>
        `| ${x.round} | ${x.variant} | ${x.idle.count} | ${f2(x.idle.p99Ms)} | ${x.loaded.count} | ${f2(x.loaded.p99Ms)} | ${f2(x.loaded.maxMs)} | ${f2(x.uploadMBps)} | ${x.otherCpu.toFixed(2)} |`,
    ),
    '',
  ];
  return out.join('\n');
}
