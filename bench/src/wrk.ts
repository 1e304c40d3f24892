// wrk (Debian's `wrk`, C and epoll) as the load generator of --scale --load wrk: far cheaper per request
// than this process's node client, so on a small machine more of the cores are left to the servers.
// One run of wrk is one timed round: keep-alive GETs of a list of request targets (cycled, each
// formatted once per thread) or of one URL, and a Lua `done` hook printing the summary as one JSON line
// (requests, errors, latency percentiles, and wrk's own CPU time from os.clock()).
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnManaged } from './proc.js';

export const WRK_MISSING = '--load wrk needs wrk, which this machine lacks: install it with apt-get install -y wrk';

/** The wrk binary on PATH, or undefined. */
export function findWrk(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** `wrk -v` prints "wrk debian/4.1.0-3+b2 [epoll] Copyright ..." (and exits 1). */
export function wrkVersion(binary: string): string {
  try {
    execFileSync(binary, ['-v'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const out = String((err as { stdout?: unknown }).stdout ?? '');
    const m = /^wrk (\S+)/m.exec(out);
    if (m?.[1]) return m[1];
  }
  return 'unknown';
}

/** What the `done` hook prints; times in microseconds, as wrk keeps them. */
export interface WrkSummary {
  /** Responses read (any status). */
  requests: number;
  durationUs: number;
  /** Bytes read, headers included. */
  bytes: number;
  connect: number;
  read: number;
  write: number;
  /** Responses with a status above 399. */
  status: number;
  timeout: number;
  p50Us: number;
  p99Us: number;
  /** CPU seconds of the wrk process (all its threads), from os.clock(). */
  cpuSeconds: number;
}

const DONE_HOOK = `
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\n{"requests":%d,"durationUs":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50Us":%d,"p99Us":%d,"cpuSeconds":%.6f}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), os.clock()))
end
`;

function luaString(s: string): string {
  // Request targets are ASCII (escaped paths and SigV4 queries); JSON's escapes of those are Lua's too.
  if (!/^[\x20-\x7e]*$/.test(s)) throw new Error(`wrk: request target not printable ASCII: ${s}`);
  return JSON.stringify(s);
}

/**
 * The Lua script: with `targets`, each thread formats every request once (init) and cycles through
 * them (request), so a request costs wrk no more than its plain one; without, wrk sends the URL's own
 * request and the script only reports (done).
 */
export function wrkScript(targets?: readonly string[]): string {
  if (!targets || targets.length === 0) return `-- bench/src/wrk.ts: report only\n${DONE_HOOK}`;
  return `-- bench/src/wrk.ts: cycle through ${targets.length} request targets
local targets = {
${targets.map((t) => `  ${luaString(t)},`).join('\n')}
}
local formatted = {}
local i = 0

function init(args)
  for k, t in ipairs(targets) do formatted[k] = wrk.format("GET", t) end
  i = math.random(#formatted) - 1
end

function request()
  i = i % #formatted + 1
  return formatted[i]
end
${DONE_HOOK}`;
}

export async function writeWrkScript(dir: string, name: string, targets?: readonly string[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, wrkScript(targets));
  return file;
}

/** The summary line of wrk's output (the last JSON object the done hook printed). */
export function parseWrkOutput(stdout: string): WrkSummary {
  const line = stdout.split('\n').reverse().find((l) => l.startsWith('{"requests":'));
  if (!line) throw new Error(`wrk printed no summary line:\n${stdout.slice(-2000)}`);
  const parsed = JSON.parse(line) as Record<string, unknown>;
  const num = (k: keyof WrkSummary): number => {
    const v = parsed[k];
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`wrk summary without ${k}: ${line}`);
    return v;
  };
  return {
    requests: num('requests'),
    durationUs: num('durationUs'),
    bytes: num('bytes'),
    connect: num('connect'),
    read: num('read'),
    write: num('write'),
    status: num('status'),
    timeout: num('timeout'),
    p50Us: num('p50Us'),
    p99Us: num('p99Us'),
    cpuSeconds: num('cpuSeconds'),
  };
}

export interface WrkRun {
  binary: string;
  /** Base URL and, for a URL-only run, the path: what wrk connects to. */
  url: string;
  script: string;
  /** Headers to send (the CDN's Host). */
  headers?: Readonly<Record<string, string>>;
  connections: number;
  threads: number;
  durationMs: number;
}

/** One wrk run; resolves with its summary once wrk exits (its CPU is then the harness's reaped child's). */
export async function runWrk(run: WrkRun): Promise<WrkSummary> {
  const args = [
    '-t', String(run.threads),
    '-c', String(run.connections),
    '-d', `${Math.max(1, Math.round(run.durationMs / 1000))}s`,
    '--timeout', '10s',
    '-s', run.script,
    ...Object.entries(run.headers ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]),
    run.url,
  ];
  const proc = spawnManaged(run.binary, args, { PATH: process.env.PATH ?? '' });
  await proc.exited;
  const code = proc.child.exitCode;
  if (code !== 0) throw new Error(`wrk ${args.join(' ')} exited with ${String(code ?? proc.child.signalCode)}:\n${proc.output().slice(-2000)}`);
  return parseWrkOutput(proc.output());
}
