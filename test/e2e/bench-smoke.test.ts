// Keeps the benchmark harness (bench/) from rotting: its smoke configuration (s3edge + the bare
// ceiling server, 4 KiB, a handful of ops, one round) runs against the built server and must
// produce sane numbers. No timing is asserted: numbers only have to exist and every op must succeed.
// The harness is imported from bench/src, so `npm run build` compiles it into dist/bench/; the
// smoke path needs only the root package's dependencies (undici), never bench/node_modules.
import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fastpathOptions, parseBenchArgs, runBench } from '../../bench/src/main.js';
import { runFastpathBench } from '../../bench/src/fastpath.js';
import { HASHING_VARIANTS, runHashingBench } from '../../bench/src/hashing.js';
import { LOG_ROW_KINDS, runLogRowsBench } from '../../bench/src/log-rows.js';
import { runBusyLockBench } from '../../bench/src/busy-lock.js';
import { fullPlan } from '../../bench/src/plan.js';
import { clientIp } from '../../bench/src/proxy.js';
import { runScaleBench, scaleRatios } from '../../bench/src/scale.js';
import { measureStart, renderStartSection } from '../../bench/src/start.js';
import { nginxConfig } from '../../bench/src/targets.js';
import { parseWrkOutput, wrkScript } from '../../bench/src/wrk.js';

const RESULTS = fileURLToPath(new URL('../../../bench/RESULTS.md', import.meta.url));

t.test('bench --smoke measures s3edge and the ceiling and writes its report where told', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-smoke-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'report.md');
  const resultsBefore = existsSync(RESULTS) ? statSync(RESULTS).mtimeMs : undefined;

  const opts = parseBenchArgs(['--smoke', '--out', out]);
  t.equal(opts.smoke, true);
  t.equal(opts.out, out);
  const lines: string[] = [];
  const result = await runBench({ ...opts, log: (line) => lines.push(line) });
  t.comment(`smoke run: ${(result.durationMs / 1000).toFixed(1)} s`);

  t.equal(result.mode, 'smoke');
  const workloads = new Set(result.cells.map((c) => c.workload));
  t.same([...workloads].sort(), ['CDN', 'DELETE', 'GET', 'HEAD', 'LIST', 'MIXED', 'PUT'], 'every workload ran');
  t.ok(result.cells.some((c) => c.target === 'ceiling'), 'the ceiling server ran');
  for (const c of result.cells) {
    const name = `${c.workload} c${c.concurrency} ${c.target}`;
    t.equal(c.errors, 0, `${name}: every op succeeded${c.firstError ? ` (first error: ${c.firstError})` : ''}`);
    t.ok(c.ops > 0 && c.opsPerSec > 0, `${name}: ops counted`);
    t.ok(c.p50Ms > 0 && c.p99Ms >= c.p50Ms, `${name}: latencies`);
    t.ok(c.rssMaxKiB > 0, `${name}: server RSS sampled`);
    if (c.workload === 'PUT' || c.workload === 'GET' || c.workload === 'CDN') t.ok(c.mbPerSec > 0, `${name}: bytes counted`);
  }
  const put = result.cells.find((c) => c.workload === 'PUT' && c.target === 's3edge');
  t.equal(put?.rounds[0]?.ops, 8, 'an op-bounded round issues exactly its ops');

  t.ok(result.rss, 'RSS figures measured');
  t.equal(result.rss?.idle.connected, 10, 'idle keep-alive connections stayed open');
  t.equal(result.rss?.idle.errors, 0);
  t.equal(result.rss?.upload.ok, true, 'the streamed upload succeeded');
  t.equal(result.figures.length, 9, 'every figure of issue 4 has a line');

  const report = readFileSync(out, 'utf8');
  t.match(report, /^# s3edge benchmark/);
  t.match(report, /Machine: \d+ cores/);
  t.match(report, /\| PUT \| 4 KiB \| 1 \| \*\*s3edge\*\* \|/);
  t.match(report, /\| LIST \| 10 of 40 \| 2 \| \*\*s3edge\*\* \|/);
  t.match(report, /RSS with 10 idle keep-alive connections \| \d+ MiB \| <= 512 MiB \| PASS/);
  t.match(report, /## The CDN edge vs nginx\n[\s\S]*\| 4 KiB \| 4 \| \d+/, 'the CDN section');
  t.match(result.cdnLog, { dropped: 0 }, "s3edge's request log dropped nothing");
  t.ok((result.cdnLog?.flushed ?? 0) + (result.cdnLog?.buffered ?? 0) > 0, 'and logged the CDN GETs');
  t.equal(existsSync(RESULTS) ? statSync(RESULTS).mtimeMs : undefined, resultsBefore, 'bench/RESULTS.md untouched');
  t.ok(lines.some((l) => l.startsWith('bench: report written')), 'progress is logged');
});

t.test('without --out a smoke run reports to a temp file, never bench/RESULTS.md', async (t) => {
  const opts = parseBenchArgs(['--smoke']);
  t.ok(opts.out.startsWith(tmpdir()), opts.out);
  t.throws(() => parseBenchArgs(['--rounds', '0']), /positive/);
  t.throws(() => parseBenchArgs(['--targets', 'minio']), /unknown target/);
  t.throws(() => parseBenchArgs(['--concurrency', '4']), /want 1 and\/or 16/);
  t.equal(opts.cdnResults, undefined, 'a smoke run never touches bench/RESULTS.md');
});

t.test('--workloads cdn: a partial report in a temp file, and the CDN section of bench/RESULTS.md', async (t) => {
  const opts = parseBenchArgs(['--workloads', 'cdn', '--rounds', '3']);
  t.same(opts.workloads, ['CDN']);
  t.ok(opts.out.startsWith(tmpdir()), opts.out);
  t.equal(opts.cdnResults, RESULTS);
  t.equal(opts.skipRss, true, 'the RSS figures say nothing about the CDN');
  t.same(fullPlan(opts).cells.map((c) => [c.size, c.concurrency, [...c.targets]]), [
    [4096, 1, ['s3edge', 'nginx']], [4096, 16, ['s3edge', 'nginx']], [1048576, 1, ['s3edge', 'nginx']], [1048576, 16, ['s3edge', 'nginx']],
  ]);
  t.equal(parseBenchArgs(['--workloads', 'CDN', '--out', '/tmp/x.md']).cdnResults, undefined, 'not when told where to write');
  t.equal(parseBenchArgs(['--workloads', 'CDN,GET']).cdnResults, undefined, 'not for a mixed run');
});

// A --proxy smoke run takes longer than the 5 s it may cost here (ten admin CLI calls set the hostnames
// up), so only its arguments are checked; `node bench/dist/main.js --proxy --smoke` runs it.
t.test('--proxy: bench/RESULTS-proxy.md, a temp file in smoke, --proxy-clients', async (t) => {
  const opts = parseBenchArgs(['--proxy', '--rounds', '3']);
  t.equal(opts.proxy, true);
  t.equal(opts.out, fileURLToPath(new URL('../../../bench/RESULTS-proxy.md', import.meta.url)));
  t.ok(parseBenchArgs(['--proxy', '--smoke']).out.startsWith(tmpdir()), 'a smoke run leaves the results file alone');
  t.equal(parseBenchArgs(['--proxy', '--proxy-clients', '5000']).proxyClients, 5000);
  t.throws(() => parseBenchArgs(['--proxy', '--proxy-clients', '0']), /positive/);
  // The memory pass's clients: distinct IPv4 addresses, carried across octets.
  t.same([0, 254, 255, 65_535, 999_999].map(clientIp), ['20.0.0.1', '20.0.0.255', '20.0.1.0', '20.1.0.0', '20.15.66.64']);
});

t.test('--concurrency keeps only the cells with those connection counts', async (t) => {
  const opts = parseBenchArgs(['--workloads', 'PUT', '--sizes', '256MiB', '--concurrency', '1']);
  t.same(opts.concurrency, [1]);
  const cells = fullPlan(opts).cells;
  t.same(cells.map((c) => [c.workload, c.size, c.concurrency]), [['PUT', 256 * 1024 * 1024, 1]]);
});

t.test('bench --hashing --smoke runs every hashing mode and writes its report where told', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-hashing-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'hashing.md');
  const opts = parseBenchArgs(['--hashing', '--smoke', '--out', out]);
  t.equal(opts.hashing, true);
  const result = await runHashingBench({ rounds: 1, uploads: 4, uploadBytes: 2 * 1024 * 1024, getBytes: 4096, getRate: 200, idleMs: 300, out, command: 'test', log: () => undefined });
  t.same(result.summary.map((s) => s.variant), HASHING_VARIANTS.map((v) => v.name), 'every server measured');
  for (const s of result.summary) {
    t.equal(s.errors, 0, `${s.variant}: every GET and upload succeeded`);
    t.ok(s.uploadMBps > 0 && s.idleP99Ms > 0 && s.loadedP99Ms > 0, `${s.variant}: figures measured`);
  }
  t.match(readFileSync(out, 'utf8'), /\| worker \|/, 'the report was written');
});

t.test('bench --busy-lock --smoke: GETs idle and while meta.db is locked, and the waiting PUTs', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-busy-lock-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'busy-lock.md');
  const opts = parseBenchArgs(['--busy-lock', '--smoke', '--out', out]);
  t.equal(opts.busyLock, true);
  t.equal(opts.out, out);
  const result = await runBusyLockBench({ lockMs: 1500, idleMs: 300, getRate: 100, out, command: 'test' });
  t.ok(result.idle.count > 0 && result.locked.count > 0, 'GETs measured in both phases');
  t.equal(result.idle.errors + result.locked.errors, 0, 'every GET answered 200, the lock held or not');
  t.ok(result.puts.length >= 1, 'a PUT waited for the lock');
  t.ok(result.puts.every((p) => p.status === 200 || (p.status === 503 && p.code === 'SlowDown')), `each PUT went through or got 503 SlowDown: ${JSON.stringify(result.puts)}`);
  t.match(readFileSync(out, 'utf8'), /\| during the lock \| \d+ \| 0 \|/, 'the report was written');
});

t.test('bench --log-rows --smoke: the request log\'s inserts, timed per kind of record, all written', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-log-rows-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'log-rows.md');
  const opts = parseBenchArgs(['--log-rows', '--smoke', '--out', out]);
  t.equal(opts.logRows, true);
  t.equal(opts.out, out);
  const result = await runLogRowsBench({ rounds: 2, records: 64, flush: 32, preload: 96, out, command: 'test' });
  for (const kind of LOG_ROW_KINDS) {
    t.equal(result.perRecord[kind].length, 2, `${kind}: one figure a round`);
    t.ok(result.perRecord[kind].every((us) => us > 0), `${kind}: CPU measured`);
  }
  // The preload: 32 records of each kind; then 2 rounds of 64 of each, in flushes of 32. Only the CDN hit is a download.
  t.same(result.rows, { requests: 3 * 32 + 3 * 2 * 64, downloadEvents: 32 + 2 * 64 }, 'every record became its rows');
  t.match(readFileSync(out, 'utf8'), /\| CDN hit \(row \+ download event\) \| [\d.]+ \(/, 'the report was written');
});

t.test('bench --scale --smoke: s3edge --workers 1 and 2, GET and CDN hit, CPU over the whole cluster', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-scale-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'scale.md');
  const opts = parseBenchArgs(['--scale', '--smoke', '--out', out]);
  t.equal(opts.scale, true);
  t.equal(opts.out, out);
  const result = await runScaleBench({
    rounds: 1, bound: { ops: 32 }, warmup: { ops: 8 }, concurrency: [4], workers: [1, 2], nginx: false, objects: 4, out, command: 'test', log: () => undefined,
  });
  t.same(result.cells.map((c) => `${c.workload} ${c.target}`), ['GET s3edge w1', 'GET s3edge w2', 'CDN s3edge w1', 'CDN s3edge w2'], 'both workloads on both servers');
  for (const c of result.cells) {
    const name = `${c.workload} ${c.target}`;
    t.equal(c.rounds[0]?.errors, 0, `${name}: every op succeeded${c.rounds[0]?.firstError ? ` (${c.rounds[0].firstError})` : ''}`);
    t.equal(c.rounds[0]?.ops, 32, `${name}: the round issued its ops`);
    // The CPU per op is summed over this tree: a cluster's supervisor and its two workers.
    t.equal(c.processes, c.spec.workers === 1 ? 1 : 3, `${name}: ${c.processes} processes measured`);
  }
  t.same(result.cacheProbes, { 's3edge w1': { HIT: 8 }, 's3edge w2': { HIT: 8 } }, 'the CDN cells were cache hits on every worker');
  const report = readFileSync(out, 'utf8');
  t.match(report, /^# s3edge on more cores: --workers 1 vs 2, and nginx alike/);
  t.match(report, /\| 4 KiB CDN hit \| 4 \| \d+ \(\d+%\) \| \d+ \(\d+%\) \|/, 'requests/s of both');
  t.match(report, /\| workload \| conc \| s3edge w2 \/ w1 \|/, 'the ratio column');
  t.match(report, /\| 4 KiB S3 GET \(signed\) \| 4 \| s3edge w2 \| 3 \| \d+ \|/, 'every cell, with its processes');
});

// wrk is in npm test's preflight (test/preflight.ts) and .ci/run's installs: this test runs everywhere.
t.test('bench --scale --load wrk --smoke: wrk drives presigned S3 GETs and the CDN hit on both servers', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-scale-wrk-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'scale.md');
  const opts = parseBenchArgs(['--scale', '--load', 'wrk', '--smoke', '--out', out]);
  t.equal(opts.load, 'wrk');
  const result = await runScaleBench({
    rounds: 1, bound: { durationMs: 1000 }, warmup: { ops: 8 }, concurrency: [4], workers: [1, 2], nginx: false, objects: 4, out, command: 'test', load: 'wrk', log: () => undefined,
  });
  t.equal(result.load, 'wrk');
  t.match(result.wrk, /\d+\.\d+/, 'the version of wrk that ran');
  t.same(result.cells.map((c) => `${c.workload} ${c.target}`), ['GET s3edge w1', 'GET s3edge w2', 'CDN s3edge w1', 'CDN s3edge w2'], 'both workloads on both servers');
  for (const c of result.cells) {
    const name = `${c.workload} ${c.target}`;
    const r = c.rounds[0]!;
    // wrk counts statuses above 399 as errors: a refused presigned URL or a CDN miss of the Host shows here.
    t.equal(r.errors, 0, `${name}: every request answered${r.firstError ? ` (${r.firstError})` : ''}`);
    t.ok(r.ops > 0 && r.opsPerSec > 0 && r.p99Ms >= r.p50Ms && r.p50Ms > 0, `${name}: wrk's requests and latencies read (${r.ops} requests)`);
    t.ok(r.cpuUsPerOp > 0 && r.clientCpuUsPerOp > 0, `${name}: server and wrk CPU per op measured`);
    t.equal(c.processes, c.spec.workers === 1 ? 1 : 3, `${name}: ${c.processes} processes measured`);
  }
  t.same(result.cacheProbes, { 's3edge w1': { HIT: 8 }, 's3edge w2': { HIT: 8 } }, 'the CDN cells were cache hits on every worker');
  const report = readFileSync(out, 'utf8');
  t.match(report, /load generator: wrk \S+/, 'the report names the load generator');
  t.match(report, /\*\*wrk runs on the same \d+ cores as the servers\*\*/, 'and that it shares the cores');
  t.match(report, /\| 4 KiB S3 GET \(presigned\) \| 4 \| s3edge w2 \| 3 \| \d+ \|/, 'the S3 cell says presigned');
  t.match(report, /\| server CPU µs\/op \| client CPU µs\/op \|/);
});

// wrk drives every column, as in the full run; the smoke configuration is s3edge --workers 1 and the bare
// node:http cluster of one (no nginx, no Varnish, no proxy), 1 s rounds, a hit-ratio pass of 4 assets.
t.test('bench --fastpath --smoke: CDN hit, presigned and header-signed GET against the bare ceiling, the hit ratio', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-fastpath-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'fastpath.md');
  const opts = fastpathOptions({ ...parseBenchArgs(['--fastpath', '--smoke', '--out', out]), log: () => undefined });
  t.same([opts.workers, opts.cells, opts.nginx, opts.varnish], [[1], ['cdn', 'presigned', 'signed'], false, false], 's3edge and the bare ceiling only');
  const result = await runFastpathBench(opts);
  t.same(result.cells.map((c) => c.label), ['s3edge CDN hit w1', 's3edge presigned GET w1', 's3edge signed GET w1', 'bare node w1'], 'every column ran');
  for (const c of result.cells) {
    const r = c.rounds[0]!;
    // wrk counts statuses above 399: a refused signature (presigned or in the header) shows here.
    t.equal(r.errors, 0, `${c.label}: every request answered${r.firstError ? ` (${r.firstError})` : ''}`);
    t.ok(r.ops > 0 && r.p99Ms >= r.p50Ms && r.cpuUsPerOp > 0 && r.clientCpuUsPerOp > 0, `${c.label}: requests, latencies, server and wrk CPU measured`);
  }
  t.equal(result.cells.find((c) => c.label === 'bare node w1')?.processes, 2, "the bare cluster's primary and its worker");
  t.same(result.probes, { 's3edge CDN hit w1': { HIT: 8 } }, 'the CDN cell was served from a warm cache');
  const [h] = result.hitRatio;
  t.match(h, { label: 's3edge w1', objects: 4, requestsPerObject: 3, errors: 0, xCache: { MISS: 4, HIT: 8 } }, 'each asset a MISS once, then HITs');
  t.match(h, { first: { requests: 4, misses: 4, storageReads: 4 }, later: { requests: 8, hits: 8, storageReads: 0 } }, "the edge cache's counters: one origin fetch per object");
  const report = readFileSync(out, 'utf8');
  t.match(report, /\| CDN hit \/ bare node \| ≥ 0\.60x \| \d+\.\d\dx (PASS|\*\*MISS\*\*) \|/, 'the acceptance ratios, marked');
  t.match(report, /\| s3edge w1 \| 12 \| 0 \/ 4 \/ 4 \| 8 \/ 0 \/ 0 \| 1\.00 \|/, 'the hit-ratio table');
  t.match(report, /## Start and memory/);
});

t.test('wrk: the Lua script and its summary line', async (t) => {
  const script = wrkScript(['/bench/a?X-Amz-Signature=1', '/bench/b?X-Amz-Signature=2']);
  t.match(script, /"\/bench\/a\?X-Amz-Signature=1",\n {2}"\/bench\/b\?X-Amz-Signature=2",/, 'every request target, as Lua strings');
  t.match(script, /function request\(\)/);
  t.notMatch(wrkScript(), /function request/, 'one URL: wrk sends its own request, the script only reports');
  t.throws(() => wrkScript(['/bench/\n']), /not printable ASCII/);
  const out = 'Running 1s test @ http://127.0.0.1:1\n  1 threads and 4 connections\n\n{"requests":120,"durationUs":1000500,"bytes":600000,"connect":0,"read":0,"write":0,"status":3,"timeout":0,"p50Us":810,"p99Us":2400,"cpuSeconds":0.021500}\nRequests/sec: 119.94\n';
  t.same(parseWrkOutput(out), { requests: 120, durationUs: 1000500, bytes: 600000, connect: 0, read: 0, write: 0, status: 3, timeout: 0, p50Us: 810, p99Us: 2400, cpuSeconds: 0.0215 });
  t.throws(() => parseWrkOutput('Running 1s test\n'), /no summary line/);
});

t.test('--scale: bench/RESULTS-scale.md, --concurrency 64, --scale-workers, the ratios, nginx worker_processes', async (t) => {
  const opts = parseBenchArgs(['--scale', '--concurrency', '16,64', '--scale-workers', '2,4']);
  t.equal(opts.out, fileURLToPath(new URL('../../../bench/RESULTS-scale.md', import.meta.url)));
  t.same(opts.concurrency, [16, 64]);
  t.same(opts.scaleWorkers, [1, 2, 4], 'one worker is always measured: the ratios are over it');
  t.ok(parseBenchArgs(['--scale', '--smoke']).out.startsWith(tmpdir()), 'a smoke run leaves the results file alone');
  t.throws(() => parseBenchArgs(['--concurrency', '64']), /want 1 and\/or 16/, '64 connections only with --scale');
  t.throws(() => parseBenchArgs(['--scale', '--scale-workers', '0']), /from 1 to 64/);
  t.equal(parseBenchArgs(['--scale']).load, undefined, 'the node client unless asked');
  t.throws(() => parseBenchArgs(['--scale', '--load', 'ab']), /--load: want node or wrk/);
  t.throws(() => parseBenchArgs(['--load', 'wrk']), /--load applies to --scale only/);
  const targets = [1, 2].flatMap((workers) => [{ server: 's3edge' as const, workers, database: 'sqlite' as const }, { server: 'nginx' as const, workers }]);
  t.same(scaleRatios(targets).map((r) => `${r.name}: ${r.numerator} over ${r.denominator}`), [
    's3edge w2 / w1: s3edge w2 over s3edge w1',
    'nginx w2 / w1: nginx w2 over nginx w1',
    's3edge w1 / nginx w1: s3edge w1 over nginx w1',
    's3edge w2 / nginx w2: s3edge w2 over nginx w2',
  ]);
  t.match(nginxConfig('/tmp/x', 8080, { workers: 2 }), /^(user root;\n)?worker_processes 2;\n/);
  t.match(nginxConfig('/tmp/x', 8080), /^(user root;\n)?worker_processes 1;\n/, 'one worker unless asked');
});

t.test('bench --start --smoke: time to the first /healthz 200 and the idle RSS of every process', async (t) => {
  const opts = parseBenchArgs(['--start', '--smoke']);
  t.equal(opts.start, true);
  t.ok(opts.out.startsWith(tmpdir()), 'a smoke run leaves bench/RESULTS-start.md alone');
  t.same(parseBenchArgs(['--start', '--start-compare', 'x=/a', '--start-compare', '/b']).startCompare, ['x=/a', '/b']);
  t.throws(() => parseBenchArgs(['--start-compare', '/a']), /apply to --start only/);
  const f = await measureStart({ rounds: 1, rssRounds: 1, settleMs: 300, binary: null, profile: false });
  t.same(f.targets.map((x) => x.target.name), ['node -e 0', 'bare node:http', 's3edge w1', 's3edge w2']);
  for (const x of f.targets) {
    t.same(x.errors, [], `${x.target.name}: started`);
    t.ok((x.samples[0]?.healthzMs ?? 0) > 0, `${x.target.name}: a time`);
  }
  const w2 = f.targets.find((x) => x.target.name === 's3edge w2');
  t.same(w2?.rss[0]?.processes.map((p) => p.role).sort(), ['supervisor', 'worker', 'worker'], 'the supervisor and its two workers, each measured');
  t.ok((w2?.rssAfterApi[0]?.totalKiB ?? 0) > 0, 'and again after a management request');
  const idle = w2?.rss[0];
  t.ok(idle !== undefined && idle.totalPssKiB > 0 && idle.totalPssKiB < idle.totalKiB, 'PSS: above 0, under RSS (the processes share node\'s code)');
  t.match(renderStartSection(f), /^\| s3edge w2 \| \d+ \| \d+ \| supervisor \d+, worker \d+, worker \d+ \|/m, 'RSS, PSS and the per-process split in the report');
});
