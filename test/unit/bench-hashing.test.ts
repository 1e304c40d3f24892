// The hashing comparison's arithmetic and report (bench/src/hashing.ts); the run itself is in bench-smoke.
import t from 'tap';
import { latencyStats, renderHashingReport, summariseHashing, type HashingRound } from '../../bench/src/hashing.js';

const stats = (p99Ms: number, errors = 0) => ({ count: 100, errors, p50Ms: p99Ms / 4, p99Ms, maxMs: p99Ms * 2 });
const round = (variant: string, n: number, loadedP99: number, mbps: number, otherCpu = 0): HashingRound => ({
  variant, round: n, idle: stats(1), loaded: stats(loadedP99), uploadMBps: mbps, uploadErrors: 0, otherCpu,
});

t.test('latency percentiles', async (t) => {
  const s = latencyStats(Array.from({ length: 100 }, (_, i) => i + 1), 2);
  t.same(s, { count: 100, errors: 2, p50Ms: 50, p99Ms: 99, maxMs: 100 });
  t.same(latencyStats([], 0), { count: 0, errors: 0, p50Ms: 0, p99Ms: 0, maxMs: 0 });
});

t.test('per variant: medians over rounds, errors summed, the worst other CPU', async (t) => {
  const rounds = [round('event loop', 1, 40, 200), round('worker', 1, 8, 210, 0.1), round('worker', 2, 12, 190), round('event loop', 2, 60, 220, 0.3)];
  rounds[1] = { ...(rounds[1] as HashingRound), uploadErrors: 1 };
  const [loop, worker] = summariseHashing(rounds);
  t.match(loop, { variant: 'event loop', loadedP99Ms: 50, uploadMBps: 210, errors: 0, otherCpu: 0.3 });
  t.match(worker, { variant: 'worker', loadedP99Ms: 10, uploadMBps: 200, errors: 1, otherCpu: 0.1 });
});

t.test('the report has the summary table and every round', async (t) => {
  const rounds = [round('event loop', 1, 40, 200), round('worker', 1, 8, 210)];
  const md = renderHashingReport({
    started: '2026-11-25T03:00:00.000Z', durationMs: 61_000, loadAvg: [0.1, 1.5], rounds, summary: summariseHashing(rounds),
    options: { rounds: 1, uploads: 4, uploadBytes: 256 * 1024 * 1024, getBytes: 4096, getRate: 200, idleMs: 3000, command: 'node bench/dist/main.js --hashing' },
  });
  t.match(md, /^# Hashing on the event loop vs in the worker thread\n/);
  t.match(md, /4 KiB GETs at 200\/s on the idle server for 3 s, then the same GETs while 4 PUTs of 256 MiB run at once/);
  t.match(md, /\| event loop \| 0\.25 \| 1\.00 \| 10\.00 \| 40\.00 \| 80\.00 \| 200 \| 0 \| 0\.00 \|/);
  t.match(md, /\| 1 \| worker \| 100 \| 1\.00 \| 100 \| 8\.00 \| 16\.00 \| 210 \| 0\.00 \|/);
});
