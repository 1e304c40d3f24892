// Profiles of missed targets: the cell of each figure s3edge missed is run once more against a fresh
// s3edge started with --cpu-prof, and the main thread's profile is summarised (self and inclusive time
// by function) for RESULTS.md, so every miss comes with where the server's time went.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startS3edge } from './targets.js';
import { Bodies, TargetRunner, type Bound, type Workload } from './workloads.js';

export interface ProfiledCell {
  workload: Workload;
  size: number;
  concurrency: number;
}

export interface ProfileLine {
  fn: string;
  /** Percent of the profiled wall time. */
  pct: number;
}

export interface ProfileSummary {
  figure: string;
  cell: string;
  /** Wall time covered by the profile (warm-up and timed round), ms. */
  profiledMs: number;
  opsPerSec: number;
  idlePct: number;
  self: ProfileLine[];
  inclusive: ProfileLine[];
  error?: string;
}

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function label(n: CpuProfileNode): string {
  const file = n.callFrame.url.replace(/^.*\/(node_modules\/)?/, '');
  const name = n.callFrame.functionName || '(anonymous)';
  return file ? `${name} ${file}:${n.callFrame.lineNumber + 1}` : name;
}

/** Self and inclusive time per function label, as percentages of the profile's wall time. */
export function summariseProfile(p: CpuProfile, top = 15): { totalMs: number; idlePct: number; self: ProfileLine[]; inclusive: ProfileLine[] } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const perNode = new Map<number, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
    perNode.set(id, (perNode.get(id) ?? 0) + dt);
  });
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, t] of perNode) {
    const node = byId.get(id);
    if (!node) continue;
    self.set(label(node), (self.get(label(node)) ?? 0) + t);
    // A recursive function counts once per sample in its inclusive time.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur) as CpuProfileNode);
      if (seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + t);
    }
  }
  const pct = (t: number): number => (total > 0 ? (100 * t) / total : 0);
  const ranked = (m: Map<string, number>, skip: (fn: string) => boolean): ProfileLine[] =>
    [...m]
      .filter(([fn]) => !skip(fn))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([fn, t]) => ({ fn, pct: pct(t) }));
  return {
    totalMs: total / 1000,
    idlePct: pct(self.get('(idle)') ?? 0),
    self: ranked(self, (fn) => fn === '(idle)'),
    // The roots every sample shares say nothing.
    inclusive: ranked(inclusive, (fn) => fn === '(root)' || fn === '(idle)'),
  };
}

/** The main thread's profile among those node wrote (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile). */
async function mainThreadProfile(dir: string): Promise<CpuProfile> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  const main = files.find((f) => f.split('.')[4] === '0') ?? files[0];
  if (!main) throw new Error('s3edge wrote no CPU profile');
  return JSON.parse(await readFile(join(dir, main), 'utf8')) as CpuProfile;
}

/** Runs `cell` (a warm-up, then one round of `bound`) against a fresh, profiled s3edge. */
export async function profileCell(
  figure: string,
  cell: ProfiledCell,
  bound: Bound,
  readable: number,
  opts: { env?: Record<string, string>; args?: readonly string[]; nodeArgs?: readonly string[] },
): Promise<ProfileSummary> {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-prof-'));
  const name = `${cell.workload} ${cell.size} B c${cell.concurrency}`;
  try {
    const target = await startS3edge({ env: opts.env, args: opts.args, nodeArgs: [...(opts.nodeArgs ?? []), '--cpu-prof', `--cpu-prof-dir=${dir}`] });
    const runner = new TargetRunner(target, new Bodies(), cell.concurrency);
    let opsPerSec = 0;
    try {
      await runner.createBuckets();
      if (cell.workload === 'GET' || cell.workload === 'HEAD') await runner.ensureReadable(cell.size, readable);
      await runner.round(cell.workload, cell.size, cell.concurrency, { durationMs: 1000 });
      opsPerSec = (await runner.round(cell.workload, cell.size, cell.concurrency, bound)).opsPerSec;
      await runner.cleanUp();
    } finally {
      await runner.close().catch(() => undefined);
      // SIGTERM: s3edge closes gracefully, and node writes the profile on the way out.
      await target.stop();
    }
    const s = summariseProfile(await mainThreadProfile(dir));
    return { figure, cell: name, profiledMs: s.totalMs, opsPerSec, idlePct: s.idlePct, self: s.self, inclusive: s.inclusive };
  } catch (err) {
    return { figure, cell: name, profiledMs: 0, opsPerSec: 0, idlePct: 0, self: [], inclusive: [], error: (err as Error).message.split('\n')[0] ?? 'failed' };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
