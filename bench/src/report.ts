// RESULTS.md: the machine line, issue 4's figures as ratios from this run (target, PASS/MISS), and
// every workload x size x concurrency x target with ops/s, MB/s, p50, p99 and server RSS.
import { cpus, totalmem } from 'node:os';
import { readFileSync } from 'node:fs';
import type { CdnLogCounters } from './cdn.js';
import type { ProfileLine, ProfileSummary } from './profile.js';
import type { TargetName, Versions } from './targets.js';
import { sizeLabel, type IdleResult, type RoundStats, type StreamResult, type Workload } from './workloads.js';

export interface CellResult {
  workload: Workload;
  size: number;
  concurrency: number;
  target: TargetName;
  rounds: RoundStats[];
  /** Medians over the rounds. */
  opsPerSec: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Maximum over the rounds. */
  rssMaxKiB: number;
  /** Maximum over the rounds of the cores other processes used (disturbance). */
  otherCpu: number;
  /** Median over the rounds of the server's CPU microseconds per op. */
  cpuUsPerOp: number;
  /** Sums over the rounds. */
  ops: number;
  errors: number;
  /** max/min - 1 of ops/s over the rounds: how steady the cell was. */
  spread: number;
  firstError?: string;
  /** How each round was bounded, e.g. "3 s" or "16 ops". */
  bound: string;
}

export interface RssFigures {
  idle: IdleResult;
  upload: StreamResult;
}

export interface Figure {
  name: string;
  /** e.g. ">= 0.9x" */
  goal: string;
  value?: number;
  /** How the value is shown: a ratio or MiB. */
  unit: 'x' | 'MiB';
  pass?: boolean;
  detail: string;
  /** The s3edge cell behind a ratio figure, for the profile of a miss. */
  cell?: { workload: Workload; size: number; concurrency: number };
}

export interface BenchResult {
  mode: 'full' | 'smoke';
  started: string;
  durationMs: number;
  rounds: number;
  roundMs: number;
  command: string;
  versions: Versions;
  loadAvg: [number, number];
  plan: {
    listObjects: Partial<Record<TargetName, number>>;
    listPage: number;
    large: number;
    small: number;
    idleConnections: number;
    streamedUploadBytes: number;
  };
  cells: CellResult[];
  rss?: RssFigures;
  /** s3edge's request log counters after the CDN cells. */
  cdnLog?: CdnLogCounters;
  figures: Figure[];
  /** CPU profiles of s3edge in the cells of missed figures. */
  profiles?: ProfileSummary[];
  notes: string[];
}

function find(r: BenchResult, workload: Workload, size: number, concurrency: number, target: TargetName): CellResult | undefined {
  return r.cells.find((c) => c.workload === workload && c.size === size && c.concurrency === concurrency && c.target === target);
}

function num(n: number): string {
  if (n >= 1000) return n.toFixed(0);
  if (n >= 100) return n.toFixed(0);
  if (n >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

function ratioFigure(
  r: BenchResult,
  name: string,
  min: number,
  metric: 'mbPerSec' | 'opsPerSec',
  workload: Workload,
  size: number,
  concurrency: number,
  peer: TargetName,
): Figure {
  const ours = find(r, workload, size, concurrency, 's3edge');
  const theirs = find(r, workload, size, concurrency, peer);
  const unit = metric === 'mbPerSec' ? 'MB/s' : 'ops/s';
  if (!ours || !theirs || theirs[metric] === 0) {
    return { name, goal: `>= ${min}x`, unit: 'x', detail: `not measured in this run (${ours ? '' : 's3edge '}${theirs ? '' : peer} cell missing)` };
  }
  const value = ours[metric] / theirs[metric];
  // s3edge must not fail a single op; a peer's failures are its own (they only lower its rate).
  return {
    name,
    cell: { workload, size, concurrency },
    goal: `>= ${min}x`,
    unit: 'x',
    value,
    pass: value >= min && ours.errors === 0,
    detail:
      `s3edge ${num(ours[metric])} ${unit} / ${peer} ${num(theirs[metric])} ${unit}` +
      (ours.errors ? `; s3edge failed ${ours.errors} ops` : '') +
      (theirs.errors ? `; ${peer} failed ${theirs.errors} ops` : ''),
  };
}

export function computeFigures(r: BenchResult): Figure[] {
  const large = r.plan.large;
  const small = r.plan.small;
  const L = sizeLabel(large);
  const S = sizeLabel(small);
  const n = r.plan.listObjects['s3edge'] ?? 0;
  const page = r.plan.listPage;
  const figures: Figure[] = [
    ratioFigure(r, `${L} PUT, 1 stream, vs the bare hashing ceiling`, 0.9, 'mbPerSec', 'PUT', large, 1, 'ceiling'),
    ratioFigure(r, `${L} PUT, 1 stream, vs s3rver`, 1.5, 'mbPerSec', 'PUT', large, 1, 's3rver'),
    ratioFigure(r, `${L} GET, 1 stream, vs nginx sendfile`, 0.8, 'mbPerSec', 'GET', large, 1, 'nginx'),
    ratioFigure(r, `${S} PUT, 16 connections, durable, vs s3rver`, 2, 'opsPerSec', 'PUT', small, 16, 's3rver'),
    ratioFigure(r, `${S} GET, 16 connections, vs s3rver`, 8, 'opsPerSec', 'GET', small, 16, 's3rver'),
    ratioFigure(r, `LIST ${page} of ${n.toLocaleString('en-US')} keys, 16 connections, vs s3rver`, 5, 'opsPerSec', 'LIST', 0, 16, 's3rver'),
    ratioFigure(r, `LIST ${page} of ${n.toLocaleString('en-US')} keys, 1 connection, vs s3rver (for reference)`, 5, 'opsPerSec', 'LIST', 0, 1, 's3rver'),
  ];
  const up = r.rss?.upload;
  figures.push(
    up
      ? {
          name: `s3edge RSS during a ${sizeLabel(up.bytes)} streamed upload`,
          goal: '<= 300 MiB',
          unit: 'MiB',
          value: up.rssMaxKiB / 1024,
          pass: up.ok && up.rssMaxKiB / 1024 <= 300,
          detail: `max of 100 ms samples; ${(up.baselineKiB / 1024).toFixed(0)} MiB before; upload ${up.ok ? 'ok' : `FAILED: ${up.error ?? up.status}`}, ${num(up.mbPerSec)} MB/s, ${(up.durationMs / 1000).toFixed(1)} s`,
        }
      : { name: 's3edge RSS during a 10 GiB streamed upload', goal: '<= 300 MiB', unit: 'MiB', detail: 'not measured in this run' },
  );
  const idle = r.rss?.idle;
  figures.push(
    idle
      ? {
          name: `s3edge RSS with ${idle.requested} idle keep-alive connections`,
          goal: '<= 512 MiB',
          unit: 'MiB',
          value: idle.rssMaxKiB / 1024,
          pass: idle.errors === 0 && idle.connected >= idle.requested && idle.rssMaxKiB / 1024 <= 512,
          detail: `${idle.connected} connections open, each after one signed HEAD bucket (${idle.errors} failed); ${(idle.baselineKiB / 1024).toFixed(0)} MiB before`,
        }
      : { name: 's3edge RSS with 1000 idle keep-alive connections', goal: '<= 512 MiB', unit: 'MiB', detail: 'not measured in this run' },
  );
  return figures;
}

/** 2 decimals, 3 when 2 would round across the goal (0.798 is not "0.80x" against ">= 0.8x"). */
export function formatFigure(f: Figure): string {
  if (f.value === undefined) return 'n/a';
  if (f.unit === 'MiB') return `${f.value.toFixed(0)} MiB`;
  const goal = Number(/[\d.]+/.exec(f.goal)?.[0] ?? NaN);
  const two = f.value.toFixed(2);
  return `${Math.abs(f.value - goal) < 0.01 && Number(two) !== f.value ? f.value.toFixed(3) : two}x`;
}

function machineLine(r: BenchResult): string {
  let model = 'unknown CPU';
  try {
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? model;
  } catch {
    /* not Linux */
  }
  const v = r.versions;
  const parts = [
    `${cpus().length} cores (${model})`,
    `${(totalmem() / 1024 ** 3).toFixed(1)} GiB RAM`,
    `node ${v.node}`,
    ...(v.nginx ? [`nginx ${v.nginx}`] : []),
    ...(v.moto ? [`moto ${v.moto}`] : []),
    ...(v.s3rver ? [`s3rver ${v.s3rver}`] : []),
    `s3edge ${v.s3edge}`,
    `${r.started.slice(0, 16).replace('T', ' ')} UTC`,
  ];
  return `Machine: ${parts.join(' · ')}`;
}

function dur(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 120 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

const ORDER: readonly TargetName[] = ['s3edge', 's3rver', 'moto', 'ceiling', 'nginx'];
const WORKLOADS: readonly Workload[] = ['PUT', 'GET', 'HEAD', 'DELETE', 'MIXED', 'LIST', 'CDN'];

export function renderReport(r: BenchResult): string {
  const out: string[] = [];
  out.push(r.mode === 'smoke' ? '# s3edge benchmark (smoke run: numbers mean nothing)' : '# s3edge benchmark results');
  out.push('');
  out.push(machineLine(r));
  out.push('');
  out.push(
    `Run: \`${r.command}\` took ${dur(r.durationMs)}; median of ${r.rounds} round${r.rounds === 1 ? '' : 's'} per cell, targets interleaved round by round; ` +
      `1-minute load average ${r.loadAvg[0].toFixed(2)} at the start, ${r.loadAvg[1].toFixed(2)} at the end. Written by the harness: edit bench/src, not this file.`,
  );
  out.push('');
  out.push('## The figures of issue 4');
  out.push('');
  out.push('| figure | measured | target | result | from |');
  out.push('|---|---:|---:|:---:|---|');
  for (const f of r.figures) {
    const v = formatFigure(f);
    const res = f.pass === undefined ? 'n/a' : f.pass ? 'PASS' : '**MISS**';
    out.push(`| ${f.name} | ${v} | ${f.goal} | ${res} | ${f.detail} |`);
  }
  out.push('');
  const cdn = renderCdnSection(r, false);
  if (cdn !== '') out.push(cdn.trimEnd(), '');
  out.push('## Every workload');
  out.push('');
  out.push(
    'Medians over the rounds; RSS is the largest 100 ms sample of the server process (nginx: master + worker) during the timed rounds; ' +
      'spread is max/min - 1 of ops/s over the rounds; other CPU is the most the rest of the machine used during one of the rounds, in cores of 2 ' +
      '(all busy time minus the harness and the servers; above ~0.3 the cell was disturbed); server CPU is the CPU time the server process tree used per op, ' +
      'in microseconds (10 ms clock ticks over the round: less moved by other load than ops/s, a cost rather than a rate); MB = 10^6 bytes of object payload (LIST: XML).',
  );
  out.push('');
  out.push('| workload | size | conc | target | ops/s | MB/s | p50 ms | p99 ms | RSS MiB | errors | round | spread | other CPU | server CPU µs/op |');
  out.push('|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const sorted = [...r.cells].sort(
    (a, b) =>
      WORKLOADS.indexOf(a.workload) - WORKLOADS.indexOf(b.workload) || a.size - b.size || a.concurrency - b.concurrency || ORDER.indexOf(a.target) - ORDER.indexOf(b.target),
  );
  for (const c of sorted) {
    const size = c.workload === 'LIST' ? `${r.plan.listPage} of ${(r.plan.listObjects[c.target] ?? 0).toLocaleString('en-US')}` : sizeLabel(c.size);
    const mb = c.workload === 'HEAD' || c.workload === 'DELETE' ? '-' : num(c.mbPerSec);
    const name = c.target === 's3edge' ? '**s3edge**' : c.target;
    out.push(
      `| ${c.workload} | ${size} | ${c.concurrency} | ${name} | ${num(c.opsPerSec)} | ${mb} | ${num(c.p50Ms)} | ${num(c.p99Ms)} | ${(c.rssMaxKiB / 1024).toFixed(0)} | ${c.errors} | ${c.bound} | ${(c.spread * 100).toFixed(0)}% | ${c.otherCpu.toFixed(2)} | ${num(c.cpuUsPerOp)} |`,
    );
  }
  const failing = sorted.filter((c) => c.firstError !== undefined);
  if (failing.length > 0) {
    out.push('');
    out.push('First error of each cell with failures:');
    out.push('');
    for (const c of failing) out.push(`- ${c.workload} ${sizeLabel(c.size)} c${c.concurrency} ${c.target}: \`${(c.firstError ?? '').replace(/`/g, "'").slice(0, 300)}\``);
  }
  if (r.profiles && r.profiles.length > 0) {
    out.push('');
    out.push('## Profiles of the missed targets');
    out.push('');
    out.push(
      "Each missed figure's s3edge cell, run again (1 s warm-up, one round) against a fresh s3edge started with `--cpu-prof`; the main thread's profile, " +
        'as percent of the profiled wall time. Self: time in the function itself (native calls such as `writev` are the syscall). Inclusive: with everything it calls. ' +
        'Idle is time the event loop waited (for the client, the disk or the thread pool).',
    );
    for (const p of r.profiles) {
      out.push('');
      out.push(`### ${p.figure}`);
      out.push('');
      if (p.error) {
        out.push(`Profiling failed: ${p.error}`);
        continue;
      }
      out.push(`${p.cell}: ${num(p.opsPerSec)} ops/s in the profiled round; ${(p.profiledMs / 1000).toFixed(1)} s profiled, idle ${p.idlePct.toFixed(1)}%.`);
      out.push('');
      out.push('| self % | function | | inclusive % | function |');
      out.push('|---:|---|---|---:|---|');
      const rows = Math.max(p.self.length, p.inclusive.length);
      for (let i = 0; i < rows; i++) {
        const a = p.self[i];
        const b = p.inclusive[i];
        const cell = (l: ProfileLine | undefined): string => (l ? `${l.pct.toFixed(1)} | \`${l.fn.replace(/[`|]/g, "'")}\`` : ' | ');
        out.push(`| ${cell(a)} | | ${cell(b)} |`);
      }
    }
  }
  out.push('');
  out.push('## How it was measured');
  out.push('');
  for (const line of METHOD) out.push(`- ${line}`);
  if (r.notes.length > 0) {
    out.push('');
    out.push('## Notes from this run');
    out.push('');
    for (const n of r.notes) out.push(`- ${n}`);
  }
  out.push('');
  return out.join('\n');
}

export const CDN_HEADING = '## The CDN edge vs nginx';

/**
 * The CDN section: per size and concurrency, requests/s, MB/s and p99 of s3edge's CDN and of nginx,
 * and their ratios; '' when no CDN cell ran. `standalone`: it goes into a file written by another run.
 */
export function renderCdnSection(r: BenchResult, standalone: boolean): string {
  const cells = r.cells.filter((c) => c.workload === 'CDN');
  if (cells.length === 0) return '';
  const out: string[] = [CDN_HEADING, ''];
  if (standalone) {
    out.push(`${machineLine(r)}`, '');
    out.push(`From \`${r.command}\` (${dur(r.durationMs)}), a CDN-only run: the sections above come from the run at the top of this file. Written by the harness.`, '');
  }
  out.push(
    "The same bytes served as a public asset by s3edge's CDN listener (`Host: cdn.localhost:<port>`; request log on with its defaults; " +
      'the warm-up round warms the edge cache) and as a static file by nginx (sendfile, one worker), read with unsigned keep-alive GETs ' +
      `by the harness's undici client, which checks status and length. Medians of ${r.rounds} round${r.rounds === 1 ? '' : 's'}` +
      `${r.roundMs ? ` of ${(r.roundMs / 1000).toFixed(0)} s` : ''}, targets interleaved; ratio = s3edge / nginx (p99: lower is better, so > 1x is slower).`,
    '',
  );
  out.push('| size | conc | s3edge req/s | nginx req/s | req/s ratio | s3edge MB/s | nginx MB/s | s3edge p99 ms | nginx p99 ms | p99 ratio |');
  out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const keys = [...new Set(cells.map((c) => `${c.size}/${c.concurrency}`))];
  for (const key of keys) {
    const [size, conc] = key.split('/').map(Number) as [number, number];
    const ours = find(r, 'CDN', size, conc, 's3edge');
    const theirs = find(r, 'CDN', size, conc, 'nginx');
    const ratio = (a: number | undefined, b: number | undefined): string => (a !== undefined && b ? `${(a / b).toFixed(2)}x` : 'n/a');
    const v = (c: CellResult | undefined, k: 'opsPerSec' | 'mbPerSec' | 'p99Ms'): string => (c ? num(c[k]) : 'n/a');
    out.push(
      `| ${sizeLabel(size)} | ${conc} | ${v(ours, 'opsPerSec')} | ${v(theirs, 'opsPerSec')} | ${ratio(ours?.opsPerSec, theirs?.opsPerSec)} | ` +
        `${v(ours, 'mbPerSec')} | ${v(theirs, 'mbPerSec')} | ${v(ours, 'p99Ms')} | ${v(theirs, 'p99Ms')} | ${ratio(ours?.p99Ms, theirs?.p99Ms)} |`,
    );
  }
  const errors = cells.reduce((n, c) => n + c.errors, 0);
  const other = Math.max(0, ...cells.map((c) => c.otherCpu));
  out.push('');
  out.push(
    `Other processes used up to ${other.toFixed(2)} of the 2 cores during these rounds` +
      (other > 0.3 ? ': the machine was shared, so the numbers are lower and noisier than on a quiet machine.' : '.'),
    '',
  );
  if (errors > 0) out.push(`${errors} CDN GETs failed; see the errors column of the table of every workload.`, '');
  const c = r.cdnLog;
  if (c) {
    const cache =
      c.cacheHits !== undefined && c.cacheMisses !== undefined
        ? `its edge cache counted ${c.cacheHits} hits and ${c.cacheMisses} misses.`
        : 'its edge cache reported no statistics (this build serves the CDN from storage, without the edge cache).';
    out.push(
      `s3edge after these cells: its request log wrote ${c.flushed} requests to SQLite, dropped ${c.dropped} (buffer full) and held ` +
        `${c.buffered} for the next flush; ${cache}`,
      '',
    );
  }
  return out.join('\n');
}

/** `existing` with its CDN section replaced by `section` (or `section` inserted before the method, or appended). */
export function spliceSection(existing: string, section: string): string {
  const body = `${section.trimEnd()}\n`;
  if (existing.trim() === '') return body;
  // Index of the heading in `existing` (the padding lets a heading on the first line match too).
  const at = `\n${existing}`.indexOf(`\n${CDN_HEADING}\n`);
  if (at >= 0) {
    const next = existing.indexOf('\n## ', at + CDN_HEADING.length);
    return existing.slice(0, at) + body + (next < 0 ? '' : `\n${existing.slice(next + 1)}`);
  }
  const method = existing.indexOf('\n## How it was measured\n');
  if (method >= 0) return `${existing.slice(0, method + 1)}${body}\n${existing.slice(method + 1)}`;
  return `${existing.trimEnd()}\n\n${body}`;
}

const METHOD: readonly string[] = [
  'Load generator: our own (bench/src), one undici Pool per target (keep-alive, up to 16 connections, no pipelining), requests sent with `Pool.dispatch` and a bare handler that counts GET bodies without storing them. Every request is SigV4-signed with node:crypto (signing key cached per day, date per second), also for nginx and the ceiling, which ignore it, so the generator costs the same against every target. It shares the 2 cores with the server under test.',
  'PUT bodies are pre-generated random buffers, one per size, sent with their precomputed SHA-256 as `x-amz-content-sha256` (a signed payload the server verifies). Every PUT writes a new key, as warp does; large objects are deleted (untimed) after each round, 4 KiB ones feed the DELETE workload. GET checks the status and the byte count of the body.',
  'Workloads: PUT, GET, HEAD (4 KiB objects; a HEAD does not read the body, so its cost does not depend on size), DELETE (of objects written by the PUT rounds, 4 KiB: a delete is a metadata commit and an unlink at any size), MIXED (45% GET, 30% HEAD, 15% PUT, 10% DELETE of objects it wrote itself), LIST (ListObjectsV2, max-keys=1000 after a random start key, in a bucket of 100k 1-byte objects; a page with fewer than 1000 keys counts as a failure).',
  'Each cell (workload x size x concurrency) runs a warm-up round per target first (1 s, or a few ops for 256 MiB: this VM is slow on freshly touched memory), then the rounds; in each round every target runs once, the order rotating from round to round. 4 KiB, 1 MiB and LIST rounds are time-bounded (ops in flight at the deadline finish and count); 256 MiB rounds are a fixed number of ops (2 PUT / 3 GET at 1 connection, 16 at 16 connections).',
  'Targets, each on 127.0.0.1 in its own temp dir: s3edge (`node dist/bin/s3edge.js serve`, defaults: durable, fsync before the 200), s3rver (bench dependency, its own process, no fsync), moto (`python3 -m moto.server`, objects in memory), nginx (`sendfile on`, one worker, serving files with the same bytes), and the ceiling: a bare node:http server (bench/src/ceiling.ts) that hashes SHA-256 + MD5 inline on its one thread, writes 1 MiB batches (one write in flight while the next MiB arrives), fsyncs and renames for PUT, and sends the file with 1 MiB reads for GET.',
  'The generator has a ceiling of its own: one undici GET stream reads about 1.0-1.3 GB/s on this VM (curl reads the same nginx file at 1.3-1.5 GB/s), so the nginx rows of 256 MiB GET are partly the client\'s limit and the ratio against nginx is, if anything, flattering to s3edge.',
  'Left out on purpose: moto at 256 MiB with 16 connections (16 x 256 MiB held in a Python process per round would take minutes per round); nginx and the ceiling in HEAD/DELETE/MIXED/LIST (they are not S3 servers).',
  "CDN: one public file per size, uploaded to s3edge as an asset through the management API (a key made with the admin CLI) and written to nginx's root; unsigned GETs with keep-alive (`Host: cdn.localhost:<port>` for s3edge's CDN listener), the body counted, not stored. s3edge runs with its defaults, so its request log records every GET (buffer of 10000, flushed every second) and its edge cache serves the file after the warm-up round.",
  'RSS figures: a fresh s3edge (max object size raised above 10 GiB, nothing else changed). 1000 connections are opened by 1000 concurrent signed HEAD bucket requests and then held idle for 3 s while RSS is sampled; then one 10 GiB PUT streams a generated body (the same 1 MiB block repeated, UNSIGNED-PAYLOAD) while RSS is sampled every 100 ms.',
];
