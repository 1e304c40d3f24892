// bench --fastpath (issue 30): its columns, the acceptance ratios and their marks, the hit-ratio figures,
// the report's sections, the Lua script of header-signed requests and the options. Pure parts only; the
// run itself is in test/e2e/bench-smoke.test.ts.
import t from 'tap';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { fastpathOptions, parseBenchArgs } from '../../bench/src/main.js';
import { signedRequests } from '../../bench/src/fastpath.js';
import {
  ACCEPTANCE,
  acceptanceRatio,
  fastpathSubjects,
  formatRatio,
  hitRatioFigures,
  renderFastpathReport,
  subjectLabel,
  type FastpathCell,
  type FastpathResult,
  type HitRatioResult,
  type Subject,
} from '../../bench/src/fastpath-report.js';
import type { ScaleRound } from '../../bench/src/scale.js';
import { wrkScript } from '../../bench/src/wrk.js';

function round(opsPerSec: number): ScaleRound {
  return { ops: opsPerSec, errors: 0, bytes: 4096 * opsPerSec, durationMs: 1000, opsPerSec, mbPerSec: 0, p50Ms: 1, p99Ms: 2, rssMaxKiB: 1, otherCpu: 0.1, cpuUsPerOp: 100, clientCpuUsPerOp: 20 };
}

function cell(subject: Subject, concurrency: number, ...ops: number[]): FastpathCell {
  return { subject, label: subjectLabel(subject), concurrency, rounds: ops.map(round), processes: subject.workers + 1 };
}

t.test('columns: s3edge cells per worker count, the ceilings they need, Varnish once', async (t) => {
  const all = fastpathSubjects(['cdn', 'presigned', 'signed', 'proxy'], [1, 2], { nginx: true, varnish: true });
  t.same(all.map(subjectLabel), [
    's3edge CDN hit w1', 's3edge presigned GET w1', 's3edge signed GET w1', 's3edge edge proxy w1', 'bare node w1', 'nginx static w1', 'bare node proxy w1', 'nginx proxy_pass w1',
    's3edge CDN hit w2', 's3edge presigned GET w2', 's3edge signed GET w2', 's3edge edge proxy w2', 'bare node w2', 'nginx static w2', 'bare node proxy w2', 'nginx proxy_pass w2',
    'Varnish',
  ]);
  t.same(fastpathSubjects(['proxy'], [1], { nginx: true, varnish: true }).map(subjectLabel), ['s3edge edge proxy w1', 'bare node proxy w1', 'nginx proxy_pass w1'], 'the proxy beside the bare node proxy and nginx');
  t.same(fastpathSubjects(['proxy'], [1], { nginx: false, varnish: false }).map(subjectLabel), ['s3edge edge proxy w1', 'bare node proxy w1'], 'no nginx: the bare node proxy still runs');
  t.same(fastpathSubjects(['presigned'], [2], { nginx: true, varnish: true }).map(subjectLabel), ['s3edge presigned GET w2', 'bare node w2'], 'the S3 GET by the bare cluster only');
  t.same(fastpathSubjects(['cdn', 'signed'], [1], { nginx: false, varnish: false }).map(subjectLabel), ['s3edge CDN hit w1', 's3edge signed GET w1', 'bare node w1'], 'no nginx, no Varnish: s3edge and the bare ceiling (smoke)');
});

t.test('acceptance ratios: at equal workers, Varnish at every worker count, n/a when a column is missing', async (t) => {
  const cells = [
    cell({ kind: 'cdn', workers: 1 }, 16, 3000, 2000, 2500),
    cell({ kind: 'bare', workers: 1 }, 16, 10_000, 10_000, 9000),
    cell({ kind: 'cdn', workers: 2 }, 16, 6000),
    cell({ kind: 'bare', workers: 2 }, 16, 8000),
    cell({ kind: 'varnish', workers: 1 }, 16, 12_000),
    cell({ kind: 'proxy', workers: 1 }, 16, 4500),
    cell({ kind: 'nginx-proxy', workers: 1 }, 16, 5000),
    cell({ kind: 'bare-proxy', workers: 1 }, 16, 3600),
  ];
  const by = (name: string): (typeof ACCEPTANCE)[number] => ACCEPTANCE.find((a) => a.name === name)!;
  t.equal(acceptanceRatio(cells, by('CDN hit / bare node'), 1, 16), 0.25, 'medians: 2500 / 10000');
  t.equal(acceptanceRatio(cells, by('CDN hit / bare node'), 2, 16), 0.75);
  t.equal(acceptanceRatio(cells, by('CDN hit / Varnish'), 2, 16), 0.5, 'w2 over the one Varnish');
  t.equal(acceptanceRatio(cells, by('edge proxy / nginx proxy_pass'), 1, 16), 0.9);
  t.equal(acceptanceRatio(cells, by('edge proxy / nginx proxy_pass'), 2, 16), undefined, 'no w2 proxy cell');
  t.equal(acceptanceRatio(cells, by('edge proxy / bare node proxy'), 1, 16), 1.25, "s3edge's proxy over the runtime's");
  t.equal(acceptanceRatio(cells, by('bare node proxy / nginx proxy_pass'), 1, 16), 0.72, "the runtime's over nginx");
  t.equal(acceptanceRatio(cells, by('CDN hit / bare node'), 1, 64), undefined, 'no c64 cells');
  t.same(ACCEPTANCE.map((a) => [a.name, a.threshold]), [
    ['CDN hit / bare node', 0.6],
    ['CDN hit / Varnish', undefined],
    ['CDN hit / nginx static', undefined],
    ['presigned S3 GET / bare node', 0.35],
    ['header-signed S3 GET / bare node', 0.35],
    ['edge proxy / nginx proxy_pass', 0.9],
    ['edge proxy / bare node proxy', undefined],
    ['bare node proxy / nginx proxy_pass', undefined],
  ], "the issue's thresholds");
  t.equal(formatRatio(0.9, 0.9), '0.90x PASS', 'the bar itself passes');
  t.equal(formatRatio(0.2234, 0.6), '0.22x **MISS**');
  t.equal(formatRatio(1.1), '1.10x', 'no threshold: no mark');
  t.equal(formatRatio(undefined, 0.6), 'n/a');
});

const hit = (over: Partial<HitRatioResult> = {}): HitRatioResult => ({
  label: 's3edge w2',
  workers: 2,
  objects: 32,
  requestsPerObject: 20,
  first: { requests: 32, hits: 0, misses: 32, expired: 0, storageReads: 32 },
  later: { requests: 608, hits: 576, misses: 32, expired: 0, storageReads: 32 },
  xCache: { MISS: 64, HIT: 576 },
  errors: 0,
  ...over,
});

t.test('hit ratio: origin fetches per object and hits over requests, after warm-up over the later requests', async (t) => {
  t.same(hitRatioFigures(hit()), { requests: 640, storageReads: 64, readsPerObject: 2, hitRatio: 576 / 640, hitRatioAfterWarmup: 576 / 608 });
  const one = hitRatioFigures(hit({ later: { requests: 608, hits: 608, misses: 0, expired: 0, storageReads: 0 } }));
  t.equal(one.readsPerObject, 1, 'one fetch per object');
  t.equal(one.hitRatioAfterWarmup, 1);
});

function result(over: Partial<FastpathResult> = {}): FastpathResult {
  const subjects: Subject[] = [
    { kind: 'cdn', workers: 1 }, { kind: 'signed', workers: 1 }, { kind: 'bare', workers: 1 }, { kind: 'nginx-static', workers: 1 }, { kind: 'varnish', workers: 1 },
  ];
  return {
    started: '2026-01-02T03:04:05.000Z',
    durationMs: 600_000,
    machine: { cores: 2, model: 'Test CPU', memGiB: 24, node: 'v20.0.0', load1: 0.5 },
    versions: { s3edge: '0.1.0 (abc1234)', node: 'v20.0.0', wrk: '4.1.0', nginx: 'nginx/1.22.1', varnish: '7.1.1' },
    subjects,
    cells: [
      cell(subjects[0]!, 16, 7000), cell(subjects[1]!, 16, 3000), cell(subjects[2]!, 16, 10_000), cell(subjects[3]!, 16, 35_000), cell(subjects[4]!, 16, 20_000),
    ],
    probes: { 's3edge CDN hit w1': { HIT: 8 }, Varnish: { HIT: 8 } },
    hitRatio: [hit({ label: 's3edge w1', workers: 1, later: { requests: 608, hits: 608, misses: 0, expired: 0, storageReads: 0 }, xCache: { MISS: 32, HIT: 608 } }), hit()],
    varnishParams: { thread_pools: '2 [pools] (default)' },
    notes: [],
    ...over,
  };
}

const input = { command: 'node bench/dist/main.js --fastpath', rounds: 5, roundSeconds: 3, warmupSeconds: 1, concurrency: [16], workers: [1], objects: 256 };

t.test('the report: machine, versions, run, the ratios beside their aims with marks, every cell, the hit ratio', async (t) => {
  const md = renderFastpathReport({ ...input, result: result() });
  t.match(md, /^# The fast path \(issue 30\)/);
  t.match(md, /Machine: 2 cores \(Test CPU\) · 24\.0 GiB · node v20\.0\.0 · 2026-01-02 03:04 UTC/);
  t.match(md, /Versions: s3edge 0\.1\.0 \(abc1234\) · node v20\.0\.0 · nginx nginx\/1\.22\.1 · Varnish 7\.1\.1 · wrk 4\.1\.0/);
  t.match(md, /Run: `node bench\/dist\/main\.js --fastpath` \(5 rounds of 3 s per cell after a 1 s warm-up by wrk/);
  t.match(md, /thread_pools 2 \[pools\] \(default\)/, "Varnish's thread settings");
  t.match(md, /\| ratio \| aim \| c16 w1 \|/);
  t.match(md, /\| CDN hit \/ bare node \| ≥ 0\.60x \| 0\.70x PASS \|/);
  t.match(md, /\| CDN hit \/ Varnish \| — \| 0\.35x \|/);
  t.match(md, /\| CDN hit \/ nginx static \| — \| 0\.20x \|/);
  t.match(md, /\| header-signed S3 GET \/ bare node \| ≥ 0\.35x \| 0\.30x \*\*MISS\*\* \|/);
  t.notMatch(md, /presigned S3 GET \/ bare node/, 'a ratio none of whose columns ran has no row');
  t.notMatch(md, /edge proxy \/ nginx proxy_pass/);
  t.match(md, /\| 16 \| s3edge CDN hit w1 \| 2 \| 7000 \| 0% \| 1\.00 \| 2\.00 \| 100 \| 20 \| 0 \| 0\.10 \|/, 'every cell: processes, req/s, spread, latencies, server and client CPU');
  t.match(md, /\| Varnish \| 20000 \(0%\) \|/);
  t.match(md, /Cache state before the timed rounds .*s3edge CDN hit w1: HIT 8; Varnish: HIT 8/);
  t.match(md, /## Origin fetches and hit ratio/);
  t.match(md, /\| s3edge w1 \| 640 \| 0 \/ 32 \/ 32 \| 608 \/ 0 \/ 0 \| 1\.00 \| 95\.0% \| 100\.0% \| MISS 32, HIT 608 \| 0 \|/);
  t.match(md, /\| s3edge w2 \| 640 \| 0 \/ 32 \/ 32 \| 576 \/ 32 \/ 32 \| 2\.00 \| 90\.0% \| 94\.7% \|/);
  t.match(md, /## Start and memory\n\nNot measured by this run/, 'the place for start.ts, named');
  t.notMatch(md, /## Notes/, 'no notes, no section');
});

t.test('the report: a Start and memory section from the caller, notes, the first errors', async (t) => {
  const failed = { ...round(100), errors: 3, firstError: 'wrk s3edge signed GET w1: 3 responses above 399' };
  const r = result({ notes: ['varnishd is not installed (apt-get install -y varnish): its column is missing.'] });
  r.cells[1]!.rounds.push(failed);
  const md = renderFastpathReport({ ...input, result: r, startAndMemory: '| target | start s | idle RSS MiB |\n|---|---:|---:|\n| s3edge w1 | 0.4 | 150 |' });
  t.match(md, /## Start and memory\n\n\| target \| start s \| idle RSS MiB \|/);
  t.notMatch(md, /Not measured by this run/);
  t.match(md, /## First errors\n\n- s3edge signed GET w1 c16: wrk s3edge signed GET w1: 3 responses above 399/);
  t.match(md, /## Notes\n\n- varnishd is not installed \(apt-get install -y varnish\)/);
});

t.test('header-signed requests: their own SigV4 headers, Host as wrk names it, in the Lua script', async (t) => {
  const target = { url: 'http://127.0.0.1:9000', credentials: { accessKeyId: 'AKIDBENCH', secretAccessKey: 'secret' } };
  const requests = signedRequests(target, ['get/4kib/0', 'get/4kib/1']);
  t.equal(requests.length, 2);
  const [a, b] = requests;
  t.equal(a!.path, '/bench/get/4kib/0');
  t.same(Object.keys(a!.headers).sort(), ['Host', 'authorization', 'x-amz-content-sha256', 'x-amz-date'], 'Host capitalised: wrk sends it instead of its own');
  t.equal(a!.headers['Host'], '127.0.0.1:9000');
  t.match(a!.headers['x-amz-date'], /^\d{8}T\d{6}Z$/);
  t.match(a!.headers['authorization'], /^AWS4-HMAC-SHA256 Credential=AKIDBENCH\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/);
  t.not(a!.headers['authorization'], b!.headers['authorization'], 'each request its own signature');

  const script = wrkScript(requests);
  t.match(script, /-- bench\/src\/wrk\.ts: cycle through 2 requests/);
  t.match(script, /^ {2}\{ "\/bench\/get\/4kib\/0", \{ \["Host"\] = "127\.0\.0\.1:9000", \["x-amz-date"\] = "\d{8}T\d{6}Z", \["x-amz-content-sha256"\] = "[0-9a-f]{64}", \["authorization"\] = "AWS4-HMAC-SHA256 [^"]+" \} \},$/m, 'a Lua table of target and headers');
  t.match(script, /if type\(r\) == "string" then formatted\[k\] = wrk\.format\("GET", r\) else formatted\[k\] = wrk\.format\("GET", r\[1\], r\[2\]\) end/, 'formatted once per thread with its own headers');
  t.match(script, /function request\(\)\n {2}i = i % #formatted \+ 1\n {2}return formatted\[i\]/, 'cycled through');
  t.match(script, /function done\(summary, latency, requests\)/, 'and the summary line');
  const mixed = wrkScript(['/plain', { path: '/q', headers: { 'X-Quote': 'a"b\\c' } }]);
  t.match(mixed, /^ {2}"\/plain",$/m, 'a plain target stays a string');
  t.match(mixed, /\["X-Quote"\] = "a\\"b\\\\c"/, 'values escaped for Lua');
  t.throws(() => wrkScript([{ path: '/x', headers: { 'bad name': 'v' } }]), /not a header name/);
  t.throws(() => wrkScript([{ path: '/x', headers: { a: 'line\nbreak' } }]), /not printable ASCII/);
});

t.test('--fastpath: bench/RESULTS-fastpath.md, a temp file in smoke, --fastpath-workers and --fastpath-cells', async (t) => {
  const opts = parseBenchArgs(['--fastpath']);
  t.equal(opts.fastpath, true);
  t.equal(opts.out, fileURLToPath(new URL('../../../bench/RESULTS-fastpath.md', import.meta.url)));
  t.ok(parseBenchArgs(['--fastpath', '--smoke']).out.startsWith(tmpdir()), 'a smoke run leaves the results file alone');
  t.same(parseBenchArgs(['--fastpath', '--concurrency', '16,64']).concurrency, [16, 64], '64 connections with --fastpath');
  for (const subset of [['--fastpath-cells', 'cdn'], ['--fastpath-workers', '2'], ['--concurrency', '64']]) {
    t.ok(parseBenchArgs(['--fastpath', ...subset]).out.startsWith(tmpdir()), `${subset.join(' ')}: a draft, never the results file`);
  }
  t.equal(parseBenchArgs(['--fastpath', '--fastpath-cells', 'cdn', '--out', '/tmp/x.md']).out, '/tmp/x.md');
  t.same(parseBenchArgs(['--fastpath', '--fastpath-workers', '2,1,2']).fastpathWorkers, [1, 2]);
  t.same(parseBenchArgs(['--fastpath', '--fastpath-workers', '2']).fastpathWorkers, [2], 'ratios are at equal workers: one count alone is fine');
  t.same(parseBenchArgs(['--fastpath', '--fastpath-cells', 'CDN,proxy,cdn']).fastpathCells, ['cdn', 'proxy']);
  t.throws(() => parseBenchArgs(['--fastpath', '--fastpath-cells', 'list']), /unknown cell list \(known: cdn, presigned, signed, proxy\)/);
  t.throws(() => parseBenchArgs(['--fastpath', '--fastpath-workers', '0']), /from 1 to 64/);
  t.throws(() => parseBenchArgs(['--fastpath-workers', '1']), /--fastpath only/);
  t.throws(() => parseBenchArgs(['--fastpath-cells', 'cdn']), /--fastpath only/);
  t.equal(fastpathOptions(parseBenchArgs(['--fastpath'])).warmupSeconds, 1, 'a second of warm-up by default');
  t.equal(fastpathOptions(parseBenchArgs(['--fastpath', '--fastpath-warmup', '15'])).warmupSeconds, 15);
  t.equal(fastpathOptions(parseBenchArgs(['--fastpath', '--fastpath-warmup', '0'])).warmupSeconds, 0, '0: none');
  t.throws(() => parseBenchArgs(['--fastpath', '--fastpath-warmup', '1.5']), /whole seconds from 0 to 600/);
  t.throws(() => parseBenchArgs(['--fastpath-warmup', '5']), /--fastpath only/);
  const compared = fastpathOptions(parseBenchArgs(['--fastpath', '--fastpath-compare', '/work/old', '--fastpath-compare', 'v1=/srv/v1']));
  t.same(compared.compare, [{ label: 'before', root: '/work/old' }, { label: 'v1', root: '/srv/v1' }], '--fastpath-compare: another build, "before" unless labelled');
  t.ok(parseBenchArgs(['--fastpath', '--fastpath-compare', '/work/old']).out.startsWith(tmpdir()), 'a comparison is a draft, never the results file');
  t.throws(() => parseBenchArgs(['--fastpath-compare', '/work/old']), /--fastpath only/);
  t.same(
    fastpathSubjects(['signed'], [1], { nginx: true, varnish: true }, ['before']).map(subjectLabel),
    ['s3edge signed GET w1', 's3edge signed GET w1 before', 'bare node w1'],
    "another build's cells beside this one's, before the ceilings",
  );
});

t.test('--fastpath-bare-work: the bare cluster again with µs of work per answer, its ratios to the ceiling, the acceptance ratios unmoved', async (t) => {
  const opts = fastpathOptions(parseBenchArgs(['--fastpath', '--fastpath-bare-work', '5,20']));
  t.same(opts.bareWork, [5, 20]);
  t.ok(parseBenchArgs(['--fastpath', '--fastpath-bare-work', '5']).out.startsWith(tmpdir()), 'a draft, never the results file');
  t.throws(() => parseBenchArgs(['--fastpath', '--fastpath-bare-work', '2.5']), /whole µs from 1 to 10000/);
  t.throws(() => parseBenchArgs(['--fastpath-bare-work', '5']), /--fastpath only/);
  t.same(
    fastpathSubjects(['cdn'], [1, 2], { nginx: false, varnish: false }, [], [5, 20]).map(subjectLabel),
    ['s3edge CDN hit w1', 'bare node w1', 'bare node +5 µs w1', 'bare node +20 µs w1', 's3edge CDN hit w2', 'bare node w2', 'bare node +5 µs w2', 'bare node +20 µs w2'],
    'after the ceiling, at every worker count',
  );
  t.same(fastpathSubjects([], [1], { nginx: true, varnish: true }, [], [10]).map(subjectLabel), ['bare node w1', 'bare node +10 µs w1'], 'alone: the curve without s3edge');
  const cells = [
    cell({ kind: 'bare', workers: 1, workUs: 10 }, 16, 5000),
    cell({ kind: 'cdn', workers: 1 }, 16, 4000),
    cell({ kind: 'bare', workers: 1 }, 16, 10_000),
    cell({ kind: 'bare', workers: 1, workUs: 20 }, 16, 3000),
  ];
  t.equal(acceptanceRatio(cells, ACCEPTANCE[0]!, 1, 16), 0.4, 'judged by the ceiling, never by a column with work added');
  const r = { ...result(), subjects: cells.map((c) => c.subject), cells };
  const md = renderFastpathReport({ ...input, result: r, concurrency: [16], workers: [1] });
  t.match(md, /## The runtime with work added/);
  t.match(md, /\| \+10 µs \| 0\.50x \|/);
  t.match(md, /\| \+20 µs \| 0\.30x \|/);
  t.match(md, /\*\*bare node \+N µs wN\*\*/);
  t.notMatch(renderFastpathReport({ ...input, result: result() }), /work added/, 'no such columns: no section');
});
