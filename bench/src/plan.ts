// What a run measures: the full matrix (`npm run bench`) or the smoke configuration (`--smoke`,
// seconds: s3edge + ceiling, 4 KiB, a handful of ops, one round; the CDN workload on s3edge only, as
// nginx is in no smoke cell).
import type { TargetName } from './targets.js';
import { GiB, KiB, MiB, type Bound, type Workload } from './workloads.js';

export interface CellSpec {
  workload: Workload;
  /** Object size; 0 for LIST (1-byte objects). */
  size: number;
  concurrency: number;
  targets: readonly TargetName[];
  bound: Bound;
  warmup: Bound;
}

export interface Plan {
  mode: 'full' | 'smoke';
  rounds: number;
  cells: CellSpec[];
  /** Objects per size that GET/HEAD/MIXED read. */
  readable: ReadonlyMap<number, number>;
  /** Objects per size the MIXED workload starts with for its deletes. */
  mixPreload: ReadonlyMap<number, number>;
  list: { objects: Partial<Record<TargetName, number>>; page: number; preloadConcurrency: number };
  /** Size of the large-object figures (256 MiB). */
  large: number;
  small: number;
  idleConnections: number;
  idleHoldMs: number;
  streamedUploadBytes: number;
  roundMs: number;
}

export interface PlanOptions {
  rounds?: number;
  roundSeconds?: number;
  listObjects?: number;
  motoListObjects?: number;
  /** Restrict to these targets (s3edge is always kept). */
  targets?: readonly TargetName[];
  /** Restrict to these workloads / object sizes (a partial run, for quick comparisons). */
  workloads?: readonly Workload[];
  sizes?: readonly number[];
  /** Restrict to these connection counts (1 and/or 16). */
  concurrency?: readonly number[];
}

function keep(targets: readonly TargetName[], only: readonly TargetName[] | undefined): TargetName[] {
  if (!only) return [...targets];
  return targets.filter((t) => t === 's3edge' || only.includes(t));
}

export function fullPlan(o: PlanOptions = {}): Plan {
  const roundMs = Math.round((o.roundSeconds ?? 3) * 1000);
  const timed: Bound = { durationMs: roundMs };
  const warm: Bound = { durationMs: 1000 };
  const S3: TargetName[] = ['s3edge', 's3rver', 'moto'];
  const PUTS: TargetName[] = [...S3, 'ceiling'];
  const GETS: TargetName[] = [...S3, 'ceiling', 'nginx'];
  const cells: CellSpec[] = [];
  const add = (workload: Workload, size: number, targets: TargetName[], perConc?: Record<number, { bound: Bound; warmup: Bound; targets?: TargetName[] }>): void => {
    for (const concurrency of [1, 16]) {
      const c = perConc?.[concurrency];
      cells.push({ workload, size, concurrency, targets: keep(c?.targets ?? targets, o.targets), bound: c?.bound ?? timed, warmup: c?.warmup ?? warm });
    }
  };
  const small = 4 * KiB;
  const medium = 1 * MiB;
  const large = 256 * MiB;
  add('PUT', small, PUTS);
  add('GET', small, GETS);
  add('HEAD', small, S3);
  add('DELETE', small, S3);
  add('MIXED', small, S3);
  add('PUT', medium, PUTS);
  add('GET', medium, GETS);
  add('MIXED', medium, S3);
  // 256 MiB: a fixed number of ops per round; moto (in-memory, Python) only at one stream.
  add('PUT', large, PUTS, {
    1: { bound: { ops: 2 }, warmup: { ops: 1 } },
    16: { bound: { ops: 16 }, warmup: { ops: 2 }, targets: ['s3edge', 's3rver', 'ceiling'] },
  });
  add('GET', large, GETS, {
    1: { bound: { ops: 3 }, warmup: { ops: 1 } },
    16: { bound: { ops: 16 }, warmup: { ops: 2 }, targets: ['s3edge', 's3rver', 'ceiling', 'nginx'] },
  });
  // The CDN edge against nginx serving the same file (s3edge's request log on, as by default).
  add('CDN', small, ['s3edge', 'nginx']);
  add('CDN', medium, ['s3edge', 'nginx']);
  add('LIST', 0, S3, {
    1: { bound: timed, warmup: { ops: 1 } },
    16: { bound: timed, warmup: { ops: 2 } },
  });
  const listObjects = o.listObjects ?? 100_000;
  return {
    mode: 'full',
    rounds: o.rounds ?? 5,
    cells: cells.filter(
      (c) =>
        c.targets.length > 0 &&
        (!o.workloads || o.workloads.includes(c.workload)) &&
        (!o.sizes || c.workload === 'LIST' || o.sizes.includes(c.size)) &&
        (!o.concurrency || o.concurrency.includes(c.concurrency)),
    ),
    readable: new Map([
      [small, 256],
      [medium, 32],
      [large, 1],
    ]),
    mixPreload: new Map([
      [small, 200],
      [medium, 50],
    ]),
    // moto writes about 250 objects/s here: 100k would add 7 minutes, so it lists 1000 of 10k.
    list: { objects: { s3edge: listObjects, s3rver: listObjects, moto: Math.min(listObjects, o.motoListObjects ?? 10_000) }, page: 1000, preloadConcurrency: 32 },
    large,
    small,
    idleConnections: 1000,
    idleHoldMs: 3000,
    streamedUploadBytes: 10 * GiB,
    roundMs,
  };
}

export function smokePlan(): Plan {
  const small = 4 * KiB;
  const both: TargetName[] = ['s3edge', 'ceiling'];
  const only: TargetName[] = ['s3edge'];
  const w: Bound = { ops: 2 };
  const cells: CellSpec[] = [
    { workload: 'PUT', size: small, concurrency: 1, targets: both, bound: { ops: 8 }, warmup: w },
    { workload: 'PUT', size: small, concurrency: 4, targets: both, bound: { ops: 16 }, warmup: w },
    { workload: 'GET', size: small, concurrency: 1, targets: both, bound: { ops: 8 }, warmup: w },
    { workload: 'GET', size: small, concurrency: 4, targets: both, bound: { ops: 16 }, warmup: w },
    { workload: 'HEAD', size: small, concurrency: 4, targets: only, bound: { ops: 16 }, warmup: w },
    { workload: 'DELETE', size: small, concurrency: 4, targets: only, bound: { ops: 8 }, warmup: w },
    { workload: 'MIXED', size: small, concurrency: 4, targets: only, bound: { ops: 24 }, warmup: w },
    { workload: 'LIST', size: 0, concurrency: 2, targets: only, bound: { ops: 4 }, warmup: { ops: 1 } },
    { workload: 'CDN', size: small, concurrency: 4, targets: only, bound: { ops: 16 }, warmup: w },
  ];
  return {
    mode: 'smoke',
    rounds: 1,
    cells,
    readable: new Map([[small, 8]]),
    mixPreload: new Map([[small, 8]]),
    list: { objects: { s3edge: 40 }, page: 10, preloadConcurrency: 8 },
    large: 256 * MiB,
    small,
    idleConnections: 10,
    idleHoldMs: 300,
    streamedUploadBytes: 8 * MiB,
    roundMs: 0,
  };
}
