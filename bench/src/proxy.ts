// --proxy: the edge reverse proxy (project hostnames) against nginx `proxy_pass`, both in front of the
// same bare node:http origin (main.js --internal-origin-server: GET /4k and /1m, Cache-Control:
// no-store, so s3edge's proxy cache stays out of it: this measures proxying, not caching). Closed loop,
// targets interleaved round by round. Then s3edge's memory while clients from a million distinct IPs
// each send one request to a hostname with a rate limit rule (the bench is a trusted proxy and names each
// client in X-Forwarded-For), so the limiter tracks every one of them up to edge.maxTrackedClients.
// Writes bench/RESULTS-proxy.md unless told where. The origin also answers GET /4k-public, cacheable
// for an hour: what --fastpath's Varnish caches.
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fetch } from 'undici';
import { S3HttpClient, type Reply } from './client.js';
import { CpuMeter, RssSampler, rssKiB, sleep, startInternalServer, type Managed } from './proc.js';
import { ensureNginx, repoRoot, startNginx, startS3edge, versions, type Target, type Versions } from './targets.js';
import { KiB, MiB, median, percentile, sizeLabel } from './workloads.js';

export interface ProxyBenchOptions {
  rounds: number;
  roundMs: number;
  concurrency: readonly number[];
  /** Distinct client IPs of the memory pass (the second pass sends a tenth as many more). */
  clients: number;
  /** Connections the memory pass sends over. */
  clientConnections: number;
  /** Compare with nginx (off in smoke runs, as in the matrix's). */
  nginx: boolean;
  out: string;
  command: string;
  /** Node flags for the s3edge process (--s3edge-node-arg, e.g. --cpu-prof). */
  s3edgeNodeArgs?: readonly string[];
  log?: (line: string) => void;
}

/** The hostname the throughput cells use (no rules) and the one with a rate limit (the memory pass). */
export const PROXY_HOSTNAME = 'bench.example.com';
export const LIMITED_HOSTNAME = 'limited.example.com';
/** The origin's answers, by size. */
export const ORIGIN_PATHS: ReadonlyMap<number, string> = new Map([
  [4 * KiB, '/4k'],
  [MiB, '/1m'],
]);
/** s3edge's default edge.maxTrackedClients (config/default.json), shown next to the memory figures. */
const MAX_TRACKED_CLIENTS = 100_000;
const LIMIT_RULE = { rateLimit: { requestsPerSecond: 1000, burst: 1000 } };
/** Only while checking that the limiter sees X-Forwarded-For: the second request of one client is refused. */
const PROBE_RULE = { rateLimit: { requestsPerSecond: 1, burst: 1 } };

type TargetLabel = 's3edge' | 'nginx';

export interface ProxyRound {
  opsPerSec: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  firstError?: string;
  /** Cores the rest of the machine used meanwhile (CpuMeter): other engineers' runs show here. */
  otherCpu: number;
}

export interface ProxyCell {
  target: TargetLabel;
  size: number;
  concurrency: number;
  rounds: ProxyRound[];
}

export interface ProxyMemory {
  clients: number;
  secondPassClients: number;
  connections: number;
  beforeKiB: number;
  peakKiB: number;
  afterFirstKiB: number;
  afterSecondKiB: number;
  settledKiB: number;
  firstPassSeconds: number;
  secondPassSeconds: number;
  /** Cores the rest of the machine used during both passes. */
  otherCpu: number;
  /** Answers of both passes by status (0: the request failed). */
  statuses: Record<string, number>;
  firstError?: string;
}

export interface ProxyLogCounters {
  flushed: number;
  dropped: number;
  buffered: number;
}

export interface ProxyBenchResult {
  cells: ProxyCell[];
  memory: ProxyMemory;
  log?: ProxyLogCounters;
  notes: string[];
}

/** The origin's 4 KiB answer a cache may keep (an hour): --fastpath's Varnish is in front of it. */
export const CACHEABLE_ORIGIN_PATH = '/4k-public';
export const CACHEABLE_ORIGIN_CACHE_CONTROL = 'max-age=3600';

/**
 * main.js --internal-origin-server: GET /4k and /1m with fixed bodies, never cacheable, and GET
 * /4k-public, cacheable; prints {"port":N}.
 */
export async function runOriginServer(): Promise<void> {
  const answers = new Map<string, { body: Buffer; cacheControl: string }>([...ORIGIN_PATHS].map(([size, path]) => [path, { body: randomBytes(size), cacheControl: 'no-store' }]));
  answers.set(CACHEABLE_ORIGIN_PATH, { body: randomBytes(4 * KiB), cacheControl: CACHEABLE_ORIGIN_CACHE_CONTROL });
  const server = createServer((req, res) => {
    const answer = req.method === 'GET' ? answers.get(req.url ?? '') : undefined;
    if (!answer) {
      res.writeHead(404, { 'content-type': 'text/plain', 'content-length': 10 });
      res.end('not found\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': answer.body.length, 'cache-control': answer.cacheControl });
    res.end(answer.body);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n');
}

export function startOrigin(): Promise<{ url: string; proc: Managed }> {
  return startInternalServer(['--internal-origin-server'], 'origin');
}

/** The i-th client of the memory pass: a distinct IPv4 address from 20.0.0.1 up (public space, so GeoIP is asked). */
export function clientIp(i: number): string {
  const n = 20 * 2 ** 24 + 1 + i;
  return `${Math.floor(n / 2 ** 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

function describe(r: Reply, size: number): string {
  const body = r.body ? r.body.subarray(0, 200).toString('utf8').replace(/\s+/g, ' ') : '';
  return `${r.status} and ${r.bytes} bytes (want 200 and ${size}) ${body}`.trim();
}

/** `concurrency` workers GETting `path` for `ms`: requests/s, MB/s and latency percentiles of the good answers. */
async function load(client: S3HttpClient, path: string, host: string, size: number, concurrency: number, ms: number): Promise<Omit<ProxyRound, 'otherCpu'>> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const until = performance.now() + ms;
  const worker = async (): Promise<void> => {
    while (performance.now() < until) {
      const started = performance.now();
      try {
        const r = await client.get(path, host);
        if (r.status === 200 && r.bytes === size) latencies.push(performance.now() - started);
        else {
          errors++;
          firstError ??= describe(r, size);
        }
      } catch (err) {
        errors++;
        firstError ??= (err as Error).message;
      }
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - began) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return {
    opsPerSec: latencies.length / seconds,
    mbPerSec: (latencies.length * size) / 1e6 / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    errors,
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

/** One request per client `from`..`from + count - 1`, over `connections` connections; statuses counted. */
async function clientsPass(client: S3HttpClient, from: number, count: number, connections: number, statuses: Record<string, number>): Promise<{ seconds: number; firstError?: string }> {
  const path = ORIGIN_PATHS.get(4 * KiB)!;
  let next = from;
  const end = from + count;
  let firstError: string | undefined;
  const worker = async (): Promise<void> => {
    while (next < end) {
      const ip = clientIp(next++);
      let status = 0;
      try {
        const r = await client.get(path, LIMITED_HOSTNAME, { 'x-forwarded-for': ip });
        status = r.status;
        if (r.status !== 200) firstError ??= `client ${ip}: ${describe(r, 4 * KiB)}`;
      } catch (err) {
        firstError ??= `client ${ip}: ${(err as Error).message}`;
      }
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: connections }, worker));
  return { seconds: (performance.now() - began) / 1000, ...(firstError !== undefined ? { firstError } : {}) };
}

/** Polls until `check` holds: a change made by the admin CLI reaches the server within 250 ms (src/edge/route.ts). */
export async function until(what: string, check: () => Promise<string | undefined>, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last: string | undefined;
  while (performance.now() < deadline) {
    last = await check();
    if (last === undefined) return;
    await sleep(100);
  }
  throw new Error(`${what}: ${last ?? 'timed out'}`);
}

/** s3edge's request log counters from /api/v3/metrics (proxied requests are logged there too). */
async function logCounters(s3edge: Target, token: string): Promise<ProxyLogCounters | undefined> {
  const res = await fetch(new URL('/api/v3/metrics', s3edge.url), { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) return undefined;
  const text = await res.text();
  const value = (name: string): number => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : NaN;
  };
  return { flushed: value('s3edge_cdn_log_flushed_total'), dropped: value('s3edge_cdn_log_dropped_total'), buffered: value('s3edge_cdn_log_buffered') };
}

/** A verified project hostname of an existing user and project whose origin is `originUrl`, with the admin CLI. */
export function addProjectHostname(admin: NonNullable<Target['admin']>, host: string, originUrl: string, owner: { user: string; project: string }): void {
  admin(['hostnames', 'add', host, '--user', owner.user, '--project', owner.project]);
  admin(['hostnames', 'verify', host, '--operator']);
  admin(['hostnames', 'set-origin', host, '--url', originUrl]);
}

/** The user, project and two verified hostnames, through the admin CLI as an operator would. */
function setUp(s3edge: Target, originUrl: string): string {
  const admin = s3edge.admin;
  if (!admin) throw new Error('s3edge: no admin CLI');
  admin(['users', 'create', 'bench']);
  admin(['projects', 'create', 'bench', '--user', 'bench']);
  for (const host of [PROXY_HOSTNAME, LIMITED_HOSTNAME]) addProjectHostname(admin, host, originUrl, { user: 'bench', project: 'bench' });
  admin(['hostnames', 'set-rules', LIMITED_HOSTNAME, '--rules', JSON.stringify(PROBE_RULE)]);
  const token = admin(['api-keys', 'create', '--user', 'bench', '--scopes', 'metrics:read', '--name', 'bench'])['token'];
  if (typeof token !== 'string') throw new Error('s3edge: api-keys create gave no token');
  return token;
}

export async function runProxyBench(opts: ProxyBenchOptions): Promise<ProxyBenchResult> {
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const notes: string[] = [];
  let origin: { url: string; proc: Managed } | undefined;
  let s3edge: Target | undefined;
  let nginx: Target | undefined;
  const clients: S3HttpClient[] = [];
  try {
    origin = await startOrigin();
    s3edge = await startS3edge({
      ...(opts.s3edgeNodeArgs ? { nodeArgs: opts.s3edgeNodeArgs } : {}),
      env: {
        // The origin is on loopback, which the address policy refuses by default.
        S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true',
        // The bench names each client in X-Forwarded-For; only a trusted proxy's is read.
        S3EDGE_CDN_TRUSTED_PROXIES: '127.0.0.1/32',
        S3EDGE_LOG_LEVEL: 'warn',
      },
    });
    const token = setUp(s3edge, origin.url);
    let binary: string | undefined;
    if (opts.nginx) {
      binary = ensureNginx(log);
      if (binary) nginx = await startNginx(binary, { proxyPass: origin.url });
      else notes.push('nginx is not installed (as root the harness runs `apt-get install -y nginx`): its cells are missing.');
    }

    const servers = [origin, s3edge, nginx].flatMap((x) => (x ? [x.proc.pid] : []));
    const cpu = new CpuMeter(() => servers);
    const maxConcurrency = Math.max(...opts.concurrency);
    const none = { accessKeyId: 'none', secretAccessKey: 'none' };
    const mine = new S3HttpClient(s3edge.cdnUrl!, none, maxConcurrency);
    clients.push(mine);
    const peer = nginx ? new S3HttpClient(nginx.url, none, maxConcurrency) : undefined;
    if (peer) clients.push(peer);
    const peerHost = nginx ? new URL(nginx.url).host : '';

    // Both answer the origin's bytes before anything is timed (and s3edge has loaded its routes).
    for (const [size, path] of ORIGIN_PATHS) {
      await until(`s3edge does not proxy ${PROXY_HOSTNAME}${path}`, async () => {
        const r = await mine.get(path, PROXY_HOSTNAME);
        return r.status === 200 && r.bytes === size ? undefined : describe(r, size);
      });
      if (peer) {
        const r = await peer.get(path, peerHost);
        if (r.status !== 200 || r.bytes !== size) throw new Error(`nginx proxy_pass ${path}: ${describe(r, size)}`);
      }
    }

    const cells: ProxyCell[] = [];
    for (const concurrency of opts.concurrency) {
      for (const [size, path] of ORIGIN_PATHS) {
        const a: ProxyCell = { target: 's3edge', size, concurrency, rounds: [] };
        const b: ProxyCell = { target: 'nginx', size, concurrency, rounds: [] };
        for (let r = 0; r < opts.rounds; r++) {
          const order = r % 2 === 0 ? [a, b] : [b, a];
          for (const cell of order) {
            if (cell === b && !peer) continue;
            const from = cpu.snapshot();
            const measured = cell === a ? await load(mine, path, PROXY_HOSTNAME, size, concurrency, opts.roundMs) : await load(peer!, path, peerHost, size, concurrency, opts.roundMs);
            const round: ProxyRound = { ...measured, otherCpu: cpu.otherCores(from) };
            cell.rounds.push(round);
            log(`bench: proxy ${sizeLabel(size)} c${concurrency} round ${r + 1}/${opts.rounds}: ${cell.target} ${round.opsPerSec.toFixed(0)} req/s, p99 ${round.p99Ms.toFixed(2)} ms, errors ${round.errors}${round.firstError ? ` (${round.firstError})` : ''}`);
            await sleep(200);
          }
        }
        cells.push(a);
        if (peer) cells.push(b);
      }
    }

    // The memory pass. First make sure the limiter really sees each X-Forwarded-For client: under the
    // probe rule (1 request/s, burst 1) a client's second request is refused, another client's is not.
    const probe = new S3HttpClient(s3edge.cdnUrl!, none, 1);
    clients.push(probe);
    let probeIp = 0;
    await until(`the rate limit of ${LIMITED_HOSTNAME} does not apply per X-Forwarded-For client`, async () => {
      const ip = `192.0.2.${(probeIp++ % 125) * 2 + 1}`;
      const other = `192.0.2.${(probeIp % 125) * 2 + 2}`;
      const first = await probe.get('/4k', LIMITED_HOSTNAME, { 'x-forwarded-for': ip });
      const again = await probe.get('/4k', LIMITED_HOSTNAME, { 'x-forwarded-for': ip });
      const another = await probe.get('/4k', LIMITED_HOSTNAME, { 'x-forwarded-for': other });
      const got = [first.status, again.status, another.status];
      return got.join() === '200,429,200' ? undefined : `clients ${ip}, ${ip}, ${other}: ${got.join(', ')} (want 200, 429, 200)`;
    });
    s3edge.admin!(['hostnames', 'set-rules', LIMITED_HOSTNAME, '--rules', JSON.stringify(LIMIT_RULE)]);
    await until(`the rule ${JSON.stringify(LIMIT_RULE)} did not reach ${LIMITED_HOSTNAME}`, async () => {
      const ip = `198.51.100.${(probeIp++ % 250) + 1}`;
      const first = await probe.get('/4k', LIMITED_HOSTNAME, { 'x-forwarded-for': ip });
      const second = await probe.get('/4k', LIMITED_HOSTNAME, { 'x-forwarded-for': ip });
      return first.status === 200 && second.status === 200 ? undefined : `client ${ip}: ${first.status} then ${second.status} (want 200 twice)`;
    });

    const flood = new S3HttpClient(s3edge.cdnUrl!, none, opts.clientConnections);
    clients.push(flood);
    const statuses: Record<string, number> = {};
    await sleep(1000);
    const beforeKiB = rssKiB(s3edge.pid);
    const sampler = new RssSampler(s3edge.pid, 250).start();
    const cpuFrom = cpu.snapshot();
    log(`bench: proxy memory: ${opts.clients} distinct clients over ${opts.clientConnections} connections, RSS before ${(beforeKiB / 1024).toFixed(0)} MiB`);
    const first = await clientsPass(flood, 0, opts.clients, opts.clientConnections, statuses);
    const afterFirstKiB = rssKiB(s3edge.pid);
    log(`bench: proxy memory: first pass ${first.seconds.toFixed(1)} s, RSS ${(afterFirstKiB / 1024).toFixed(0)} MiB`);
    const secondPassClients = Math.max(1, Math.round(opts.clients / 10));
    const second = await clientsPass(flood, opts.clients, secondPassClients, opts.clientConnections, statuses);
    const afterSecondKiB = rssKiB(s3edge.pid);
    const peakKiB = sampler.stop();
    const otherCpu = cpu.otherCores(cpuFrom);
    await sleep(5000);
    const settledKiB = rssKiB(s3edge.pid);
    log(`bench: proxy memory: second pass ${second.seconds.toFixed(1)} s, RSS ${(afterSecondKiB / 1024).toFixed(0)} MiB, 5 s later ${(settledKiB / 1024).toFixed(0)} MiB, peak ${(peakKiB / 1024).toFixed(0)} MiB`);
    const firstError = first.firstError ?? second.firstError;
    const memory: ProxyMemory = {
      clients: opts.clients,
      secondPassClients,
      connections: opts.clientConnections,
      beforeKiB,
      peakKiB,
      afterFirstKiB,
      afterSecondKiB,
      settledKiB,
      firstPassSeconds: first.seconds,
      secondPassSeconds: second.seconds,
      otherCpu,
      statuses,
      ...(firstError !== undefined ? { firstError } : {}),
    };
    // Let the request log flush (every cdn.log.flushIntervalMs, 1 s by default) before reading its counters.
    await sleep(1500);
    const counters = await logCounters(s3edge, token);
    const result: ProxyBenchResult = { cells, memory, ...(counters ? { log: counters } : {}), notes };
    await writeFile(opts.out, report(result, opts, versions(new Set(nginx ? ['s3edge', 'nginx'] : ['s3edge']), binary)));
    return result;
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await nginx?.stop();
    await s3edge?.stop();
    await origin?.proc.stop();
  }
}

interface Summary {
  ops: number;
  mbps: number;
  p50: number;
  p99: number;
  errors: number;
}

function summary(cell: ProxyCell): Summary {
  return {
    ops: median(cell.rounds.map((r) => r.opsPerSec)),
    mbps: median(cell.rounds.map((r) => r.mbPerSec)),
    p50: median(cell.rounds.map((r) => r.p50Ms)),
    p99: median(cell.rounds.map((r) => r.p99Ms)),
    errors: cell.rounds.reduce((n, r) => n + r.errors, 0),
  };
}

/** s3edge's requests/s over nginx's in one cell, or undefined without nginx. */
export function proxyRatio(cells: readonly ProxyCell[], size: number, concurrency: number): number | undefined {
  const a = cells.find((c) => c.target === 's3edge' && c.size === size && c.concurrency === concurrency);
  const b = cells.find((c) => c.target === 'nginx' && c.size === size && c.concurrency === concurrency);
  if (!a || !b) return undefined;
  const nb = summary(b).ops;
  return nb > 0 ? summary(a).ops / nb : undefined;
}

const mib = (kib: number): string => (kib / 1024).toFixed(0);

function report(r: ProxyBenchResult, opts: ProxyBenchOptions, v: Versions): string {
  const lines = [
    '# The edge proxy vs nginx proxy_pass',
    '',
    `Machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? '?'}) · ${(totalmem() / 2 ** 30).toFixed(1)} GiB · node ${process.version} · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · 1-minute load ${loadavg()[0]?.toFixed(2)}`,
    '',
    `Versions: s3edge ${v.s3edge} · nginx ${v.nginx ?? 'not run'}`,
    '',
    `Run: \`${opts.command}\` (${opts.rounds} round${opts.rounds === 1 ? '' : 's'} of ${opts.roundMs / 1000} s per cell, targets interleaved; medians). Written by the harness (bench/src/proxy.ts).`,
    '',
    `Both proxy the same bare node:http origin on loopback (\`GET /4k\`, \`GET /1m\`, fixed bodies, \`Cache-Control: no-store\`,`,
    'so nothing is served from a cache). s3edge: one process, its CDN listener, `Host: ' + PROXY_HOSTNAME + '` (a verified project',
    'hostname with no rules, set up with the admin CLI), `edge.allowPrivateOrigins` on, request log on as by default. nginx:',
    '`worker_processes 1`, `proxy_pass` to an upstream with `keepalive 64`, `proxy_http_version 1.1`, `proxy_set_header Connection ""`,',
    'default proxy buffering. Unsigned keep-alive GETs from this process (undici Pool, one connection per worker).',
    'The origin, the proxy and the load generator share the machine\'s cores. other CPU: the most cores the rest of the machine',
    `used during one of the cell's rounds (all busy time minus the harness's and the servers'; of ${cpus().length}; above ~0.3 the cell was disturbed).`,
    '',
    '| size | conc | s3edge req/s | nginx req/s | ratio | s3edge MB/s | nginx MB/s | s3edge p50 ms | s3edge p99 ms | nginx p99 ms | errors | other CPU |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const mine of r.cells.filter((c) => c.target === 's3edge')) {
    const peer = r.cells.find((c) => c.target === 'nginx' && c.size === mine.size && c.concurrency === mine.concurrency);
    const a = summary(mine);
    const b = peer ? summary(peer) : undefined;
    const ratio = proxyRatio(r.cells, mine.size, mine.concurrency);
    lines.push(
      `| ${sizeLabel(mine.size)} | ${mine.concurrency} | ${a.ops.toFixed(0)} | ${b ? b.ops.toFixed(0) : 'n/a'} | ${ratio !== undefined ? ratio.toFixed(2) + 'x' : 'n/a'} | ${a.mbps.toFixed(1)} | ${b ? b.mbps.toFixed(1) : 'n/a'} | ${a.p50.toFixed(2)} | ${a.p99.toFixed(2)} | ${b ? b.p99.toFixed(2) : 'n/a'} | ${a.errors + (b?.errors ?? 0)} | ${Math.max(...mine.rounds.map((x) => x.otherCpu), ...(peer?.rounds.map((x) => x.otherCpu) ?? [])).toFixed(2)} |`,
    );
  }
  const aim = proxyRatio(r.cells, 4 * KiB, 16);
  lines.push('', `Aim (issue 17, reported, not asserted): s3edge at least half of nginx's requests/s at 4 KiB with 16 connections: ${aim === undefined ? 'n/a (no such cell)' : `${aim.toFixed(2)}x, ${aim >= 0.5 ? 'met' : 'not met'}`}.`);
  const firstErrors = r.cells.flatMap((c) => c.rounds.filter((x) => x.firstError).map((x) => `${c.target} ${sizeLabel(c.size)} c${c.concurrency}: ${x.firstError}`));
  if (firstErrors.length > 0) lines.push('', 'First errors:', '', ...firstErrors.slice(0, 5).map((e) => `- ${e}`));

  const m = r.memory;
  const total = m.clients + m.secondPassClients;
  const statuses = Object.entries(m.statuses).map(([s, n]) => `${s === '0' ? 'failed' : s}: ${n}`).join(', ');
  lines.push(
    '',
    `## Memory with ${m.clients.toLocaleString('en-US')} clients`,
    '',
    `Each of ${m.clients.toLocaleString('en-US')} distinct client IPs (20.0.0.1 up, named in \`X-Forwarded-For\`; the bench is in`,
    '`cdn.trustedProxies`) sends one `GET /4k` to `' + LIMITED_HOSTNAME + '`, whose rule is a rate limit',
    `(${JSON.stringify(LIMIT_RULE.rateLimit)}), so the limiter keeps a token bucket per client, at most \`edge.maxTrackedClients\``,
    `(${MAX_TRACKED_CLIENTS.toLocaleString('en-US')}, the default) of them, least recently seen evicted first. Before the pass the harness checked that the limiter`,
    'sees each forwarded client (under a 1 request/s, burst 1 rule a client\'s second request got 429, the next client\'s first did not).',
    `A second pass sends ${m.secondPassClients.toLocaleString('en-US')} further new clients; RSS is s3edge's VmRSS (/proc), sampled every 250 ms between the two reads.`,
    '',
    '| moment | s3edge RSS MiB |',
    '|---|---:|',
    `| before (after the throughput cells) | ${mib(m.beforeKiB)} |`,
    `| after the first pass: ${m.clients.toLocaleString('en-US')} clients, ${m.firstPassSeconds.toFixed(1)} s (${(m.clients / m.firstPassSeconds).toFixed(0)} req/s) over ${m.connections} connections | ${mib(m.afterFirstKiB)} |`,
    `| after the second pass: ${m.secondPassClients.toLocaleString('en-US')} more, ${m.secondPassSeconds.toFixed(1)} s | ${mib(m.afterSecondKiB)} |`,
    `| 5 s idle after that | ${mib(m.settledKiB)} |`,
    `| peak during both passes | ${mib(m.peakKiB)} |`,
    '',
    `Other processes used ${m.otherCpu.toFixed(2)} cores on average during the passes.`,
    '',
    `Answers of the ${total.toLocaleString('en-US')} requests: ${statuses}.${m.firstError ? ` First error: ${m.firstError}` : ''}`,
  );
  if (r.log) {
    lines.push('', `s3edge's request log after the run (\`/api/v3/metrics\`): ${r.log.flushed} written, ${r.log.dropped} dropped, ${r.log.buffered} buffered.`);
  }
  if (r.notes.length > 0) lines.push('', ...r.notes.map((n) => `- ${n}`));
  return lines.join('\n') + '\n';
}

/** Where --proxy writes by default. */
export function proxyResultsFile(): string {
  return join(repoRoot(), 'bench', 'RESULTS-proxy.md');
}
