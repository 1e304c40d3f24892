// --fastpath's columns, acceptance ratios and report (bench/RESULTS-fastpath.md): pure functions of a
// run's result, so the unit tests render them without servers. The run itself is bench/src/fastpath.ts.
import { pct, summariseRounds, type ScaleRound } from './scale.js';

/** The s3edge paths --fastpath-cells chooses among. */
export type FastpathCellName = 'cdn' | 'presigned' | 'signed' | 'proxy';
export const FASTPATH_CELLS: readonly FastpathCellName[] = ['cdn', 'presigned', 'signed', 'proxy'];

/** A column of the run: one server and what wrk asks it. s3edge's four are its cells. */
export type SubjectKind = FastpathCellName | 'bare' | 'bare-proxy' | 'nginx-static' | 'nginx-proxy' | 'varnish';

export interface Subject {
  kind: SubjectKind;
  /** s3edge's and the bare cluster's `--workers`, nginx's `worker_processes`; Varnish: 1 (one multi-threaded target). */
  workers: number;
  /** An s3edge cell of another build (--fastpath-compare LABEL=DIR): its label; absent for this build's. */
  build?: string;
  /** A bare cluster spinning this many µs of CPU per answer (--fastpath-bare-work); absent for the ceiling itself. */
  workUs?: number;
}

const NAMES: Record<SubjectKind, string> = {
  cdn: 's3edge CDN hit',
  presigned: 's3edge presigned GET',
  signed: 's3edge signed GET',
  proxy: 's3edge edge proxy',
  bare: 'bare node',
  'bare-proxy': 'bare node proxy',
  'nginx-static': 'nginx static',
  'nginx-proxy': 'nginx proxy_pass',
  varnish: 'Varnish',
};

export function subjectLabel(s: Subject): string {
  if (s.kind === 'varnish') return NAMES.varnish;
  const work = s.workUs !== undefined ? ` +${s.workUs} µs` : '';
  return `${NAMES[s.kind]}${work} w${s.workers}${s.build !== undefined ? ` ${s.build}` : ''}`;
}

/** Which servers the run needs besides s3edge. */
export interface Peers {
  nginx: boolean;
  varnish: boolean;
}

/**
 * The columns of a run, in the report's order: per worker count, s3edge's chosen cells (then the same
 * cells of each build named by --fastpath-compare, for a before/after in one run), then the
 * ceilings they are judged by (the bare cluster for the CDN and S3 cells, nginx static for the CDN,
 * nginx proxy_pass for the proxy, and the bare node proxy: the runtime's own ceiling for it); Varnish
 * once, last, when the CDN cell runs. `bareWork`: the bare cluster again with that many µs of work per
 * answer, after the ceiling, at every worker count.
 */
export function fastpathSubjects(
  cells: readonly FastpathCellName[],
  workers: readonly number[],
  peers: Peers,
  builds: readonly string[] = [],
  bareWork: readonly number[] = [],
): Subject[] {
  const out: Subject[] = [];
  const has = (c: FastpathCellName): boolean => cells.includes(c);
  for (const w of workers) {
    for (const c of FASTPATH_CELLS) if (has(c)) out.push({ kind: c, workers: w });
    for (const build of builds) for (const c of FASTPATH_CELLS) if (has(c)) out.push({ kind: c, workers: w, build });
    if (has('cdn') || has('presigned') || has('signed') || bareWork.length > 0) out.push({ kind: 'bare', workers: w });
    for (const workUs of bareWork) out.push({ kind: 'bare', workers: w, workUs });
    if (has('cdn') && peers.nginx) out.push({ kind: 'nginx-static', workers: w });
    if (has('proxy')) out.push({ kind: 'bare-proxy', workers: w });
    if (has('proxy') && peers.nginx) out.push({ kind: 'nginx-proxy', workers: w });
  }
  if (has('cdn') && peers.varnish) out.push({ kind: 'varnish', workers: 1 });
  return out;
}

export interface FastpathCell {
  subject: Subject;
  label: string;
  concurrency: number;
  rounds: ScaleRound[];
  /** Processes in the server's tree when its rounds ended: what its CPU per op is summed over. */
  processes: number;
}

export interface AcceptanceRatio {
  name: string;
  numerator: SubjectKind;
  denominator: SubjectKind;
  /** The issue's bar (numerator / denominator at least this); none: shown, not judged. */
  threshold?: number;
}

/** Issue 30's acceptance ratios, each at every concurrency and worker count of the run. */
export const ACCEPTANCE: readonly AcceptanceRatio[] = [
  { name: 'CDN hit / bare node', numerator: 'cdn', denominator: 'bare', threshold: 0.6 },
  { name: 'CDN hit / Varnish', numerator: 'cdn', denominator: 'varnish' },
  { name: 'CDN hit / nginx static', numerator: 'cdn', denominator: 'nginx-static' },
  { name: 'presigned S3 GET / bare node', numerator: 'presigned', denominator: 'bare', threshold: 0.35 },
  // The issue names 0.35x for presigned GETs; the header-signed GET is the same path with header auth.
  { name: 'header-signed S3 GET / bare node', numerator: 'signed', denominator: 'bare', threshold: 0.35 },
  { name: 'edge proxy / nginx proxy_pass', numerator: 'proxy', denominator: 'nginx-proxy', threshold: 0.9 },
  // How near the runtime's own proxy s3edge's is, and how near nginx the runtime gets at all.
  { name: 'edge proxy / bare node proxy', numerator: 'proxy', denominator: 'bare-proxy' },
  { name: 'bare node proxy / nginx proxy_pass', numerator: 'bare-proxy', denominator: 'nginx-proxy' },
];

function findCell(cells: readonly FastpathCell[], kind: SubjectKind, workers: number, concurrency: number, workUs?: number): FastpathCell | undefined {
  // Varnish is one target: every worker count is judged against it. This build's cells, not another's.
  return cells.find(
    (c) => c.subject.kind === kind && c.concurrency === concurrency && (kind === 'varnish' || c.subject.workers === workers) && c.subject.build === undefined && c.subject.workUs === workUs,
  );
}

/** numerator / denominator of the medians' requests/s at equal workers, or undefined when either is missing. */
export function acceptanceRatio(cells: readonly FastpathCell[], ratio: AcceptanceRatio, workers: number, concurrency: number): number | undefined {
  const a = findCell(cells, ratio.numerator, workers, concurrency);
  const b = findCell(cells, ratio.denominator, workers, concurrency);
  if (!a || !b) return undefined;
  const d = summariseRounds(b.rounds).opsPerSec;
  return d > 0 ? summariseRounds(a.rounds).opsPerSec / d : undefined;
}

/** "0.22x MISS", "0.65x PASS", "1.10x" (no threshold) or "n/a". */
export function formatRatio(value: number | undefined, threshold?: number): string {
  if (value === undefined) return 'n/a';
  const v = `${value.toFixed(2)}x`;
  if (threshold === undefined) return v;
  return `${v} ${value >= threshold ? 'PASS' : '**MISS**'}`;
}

/** The edge cache's counters moved by part of the hit-ratio pass (differences of /api/v3/metrics). */
export interface CacheDelta {
  requests: number;
  hits: number;
  misses: number;
  expired: number;
  storageReads: number;
}

/** The "origin fetches and hit ratio" pass on one s3edge. */
export interface HitRatioResult {
  label: string;
  workers: number;
  objects: number;
  requestsPerObject: number;
  /** The first request of every object. */
  first: CacheDelta;
  /** Every later request. */
  later: CacheDelta;
  /** X-Cache (or status) of every answer. */
  xCache: Record<string, number>;
  /** Requests that did not answer 200 with the object's 4 KiB. */
  errors: number;
}

export interface HitRatioFigures {
  requests: number;
  storageReads: number;
  readsPerObject: number;
  /** Hits over every request. */
  hitRatio: number;
  /** Hits over the requests after each object's first. */
  hitRatioAfterWarmup: number;
}

export function hitRatioFigures(h: HitRatioResult): HitRatioFigures {
  const requests = h.first.requests + h.later.requests;
  const hits = h.first.hits + h.later.hits;
  const storageReads = h.first.storageReads + h.later.storageReads;
  return {
    requests,
    storageReads,
    readsPerObject: h.objects > 0 ? storageReads / h.objects : 0,
    hitRatio: requests > 0 ? hits / requests : 0,
    hitRatioAfterWarmup: h.later.requests > 0 ? h.later.hits / h.later.requests : 0,
  };
}

export interface MachineInfo {
  cores: number;
  model: string;
  memGiB: number;
  node: string;
  load1: number;
}

export interface FastpathResult {
  started: string;
  durationMs: number;
  machine: MachineInfo;
  versions: { s3edge: string; node: string; wrk: string; nginx?: string; varnish?: string };
  subjects: Subject[];
  cells: FastpathCell[];
  /** After the first warm-up, over fresh connections: s3edge's X-Cache, Varnish's hit or miss (X-Varnish). */
  probes: Record<string, Record<string, number>>;
  hitRatio: HitRatioResult[];
  /** Varnish's thread settings as it ran (varnishadm param.show). */
  varnishParams?: Record<string, string>;
  notes: string[];
}

export interface FastpathReportInput {
  result: FastpathResult;
  command: string;
  rounds: number;
  roundSeconds: number;
  /** 0: no warm-up. */
  warmupSeconds: number;
  concurrency: readonly number[];
  workers: readonly number[];
  /** 4 KiB objects the S3 GET cells cycle through. */
  objects: number;
  /**
   * The "Start and memory" section's body (markdown, without its heading): start to /healthz and idle
   * RSS, measured by bench/src/start.ts. Without it the section says it was not measured in this run.
   */
  startAndMemory?: string;
}

function describe(input: FastpathReportInput): string[] {
  const { result: r } = input;
  const has = (k: SubjectKind): boolean => r.subjects.some((s) => s.kind === k);
  const lines = [
    '## What runs',
    '',
    `- **s3edge wN**: \`serve --workers N\` with its defaults (SQLite, request log on; its stdout, a JSON line a request, to a file as \`serve > s3edge.log\` would), one server per worker count serving every s3edge column${has('proxy') ? ' (with `edge.allowPrivateOrigins` on, which only the edge proxy\'s origin check reads: the origin is on loopback)' : ''}.`,
  ];
  if (has('cdn')) lines.push('  - **CDN hit**: keep-alive GETs of one public 4 KiB asset (uploaded through the management API) from the CDN listener with the CDN `Host`; the edge cache warm (X-Cache probes below).');
  if (has('presigned')) lines.push(`  - **presigned GET**: one presigned URL (query-string SigV4, a day's expiry) per object, ${input.objects} objects of 4 KiB, cycled through by the Lua script.`);
  if (has('signed')) {
    lines.push(
      `  - **signed GET**: one request per object (${input.objects}) with its own SigV4 \`Authorization\` header (\`x-amz-date\` of signing time, \`x-amz-content-sha256\` of the empty body),`,
      '    formatted once by the Lua script and cycled through; re-signed before every round and warm-up (s3edge accepts 15 minutes of clock skew), so a long run never goes stale.',
    );
  }
  if (has('proxy')) lines.push('  - **edge proxy**: keep-alive GETs of `/4k` with `Host` a verified project hostname (admin CLI) whose origin is the bare origin below (`Cache-Control: no-store`: proxying, not caching).');
  if (has('bare')) lines.push('- **bare node wN**: node:http under node:cluster with N workers (`main.js --internal-bare-cluster N`, bench/src/bare.ts) answering every GET with 4 KiB from memory: the runtime\'s ceiling at the same worker count.');
  if (r.subjects.some((s) => s.workUs !== undefined)) lines.push('- **bare node +N µs wN**: the same, each answer first spinning N µs of CPU (`performance.now()` in a loop; `main.js --internal-bare-cluster N WORK_US`).');
  if (has('nginx-static')) lines.push('- **nginx static wN**: `worker_processes N`, `sendfile on`, the CDN asset\'s bytes as a file.');
  if (has('bare-proxy')) lines.push('- **bare node proxy wN**: node:http under node:cluster with N workers (`main.js --internal-bare-proxy N ORIGIN`, bench/src/bare.ts), each forwarding every GET to the origin below over an undici Pool (keep-alive, up to 64 connections) and streaming the answer back: no routing, rules or logging. The runtime\'s ceiling for a proxy in Node.');
  if (has('nginx-proxy')) lines.push('- **nginx proxy_pass wN**: `worker_processes N`, `proxy_pass` to the same origin over an upstream with `keepalive 64`, HTTP/1.1.');
  if (has('varnish')) {
    const p = r.varnishParams ?? {};
    const params = Object.entries(p).map(([k, v]) => `${k} ${v}`).join(', ');
    lines.push(
      `- **Varnish**: \`varnishd -F -j none -s malloc,256m\`, its own \`-n\` temp dir, a VCL with one backend (the origin's \`GET /4k-public\`, \`Cache-Control: max-age=3600\`) and the built-in logic;`,
      `  its default thread pools (${params || 'not read'}). One target: it is multi-threaded, so its figure is the denominator at both worker counts.`,
    );
  }
  if (has('proxy') || has('varnish')) lines.push('- **the origin**: one bare node:http process (`main.js --internal-origin-server`) behind both proxies and Varnish; its CPU is not in their server CPU column.');
  lines.push(
    `- **load**: wrk ${r.versions.wrk} \`-t 1\` (one C thread on epoll), keep-alive, one run per round, **on the same ${r.machine.cores} cores as the servers**.`,
    '  Every request was checked to answer 200 with the 4 KiB body before the rounds (wrk counts only statuses above 399 as errors).',
    '',
    "Server CPU µs/op: user + system time of the server's whole process tree (s3edge's supervisor and workers, the bare cluster's primary and",
    "workers, nginx's master and workers, Varnish's manager and child; /proc) over the round, divided by its requests. Client CPU µs/op: wrk's own",
    '(`os.clock()` in its `done` hook). other CPU: the most cores the rest of the machine used during one of the cell\'s rounds (above ~0.3: disturbed).',
  );
  return lines;
}

/**
 * --fastpath-bare-work: the bare cluster with N µs of CPU spun per answer, over the bare ceiling at the
 * same workers and connections. An s3edge cell's ratio is where it sits on this curve: the µs it adds.
 */
function addedWorkSection(input: FastpathReportInput): string[] {
  const { result: r } = input;
  const work = [...new Set(r.subjects.flatMap((s) => (s.workUs !== undefined ? [s.workUs] : [])))].sort((a, b) => a - b);
  if (work.length === 0) return [];
  const lines = [
    '## The runtime with work added',
    '',
    'The bare cluster again, each answer first spinning N µs of CPU (`--fastpath-bare-work`), over the bare ceiling at equal workers and',
    'connections: what N µs of added work per request costs in requests/s on this machine and load. An s3edge cell at the same ratio adds',
    'about that much to what node:http does for the same answer.',
    '',
    `| added work | ${input.concurrency.flatMap((c) => input.workers.map((w) => `c${c} w${w}`)).join(' | ')} |`,
    `|---|${input.concurrency.flatMap(() => input.workers.map(() => '---:')).join('|')}|`,
  ];
  for (const us of work) {
    const row = input.concurrency.flatMap((c) =>
      input.workers.map((w) => {
        const a = findCell(r.cells, 'bare', w, c, us);
        const b = findCell(r.cells, 'bare', w, c);
        const d = b ? summariseRounds(b.rounds).opsPerSec : 0;
        return a && d > 0 ? formatRatio(summariseRounds(a.rounds).opsPerSec / d) : 'n/a';
      }),
    );
    lines.push(`| +${us} µs | ${row.join(' | ')} |`);
  }
  return lines;
}

function hitRatioSection(r: FastpathResult): string[] {
  const lines = ['## Origin fetches and hit ratio', ''];
  if (r.hitRatio.length === 0) return [...lines, 'Not measured in this run (it runs with the CDN cell).'];
  const h0 = r.hitRatio[0]!;
  lines.push(
    `Per s3edge: ${h0.objects} public 4 KiB assets (distinct bytes) uploaded after the rounds, then each asked ${h0.requestsPerObject} times, **each request over a fresh`,
    'connection** (node:cluster hands consecutive connections to the workers in turn): first every object once (the first pass), then each object\'s',
    `other ${h0.requestsPerObject - 1} requests one after another, so every worker is asked for every object. The edge cache's counters (\`s3edge_cdn_cache_*\``,
    "from `/api/v3/metrics`, summed over the workers by the server) are read before, after the first pass and at the end; storage reads are",
    "origin fetches. Hit ratio: cache hits over requests; after warm-up: over the requests after each object's first.",
    '',
    '| server | requests | first pass: hits / misses / storage reads | later: hits / misses / storage reads | origin fetches per object | hit ratio | hit ratio after warm-up | X-Cache | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|',
  );
  for (const h of r.hitRatio) {
    const f = hitRatioFigures(h);
    const seen = Object.entries(h.xCache).map(([k, n]) => `${k} ${n}`).join(', ');
    lines.push(
      `| ${h.label} | ${f.requests} | ${h.first.hits} / ${h.first.misses + h.first.expired} / ${h.first.storageReads} | ${h.later.hits} / ${h.later.misses + h.later.expired} / ${h.later.storageReads} | ${f.readsPerObject.toFixed(2)} | ${(f.hitRatio * 100).toFixed(1)}% | ${(f.hitRatioAfterWarmup * 100).toFixed(1)}% | ${seen} | ${h.errors} |`,
    );
  }
  lines.push('', 'The aim (issue 30): one origin fetch per object and the same hit ratio at every worker count.');
  return lines;
}

export function renderFastpathReport(input: FastpathReportInput): string {
  const { result: r } = input;
  const m = r.machine;
  const labels = r.subjects.map(subjectLabel);
  const find = (label: string, c: number): FastpathCell | undefined => r.cells.find((x) => x.label === label && x.concurrency === c);
  const warm = input.warmupSeconds > 0 ? `after a ${input.warmupSeconds} s warm-up by wrk` : 'without a warm-up';
  const lines = [
    '# The fast path (issue 30): s3edge against the runtime, nginx and Varnish on the same cores',
    '',
    `Machine: ${m.cores} cores (${m.model}) · ${m.memGiB.toFixed(1)} GiB · node ${m.node} · ${r.started.slice(0, 16).replace('T', ' ')} UTC · 1-minute load at the start ${m.load1.toFixed(2)}`,
    '',
    `Versions: s3edge ${r.versions.s3edge} · node ${r.versions.node} · nginx ${r.versions.nginx ?? 'not run'} · Varnish ${r.versions.varnish ?? 'not run'} · wrk ${r.versions.wrk}`,
    '',
    `Run: \`${input.command}\` (${input.rounds} round${input.rounds === 1 ? '' : 's'} of ${input.roundSeconds} s per cell ${warm}; within each concurrency every column's rounds rotate, so noise on the machine hits all alike; medians). 4 KiB bodies, ${input.concurrency.join(' and ')} connections, workers ${input.workers.join(' and ')}. Written by the harness (bench/src/fastpath.ts) in ${(r.durationMs / 1000).toFixed(0)} s.`,
    '',
    ...describe(input),
    '',
    '## Acceptance ratios (issue 30)',
    '',
    'Requests/s of the medians, at equal workers (Varnish: the one target at both).',
    '',
    `| ratio | aim | ${input.concurrency.flatMap((c) => input.workers.map((w) => `c${c} w${w}`)).join(' | ')} |`,
    `|---|---:|${input.concurrency.flatMap((c) => input.workers.map(() => '---:')).join('|')}|`,
  ];
  for (const a of ACCEPTANCE) {
    const row = input.concurrency.flatMap((c) => input.workers.map((w) => formatRatio(acceptanceRatio(r.cells, a, w, c), a.threshold)));
    if (row.every((x) => x === 'n/a')) continue;
    lines.push(`| ${a.name} | ${a.threshold !== undefined ? `≥ ${a.threshold.toFixed(2)}x` : '—'} | ${row.join(' | ')} |`);
  }
  lines.push('', 'The header-signed GET is held to the presigned bar (the issue names 0.35x for presigned GETs). A ratio without an aim (—) is shown, not judged.');
  const added = addedWorkSection(input);
  if (added.length > 0) lines.push('', ...added);
  lines.push('', '## Requests/s', '', `| column | ${input.concurrency.map((c) => `c${c}`).join(' | ')} |`, `|---|${input.concurrency.map(() => '---:').join('|')}|`);
  for (const l of labels) {
    const row = input.concurrency.map((c) => {
      const cell = find(l, c);
      if (!cell) return 'n/a';
      const s = summariseRounds(cell.rounds);
      return `${s.opsPerSec.toFixed(0)} (${pct(s.spread)})`;
    });
    lines.push(`| ${l} | ${row.join(' | ')} |`);
  }
  lines.push('', "In parentheses: the spread, max / min - 1 of the rounds' requests/s.");
  lines.push(
    '',
    '## Every cell',
    '',
    '| conc | column | processes | req/s | spread | p50 ms | p99 ms | server CPU µs/op | client CPU µs/op | errors | other CPU |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const c of input.concurrency) {
    for (const l of labels) {
      const cell = find(l, c);
      if (!cell) continue;
      const s = summariseRounds(cell.rounds);
      lines.push(
        `| ${c} | ${l} | ${cell.processes} | ${s.opsPerSec.toFixed(0)} | ${pct(s.spread)} | ${s.p50Ms.toFixed(2)} | ${s.p99Ms.toFixed(2)} | ${s.cpuUsPerOp.toFixed(0)} | ${s.clientCpuUsPerOp.toFixed(0)} | ${s.errors} | ${s.otherCpu.toFixed(2)} |`,
      );
    }
  }
  const probes = Object.entries(r.probes);
  if (probes.length > 0) {
    const said = probes.map(([label, seen]) => `${label}: ${Object.entries(seen).map(([k, n]) => `${k} ${n}`).join(', ')}`).join('; ');
    lines.push('', `Cache state before the timed rounds (after the first warm-up, if any), asked over fresh connections spread over the workers: ${said}. (s3edge: X-Cache; Varnish: HIT when X-Varnish names two transactions.)`);
  }
  lines.push('', ...hitRatioSection(r));
  lines.push('', '## Start and memory', '', input.startAndMemory?.trim() || 'Not measured by this run: start to `/healthz` and idle RSS are bench/src/start.ts\'s figures.');
  const firstErrors = r.cells.flatMap((c) => c.rounds.filter((x) => x.firstError).map((x) => `${c.label} c${c.concurrency}: ${x.firstError}`));
  if (firstErrors.length > 0) lines.push('', '## First errors', '', ...firstErrors.slice(0, 8).map((e) => `- ${e}`));
  if (r.notes.length > 0) lines.push('', '## Notes', '', ...r.notes.map((n) => `- ${n}`));
  return lines.join('\n') + '\n';
}
