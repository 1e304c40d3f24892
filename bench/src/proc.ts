// Child processes of the harness (servers under test), free ports, readiness, and RSS sampling
// from /proc. Every child is remembered so an interrupted run (SIGINT) leaves nothing behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync, readSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { fileURLToPath } from 'node:url';

const live = new Set<ChildProcess>();
/** How much of a child's stdout and stderr output() keeps. */
const TAIL_BYTES = 65536;
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
  /** Called with each stdout line (the listening line of s3edge) until the function returned is called. */
  onLine(fn: (line: string) => void): () => void;
  exited: Promise<void>;
  hasExited(): boolean;
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  cwd?: string;
  /**
   * Where the child's stdout goes instead of a pipe to this process: a file, as an operator's
   * `serve > s3edge.log` would. s3edge writes a JSON line per request (~10 MB/s under load); through a
   * pipe this process woke ~2,000 times a second to read it, ~0.07 of a core taken from the two that
   * the server under test and the load generator share, and from no other target. The file is read
   * only while someone waits for a line (the listening line), and emptied every second otherwise (a
   * run's lines would fill gigabytes): output() shows the last second of it.
   */
  stdoutFile?: string;
}

/** How often a stdoutFile is read while a line is awaited, and emptied while none is. */
const FILE_POLL_MS = 20;
const FILE_TRIM_MS = 1000;

export function spawnManaged(command: string, args: readonly string[], env: NodeJS.ProcessEnv, options: SpawnOptions = {}): Managed {
  const { cwd, stdoutFile } = options;
  const outFd = stdoutFile === undefined ? undefined : openSync(stdoutFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, { env, cwd, stdio: ['ignore', outFd ?? 'pipe', 'pipe'] });
  } finally {
    if (outFd !== undefined) closeSync(outFd);
  }
  if (child.pid === undefined) throw new Error(`cannot start ${command}`);
  const pid = child.pid;
  live.add(child);
  // The last 64 KiB of what the pipes brought, for output().
  const tail: Buffer[] = [];
  let tailBytes = 0;
  const capture = (b: Buffer): void => {
    tail.push(b);
    tailBytes += b.length;
    while (tailBytes - (tail[0] as Buffer).length >= TAIL_BYTES) tailBytes -= (tail.shift() as Buffer).length;
  };
  // Lines are cut and decoded only while someone listens for one.
  const lineListeners = new Set<(line: string) => void>();
  let partial: Buffer = Buffer.alloc(0);
  const feedLines = (d: Buffer): void => {
    if (lineListeners.size === 0) {
      partial = Buffer.alloc(0);
      return;
    }
    let buf = partial.length === 0 ? d : Buffer.concat([partial, d]);
    let nl: number;
    while (lineListeners.size > 0 && (nl = buf.indexOf(10)) >= 0) {
      const line = buf.toString('utf8', 0, nl);
      buf = buf.subarray(nl + 1);
      for (const fn of lineListeners) fn(line);
    }
    partial = buf.length > 65536 ? Buffer.alloc(0) : Buffer.from(buf);
  };
  // A stdoutFile is read from where the last read stopped, every FILE_POLL_MS while a line is awaited.
  let fileOffset = 0;
  let poll: NodeJS.Timeout | undefined;
  const readFile = (): void => {
    if (stdoutFile === undefined) return;
    const chunk = readFrom(stdoutFile, fileOffset);
    fileOffset += chunk.length;
    if (chunk.length > 0) feedLines(chunk);
  };
  const pollFile = (): void => {
    readFile();
    if (lineListeners.size === 0) {
      clearInterval(poll);
      poll = undefined;
    }
  };
  // Emptied while no line is awaited; the child appends (O_APPEND), so its next line starts the file again.
  const trim =
    stdoutFile === undefined
      ? undefined
      : setInterval(() => {
          if (lineListeners.size > 0) return;
          try {
            truncateSync(stdoutFile, 0);
            fileOffset = 0;
          } catch {
            /* removed with its directory */
          }
        }, FILE_TRIM_MS);
  trim?.unref();
  // Always drain the pipes: a server whose pipe fills up blocks on its logging.
  child.stdout?.on('data', (d: Buffer) => {
    capture(d);
    feedLines(d);
  });
  child.stderr?.on('data', (d: Buffer) => capture(d));
  let done = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true;
      live.delete(child);
      // A line written just before the exit is still read.
      readFile();
      clearInterval(poll);
      clearInterval(trim);
      resolve();
    });
    child.once('error', (err) => {
      capture(Buffer.from(`spawn error: ${err.message}\n`));
      clearInterval(poll);
      clearInterval(trim);
      done = true;
      live.delete(child);
      resolve();
    });
  });
  return {
    child,
    pid,
    output: () => {
      const file = stdoutFile === undefined ? '' : fileTail(stdoutFile);
      const text = file + Buffer.concat(tail).toString('utf8');
      return text.length > TAIL_BYTES ? text.slice(-TAIL_BYTES) : text;
    },
    onLine: (fn) => {
      lineListeners.add(fn);
      if (stdoutFile !== undefined && poll === undefined && !done) {
        poll = setInterval(pollFile, FILE_POLL_MS);
        poll.unref();
      }
      return () => lineListeners.delete(fn);
    },
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

/** The bytes of `file` from `offset` on (none when it is gone). */
function readFrom(file: string, offset: number): Buffer {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const size = fstatSync(fd).size;
    if (size <= offset) return Buffer.alloc(0);
    const buf = Buffer.alloc(size - offset);
    const n = readSync(fd, buf, 0, buf.length, offset);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** The last TAIL_BYTES of `file`, as text. */
function fileTail(file: string): string {
  try {
    const size = statSync(file).size;
    return readFrom(file, Math.max(0, size - TAIL_BYTES)).toString('utf8');
  } catch {
    return '';
  }
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
    const stop = proc.onLine((line) => {
      const m = /"port":(\d+)/.exec(line);
      if (m) {
        stop();
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}
