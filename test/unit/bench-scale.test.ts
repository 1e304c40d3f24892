// bench --scale: the PostgreSQL columns' labels (SQLite keeps its old ones), their ratios and the flag.
import t from 'tap';
import { parseBenchArgs } from '../../bench/src/main.js';
import { scaleLabel, scaleRatio, scaleRatios, type ScaleCell, type ScaleTarget } from '../../bench/src/scale.js';

const targets: ScaleTarget[] = [
  ...[1, 2].map((workers): ScaleTarget => ({ server: 's3edge', workers, database: 'sqlite' })),
  ...[1, 2].map((workers): ScaleTarget => ({ server: 's3edge', workers, database: 'postgres' })),
  ...[1, 2].map((workers): ScaleTarget => ({ server: 'nginx', workers })),
];

t.test('labels: SQLite as before, PostgreSQL with pg', async (t) => {
  t.same(targets.map(scaleLabel), ['s3edge w1', 's3edge w2', 's3edge w1 pg', 's3edge w2 pg', 'nginx w1', 'nginx w2']);
});

t.test('ratios: workers over one of the same database, s3edge over nginx, PostgreSQL over SQLite at equal workers', async (t) => {
  t.same(scaleRatios(targets).map((r) => `${r.kind} ${r.name}: ${r.numerator} over ${r.denominator}`), [
    'workers s3edge w2 / w1: s3edge w2 over s3edge w1',
    'workers s3edge w2 pg / w1: s3edge w2 pg over s3edge w1 pg',
    'workers nginx w2 / w1: nginx w2 over nginx w1',
    'nginx s3edge w1 / nginx w1: s3edge w1 over nginx w1',
    'nginx s3edge w2 / nginx w2: s3edge w2 over nginx w2',
    'nginx s3edge w1 pg / nginx w1: s3edge w1 pg over nginx w1',
    'nginx s3edge w2 pg / nginx w2: s3edge w2 pg over nginx w2',
    'database s3edge w1 PostgreSQL / SQLite: s3edge w1 pg over s3edge w1',
    'database s3edge w2 PostgreSQL / SQLite: s3edge w2 pg over s3edge w2',
  ]);
  t.same(scaleRatios(targets.filter((x) => x.database !== 'postgres')).filter((r) => r.kind === 'database'), [], 'no PostgreSQL: no such ratio');
  const round = (opsPerSec: number): ScaleCell['rounds'][number] => ({
    ops: 1, errors: 0, bytes: 1, durationMs: 1, opsPerSec, mbPerSec: 0, p50Ms: 1, p99Ms: 1, rssMaxKiB: 1, otherCpu: 0, cpuUsPerOp: 1, clientCpuUsPerOp: 1,
  });
  const cell = (spec: ScaleTarget, ops: number): ScaleCell => ({ target: scaleLabel(spec), spec, workload: 'GET', concurrency: 16, rounds: [round(ops)], processes: 1 });
  const db = scaleRatios(targets).find((r) => r.name === 's3edge w1 PostgreSQL / SQLite')!;
  t.equal(scaleRatio([cell(targets[0]!, 1000), cell(targets[2]!, 800)], db, 'GET', 16), 0.8);
});

t.test('--scale-postgres: on by default, off with --no-scale-postgres, --scale only', async (t) => {
  t.equal(parseBenchArgs(['--scale']).scalePostgres, undefined, 'main turns it on unless told otherwise');
  t.equal(parseBenchArgs(['--scale', '--scale-postgres']).scalePostgres, true);
  t.equal(parseBenchArgs(['--scale', '--no-scale-postgres']).scalePostgres, false);
  t.throws(() => parseBenchArgs(['--scale-postgres']), /apply to --scale only/);
  t.throws(() => parseBenchArgs(['--scale', '--scale-postgres', '--no-scale-postgres']), /not both/);
});
