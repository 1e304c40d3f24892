// Child processes of the harness (servers under test), free ports, readiness, and RSS sampling
// from /proc. Every child is remembered so an interrupted run (SIGINT) leaves nothing behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { fileURLToPath } from 'node:url';

const live = new Set<ChildProcess>();
const tempDirs = new Set<string>();

export function rememberTempDir(dir: string): void {
  tempDirs.add(dir);
}

export function forgetTempDir(dir: string): void {
  tempDirs.delete(dir);
}

/** Kill every child still running and remove the temp dirs: the last resort on exit or a signal. */
export function killEverything(): void {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

let handlersInstalled = false;
/** For the CLI only: a test runner that imports the harness keeps its own signal handling. */
export function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.once('exit', killEverything);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}: stopping servers and removing temp dirs\n`);
      killEverything();
      process.exit(130);
    });
  }
}

export interface Managed {
  child: ChildProcess;
  pid: number;
  /** The last 64 KiB of stdout + stderr. */
  output(): string;
  /** Called with each stdout line (the listening line of s3edge). */
  onLine(fn: (line: string) => void): void;
  exited: Promise<void>;
  hasExited(): boolean;
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

export function spawnManaged(command: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd?: string): Managed {
  const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`cannot start ${command}`);
  const pid = child.pid;
  live.add(child);
  let captured = '';
  const capture = (s: string): void => {
    captured += s;
    if (captured.length > 65536) captured = captured.slice(-65536);
  };
  const lineListeners: ((line: string) => void)[] = [];
  let partial = '';
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  // Always drain both pipes: a server whose pipe fills up blocks on its logging.
  child.stdout?.on('data', (d: string) => {
    capture(d);
    if (lineListeners.length === 0) return;
    partial += d;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      for (const fn of lineListeners) fn(line);
    }
    if (partial.length > 65536) partial = '';
  });
  child.stderr?.on('data', (d: string) => capture(d));
  let done = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true;
      live.delete(child);
      resolve();
    });
    child.once('error', (err) => {
      capture(`spawn error: ${err.message}\n`);
      done = true;
      live.delete(child);
      resolve();
    });
  });
  return {
    child,
    pid,
    output: () => captured,
    onLine: (fn) => lineListeners.push(fn),
    exited,
    hasExited: () => done,
    async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<void> {
      if (done) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A port that was free a moment ago on 127.0.0.1 (for servers that cannot report port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function tryConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

export async function waitForPort(port: number, proc: Managed, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.hasExited()) throw new Error(`${name} exited before listening:\n${proc.output()}`);
    if (await tryConnect(port)) return;
    await sleep(100);
  }
  throw new Error(`${name} did not listen on ${port} within ${timeoutMs} ms:\n${proc.output()}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) {
        const n = Number(c);
        if (c.trim() && Number.isInteger(n)) out.push(n);
      }
    } catch {
      /* task gone */
    }
  }
  return out;
}

/** A "Name:   N kB" line of a /proc file, in KiB (0 when the process is gone or the line missing). */
function procKiB(file: string, name: string): number {
  try {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(readFileSync(file, 'utf8'));
    return m?.[1] ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * A process's proportional set size: its private pages plus its share of the pages it shares (each
 * shared page divided among the processes that map it). Summed over a tree it counts what the tree
 * holds once, where RSS counts a page every process shares once per process (the executable's code,
 * which the kernel maps the more eagerly the more of the file the page cache holds).
 */
export function pssKiB(pid: number): number {
  return procKiB(`/proc/${pid}/smaps_rollup`, 'Pss');
}

/** VmRSS of one process in KiB. */
export function rssKiB(pid: number): number {
  return procKiB(`/proc/${pid}/status`, 'VmRSS');
}

/** RSS of a process and all its descendants (nginx master + workers), in KiB. */
export function treeRssKiB(pid: number): number {
  let total = 0;
  const stack = [pid];
  const seen = new Set<number>();
  while (stack.length > 0) {
    const p = stack.pop()!;
    if (seen.has(p)) continue;
    seen.add(p);
    total += rssKiB(p);
    stack.push(...childrenOf(p));
  }
  return total;
}

/** Samples a process tree's RSS every `intervalMs` until stopped; keeps the maximum. */
export class RssSampler {
  private maxKiB = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pid: number, private readonly intervalMs = 100) {}

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  sample(): number {
    const v = treeRssKiB(this.pid);
    if (v > this.maxKiB) this.maxKiB = v;
    return v;
  }

  /** The maximum seen, in KiB, including one last sample. */
  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.sample();
    return this.maxKiB;
  }
}

function procJiffies(pid: number | 'self', reapedChildren = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "pid (comm) ": state is field 3, utime 14 and stime 15; cutime 16 and cstime 17 are the
    // children it has waited for.
    const own = Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
    return reapedChildren ? own + Number(fields[13] ?? 0) + Number(fields[14] ?? 0) : own;
  } catch {
    return 0;
  }
}

/** A process and all its descendants (nginx's master and workers, s3edge's supervisor and workers). */
export function treePids(pid: number): number[] {
  const out: number[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop()!;
    if (out.includes(p)) continue;
    out.push(p);
    stack.push(...childrenOf(p));
  }
  return out;
}

export interface CpuSnapshot {
  busy: number;
  ours: number;
  at: number;
}

/**
 * How much CPU the rest of the machine used while we measured: all busy time (/proc/stat) minus
 * the harness's and the servers' own (/proc/PID/stat), in cores. Other engineers' test runs show here.
 */
export class CpuMeter {
  constructor(private readonly pids: () => readonly number[]) {}

  snapshot(): CpuSnapshot {
    let busy = 0;
    try {
      const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
      const f = line.trim().split(/\s+/).slice(1).map(Number);
      // user nice system idle iowait irq softirq steal
      busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
    } catch {
      /* not Linux */
    }
    // The harness and the children it has reaped: a wrk round (--load wrk) that ran and exited.
    let ours = procJiffies('self', true);
    for (const pid of this.pids()) for (const p of treePids(pid)) ours += procJiffies(p);
    return { busy, ours, at: Date.now() };
  }

  /** CPU seconds the process tree of `pid` has used so far (user + system). */
  static treeSeconds(pid: number): number {
    let jiffies = 0;
    for (const p of treePids(pid)) jiffies += procJiffies(p);
    return jiffies / 100;
  }

  /** Cores used by other processes since `from` (jiffies are 1/100 s on Linux). */
  otherCores(from: CpuSnapshot): number {
    const now = this.snapshot();
    const secs = (now.at - from.at) / 1000;
    if (secs <= 0) return 0;
    return Math.max(0, (now.busy - from.busy - (now.ours - from.ours)) / 100 / secs);
  }
}

/**
 * One of bench's own helper servers: this bench's main.js with an `--internal-...` flag, in a child
 * process, which prints its port as JSON ({"port": N}). Resolves with its base URL once it has.
 */
export async function startInternalServer(args: readonly string[], what: string): Promise<{ url: string; proc: Managed }> {
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  const proc = spawnManaged(process.execPath, [main, ...args], { PATH: process.env.PATH ?? '' });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start: ${proc.output()}`)), 30_000);
    proc.onLine((line) => {
      const m = /"port":(\d+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}
