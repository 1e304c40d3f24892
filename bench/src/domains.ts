// --domains: POST /api/v3/domains/search throughput with the registry's answers in the cache, side by
// side with a bare node:http server that reads the same request and sends the same JSON back (the
// ceiling of a Node JSON endpoint on this machine; main.js --internal-json-server). Two queries: a full
// name (one cached RDAP answer) and a bare label (one answer per popular TLD). The registries are a
// loopback RDAP responder in this process that answers 404 (available); after the warm-up it is not
// asked again. Rate limits are raised out of the way. Closed loop, targets interleaved round by round.
// Writes bench/RESULTS-domains.md unless told where.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startInternalServer, sleep, type Managed } from './proc.js';
import { repoRoot, startS3edge, type Target } from './targets.js';
import { median, percentile } from './workloads.js';

export interface DomainsBenchOptions {
  rounds: number;
  roundMs: number;
  concurrency: readonly number[];
  out: string;
  command: string;
  /** Node flags for the s3edge process (--s3edge-node-arg, e.g. --cpu-prof). */
  s3edgeNodeArgs?: readonly string[];
  log?: (line: string) => void;
}

type Query = 'name' | 'label';
const QUERIES: Record<Query, string> = { name: 'bench-cached.com', label: 'benchlabel' };
const POPULAR = ['com', 'net', 'org', 'io', 'ai', 'app', 'dev', 'co', 'xyz', 'ng', 'cv', 'uk', 'de', 'me', 'online', 'store', 'tech', 'info'];

export interface DomainsCell {
  target: 's3edge' | 'json ceiling';
  query: Query;
  concurrency: number;
  rounds: { opsPerSec: number; p50Ms: number; p99Ms: number; errors: number }[];
}

/** The loopback registry: every name is available (404); counts what it was asked. */
async function startRegistry(): Promise<{ baseUrl: string; asked: () => number; close: () => Promise<void> }> {
  let asked = 0;
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    asked++;
    const body = JSON.stringify({ errorCode: 404, title: 'Not Found' });
    res.writeHead(404, { 'content-type': 'application/rdap+json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/rdap/`, asked: () => asked, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** main.js --internal-json-server FILE: answers POST /<query> with that query's recorded JSON body. */
export async function runJsonServer(file: string): Promise<void> {
  const { readFile } = await import('node:fs/promises');
  const bodies = JSON.parse(await readFile(file, 'utf8')) as Record<string, string>;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // The same work a JSON endpoint cannot skip: read the body, parse it, send the answer.
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const body = bodies[(req.url ?? '/').slice(1)] ?? '{}';
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n');
}

function startJsonCeiling(file: string): Promise<{ url: string; proc: Managed }> {
  return startInternalServer(['--internal-json-server', file], 'json ceiling');
}

/** `concurrency` workers POSTing for `ms`: ops/s and latency percentiles of the 200s. */
async function load(pool: Pool, path: string, headers: Record<string, string>, body: string, concurrency: number, ms: number): Promise<DomainsCell['rounds'][number]> {
  const latencies: number[] = [];
  let errors = 0;
  const until = performance.now() + ms;
  const worker = async (): Promise<void> => {
    while (performance.now() < until) {
      const started = performance.now();
      try {
        const res = await pool.request({ method: 'POST', path, headers, body });
        await res.body.dump();
        if (res.statusCode === 200) latencies.push(performance.now() - started);
        else errors++;
      } catch {
        errors++;
      }
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - began) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return { opsPerSec: latencies.length / seconds, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), errors };
}

export async function runDomainsBench(opts: DomainsBenchOptions): Promise<DomainsCell[]> {
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const registry = await startRegistry();
  const { mkdtemp, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-domains-'));
  let s3edge: Target | undefined;
  let ceiling: { url: string; proc: Managed } | undefined;
  const pools: Pool[] = [];
  try {
    const bootstrap = join(dir, 'bootstrap.json');
    await writeFile(bootstrap, JSON.stringify({ version: '1.0', publication: '2026-01-01T00:00:00Z', services: [[POPULAR, [registry.baseUrl]]] }));
    s3edge = await startS3edge({
      ...(opts.s3edgeNodeArgs ? { nodeArgs: opts.s3edgeNodeArgs } : {}),
      env: {
        S3EDGE_DOMAINS_RDAP_BOOTSTRAP_FILE: bootstrap,
        S3EDGE_DOMAINS_RDAP_ALLOW_PRIVATE_ADDRESSES: 'true',
        S3EDGE_DOMAINS_RDAP_CACHE_SECONDS: '86400',
        S3EDGE_DOMAINS_RATE_LIMITS_SEARCH: '1000000',
        S3EDGE_LOG_LEVEL: 'warn',
      },
    });
    if (!s3edge.admin) throw new Error('s3edge: no admin CLI');
    s3edge.admin(['users', 'create', 'bench']);
    const token = s3edge.admin(['api-keys', 'create', '--user', 'bench', '--scopes', 'domains:read'])['token'] as string;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

    // Warm the cache, and record the answers the ceiling will send.
    const recorded: Record<string, string> = {};
    for (const q of Object.keys(QUERIES) as Query[]) {
      const res = await fetch(new URL('/api/v3/domains/search', s3edge.url), { method: 'POST', headers, body: JSON.stringify({ query: QUERIES[q] }) });
      recorded[q] = await res.text();
      if (res.status !== 200) throw new Error(`s3edge: warm-up search ${q} answered ${res.status}: ${recorded[q]}`);
    }
    const askedAfterWarmUp = registry.asked();
    const bodiesFile = join(dir, 'bodies.json');
    await writeFile(bodiesFile, JSON.stringify(recorded));
    ceiling = await startJsonCeiling(bodiesFile);

    const maxConcurrency = Math.max(...opts.concurrency);
    const s3edgePool = new Pool(s3edge.url, { connections: maxConcurrency, pipelining: 1 });
    const ceilingPool = new Pool(ceiling.url, { connections: maxConcurrency, pipelining: 1 });
    pools.push(s3edgePool, ceilingPool);
    const cells: DomainsCell[] = [];
    for (const concurrency of opts.concurrency) {
      for (const query of Object.keys(QUERIES) as Query[]) {
        const mine: DomainsCell = { target: 's3edge', query, concurrency, rounds: [] };
        const peer: DomainsCell = { target: 'json ceiling', query, concurrency, rounds: [] };
        const body = JSON.stringify({ query: QUERIES[query] });
        for (let r = 0; r < opts.rounds; r++) {
          const order = r % 2 === 0 ? [mine, peer] : [peer, mine];
          for (const cell of order) {
            const round = cell === mine
              ? await load(s3edgePool, '/api/v3/domains/search', headers, body, concurrency, opts.roundMs)
              : await load(ceilingPool, `/${query}`, headers, body, concurrency, opts.roundMs);
            cell.rounds.push(round);
            log(`bench: domains ${query} c${concurrency} round ${r + 1}/${opts.rounds}: ${cell.target} ${round.opsPerSec.toFixed(0)} req/s, p99 ${round.p99Ms.toFixed(2)} ms, errors ${round.errors}`);
            await sleep(200);
          }
        }
        cells.push(mine, peer);
      }
    }
    if (registry.asked() !== askedAfterWarmUp) log(`bench: the registry was asked ${registry.asked() - askedAfterWarmUp} times after the warm-up (cache misses)`);
    await writeFile(opts.out, report(cells, opts, registry.asked() - askedAfterWarmUp));
    return cells;
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await ceiling?.proc.stop();
    await s3edge?.stop();
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function summary(cell: DomainsCell): { ops: number; p50: number; p99: number; errors: number } {
  return {
    ops: median(cell.rounds.map((r) => r.opsPerSec)),
    p50: median(cell.rounds.map((r) => r.p50Ms)),
    p99: median(cell.rounds.map((r) => r.p99Ms)),
    errors: cell.rounds.reduce((n, r) => n + r.errors, 0),
  };
}

function report(cells: readonly DomainsCell[], opts: DomainsBenchOptions, missesAfterWarmUp: number): string {
  const lines = [
    '# Domain search throughput, cached answers',
    '',
    `Machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? '?'}) · ${(totalmem() / 2 ** 30).toFixed(1)} GiB · node ${process.version} · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · 1-minute load ${loadavg()[0]?.toFixed(2)}`,
    '',
    `Run: \`${opts.command}\` (${opts.rounds} rounds of ${opts.roundMs / 1000} s per cell, targets interleaved; medians). Written by the harness (bench/src/domains.ts).`,
    '',
    '`POST /api/v3/domains/search` with the registry answers cached (the loopback RDAP responder was asked',
    `${missesAfterWarmUp} times after the warm-up), rate limits raised; against a bare node:http server that reads and parses the same`,
    'request and sends the same recorded JSON (the ceiling of a Node JSON endpoint here). `name`: one name',
    `(${QUERIES.name}); \`label\`: a bare label (${QUERIES.label}) answered for each popular TLD.`,
    '',
    '| query | conc | s3edge req/s | ceiling req/s | ratio | s3edge p50 ms | s3edge p99 ms | ceiling p99 ms | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const mine of cells.filter((c) => c.target === 's3edge')) {
    const peer = cells.find((c) => c.target === 'json ceiling' && c.query === mine.query && c.concurrency === mine.concurrency);
    const a = summary(mine);
    const b = peer ? summary(peer) : undefined;
    lines.push(
      `| ${mine.query} | ${mine.concurrency} | ${a.ops.toFixed(0)} | ${b ? b.ops.toFixed(0) : 'n/a'} | ${b ? (a.ops / b.ops).toFixed(2) + 'x' : 'n/a'} | ${a.p50.toFixed(2)} | ${a.p99.toFixed(2)} | ${b ? b.p99.toFixed(2) : 'n/a'} | ${a.errors + (b?.errors ?? 0)} |`,
    );
  }
  return lines.join('\n') + '\n';
}

/** Where --domains writes by default. */
export function domainsResultsFile(): string {
  return join(repoRoot(), 'bench', 'RESULTS-domains.md');
}
