// wrk (Debian's `wrk`, C and epoll) as the load generator of --scale --load wrk: far cheaper per request
// than this process's node client, so on a small machine more of the cores are left to the servers.
// One run of wrk is one timed round: keep-alive GETs of a list of request targets (cycled, each
// formatted once per thread) or of one URL, and a Lua `done` hook printing the summary as one JSON line
// (requests, errors, latency percentiles, and wrk's own CPU time from os.clock()). A request target may
// carry its own headers (--fastpath's header-signed S3 GETs: one SigV4 Authorization per request).
// measureWrkRound is one timed round as --scale and --fastpath report it: wrk's figures, the server's
// CPU over its process tree and its RSS alongside.
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CpuMeter, RssSampler, spawnManaged, type CpuSnapshot } from './proc.js';
import type { RoundStats } from './workloads.js';

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
  // Request targets and header values are ASCII (escaped paths, SigV4 queries and Authorization
  // headers); JSON's escapes of those are Lua's too.
  if (!/^[\x20-\x7e]*$/.test(s)) throw new Error(`wrk: request target or header not printable ASCII: ${s}`);
  return JSON.stringify(s);
}

/**
 * A GET wrk sends: a request target, or one with headers of its own (they replace wrk's `-H` headers for
 * that request; a `Host` among them is sent instead of wrk's, otherwise wrk's is added).
 */
export type WrkRequest = string | { path: string; headers: Readonly<Record<string, string>> };

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

function luaRequest(r: WrkRequest): string {
  if (typeof r === 'string') return luaString(r);
  const headers = Object.entries(r.headers).map(([k, v]) => {
    if (!HEADER_NAME.test(k)) throw new Error(`wrk: not a header name: ${k}`);
    return `[${luaString(k)}] = ${luaString(v)}`;
  });
  return `{ ${luaString(r.path)}, { ${headers.join(', ')} } }`;
}

/**
 * The Lua script: with `requests`, each thread formats every request once (init) and cycles through
 * them (request), so a request costs wrk no more than its plain one; without, wrk sends the URL's own
 * request and the script only reports (done).
 */
export function wrkScript(requests?: readonly WrkRequest[]): string {
  if (!requests || requests.length === 0) return `-- bench/src/wrk.ts: report only\n${DONE_HOOK}`;
  return `-- bench/src/wrk.ts: cycle through ${requests.length} requests
local requests = {
${requests.map((r) => `  ${luaRequest(r)},`).join('\n')}
}
local formatted = {}
local i = 0

function init(args)
  -- A string: a request target with wrk's headers; a table: a target and its own headers (wrk.format
  -- adds wrk's Host when they have none).
  for k, r in ipairs(requests) do
    if type(r) == "string" then formatted[k] = wrk.format("GET", r) else formatted[k] = wrk.format("GET", r[1], r[2]) end
  end
  i = math.random(#formatted) - 1
end

function request()
  i = i % #formatted + 1
  return formatted[i]
end
${DONE_HOOK}`;
}

export async function writeWrkScript(dir: string, name: string, requests?: readonly WrkRequest[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, wrkScript(requests));
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

/** A wrk round as --scale and --fastpath keep it: the load generator's own CPU per op beside the server's. */
export interface WrkRoundStats extends RoundStats {
  /** CPU time of wrk per successful op, in microseconds. */
  clientCpuUsPerOp: number;
}

export interface WrkRoundOptions extends Omit<WrkRun, 'threads'> {
  threads?: number;
  /** The server whose process tree's CPU and RSS the round measures. */
  serverPid: number;
  /** Body bytes of one answer (every request is checked beforehand to get them). */
  bodyBytes: number;
  /** Cores the rest of the machine used, measured when given. */
  cpu?: CpuMeter;
  /** Names the round in its first error. */
  what: string;
}

/** One timed round driven by wrk: its summary as the report's round, the server's CPU and RSS alongside. */
export async function measureWrkRound(o: WrkRoundOptions): Promise<WrkRoundStats> {
  const cpuStart: CpuSnapshot | undefined = o.cpu?.snapshot();
  const serverCpuStart = CpuMeter.treeSeconds(o.serverPid);
  const sampler = new RssSampler(o.serverPid).start();
  const w = await runWrk({ binary: o.binary, url: o.url, script: o.script, ...(o.headers ? { headers: o.headers } : {}), connections: o.connections, threads: o.threads ?? 1, durationMs: o.durationMs });
  const rssMaxKiB = sampler.stop();
  const serverCpu = CpuMeter.treeSeconds(o.serverPid) - serverCpuStart;
  const otherCpu = o.cpu && cpuStart ? o.cpu.otherCores(cpuStart) : 0;
  const ok = w.requests - w.status;
  const errors = w.status + w.connect + w.read + w.write + w.timeout;
  const secs = w.durationUs / 1e6;
  const bad = [`${w.status} responses above 399`, `${w.connect} connect`, `${w.read} read`, `${w.write} write`, `${w.timeout} timeout errors`].filter((x) => !x.startsWith('0 '));
  return {
    ops: ok,
    errors,
    bytes: ok * o.bodyBytes,
    durationMs: secs * 1000,
    opsPerSec: secs > 0 ? ok / secs : 0,
    mbPerSec: secs > 0 ? (ok * o.bodyBytes) / 1e6 / secs : 0,
    p50Ms: w.p50Us / 1000,
    p99Ms: w.p99Us / 1000,
    rssMaxKiB,
    otherCpu,
    cpuUsPerOp: ok > 0 ? (serverCpu * 1e6) / ok : 0,
    clientCpuUsPerOp: ok > 0 ? (w.cpuSeconds * 1e6) / ok : 0,
    ...(errors > 0 ? { firstError: `wrk ${o.what}: ${bad.join(', ')}` } : {}),
  };
}
