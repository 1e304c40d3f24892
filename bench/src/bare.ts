// The runtime's ceilings of --fastpath: a bare node:http server under node:cluster with N workers (as
// s3edge's `serve --workers N` shares its listeners), answering every GET with the same 4 KiB from
// memory, and a bare proxy the same way (runBareProxy): no routing, no auth, no logging. What Node itself
// costs per request on this machine, at the worker count s3edge runs with. Each its own process tree
// (`main.js --internal-bare-cluster N [WORK_US]`, `--internal-bare-proxy N ORIGIN`): the primary forks the workers,
// prints {"port":N} once all of them listen, and stops them on SIGTERM.
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Pool } from 'undici';
import type { Managed } from './proc.js';
import { startInternalServer } from './proc.js';

export const BARE_PATH = '/4k';
const SIZE = 4096;

/**
 * `workUs` > 0: each answer first spins that many µs of CPU (--fastpath-bare-work): the runtime with a
 * known amount of work added, which shows what an added µs costs in requests/s on this machine.
 */
export async function runBareCluster(workers: number, workUs = 0): Promise<void> {
  if (cluster.isPrimary) return superviseBareWorkers(workers, 'bare cluster');
  const body = randomBytes(SIZE);
  const workMs = workUs / 1000;
  await listenBareWorker(
    createServer((req, res) => {
      if (workMs > 0) for (const until = performance.now() + workMs; performance.now() < until; );
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': SIZE });
      res.end(body);
    }),
  );
}

/**
 * The runtime's ceiling for the edge proxy: node:http under node:cluster with N workers, each
 * forwarding every request to `origin` over an undici Pool (keep-alive, up to 64 connections, as
 * nginx's upstream keepalive 64) and streaming the answer back, status and headers as they came. No
 * routing, no rules, no logging: what Node itself costs per proxied request here.
 */
export async function runBareProxy(workers: number, origin: string): Promise<void> {
  if (cluster.isPrimary) return superviseBareWorkers(workers, 'bare proxy');
  const pool = new Pool(origin, { connections: 64 });
  const host = new URL(origin).host;
  await listenBareWorker(
    createServer((req, res) => {
      pool.dispatch(
        { path: req.url ?? '/', method: 'GET', headers: { host } },
        {
          onRequestStart() {},
          onResponseStart(_controller, status, headers) {
            res.writeHead(status, headers as Record<string, string | string[]>);
          },
          onResponseData(_controller, chunk: Buffer) {
            res.write(chunk);
          },
          onResponseEnd() {
            res.end();
          },
          onResponseError(_controller, err: Error) {
            res.destroy(err);
          },
        },
      );
    }),
  );
}

/** The primary of a bare cluster: forks the workers, prints {"port":N} once all listen, stops them on SIGTERM. */
function superviseBareWorkers(workers: number, name: string): void {
  let listening = 0;
  let stopping = false;
  cluster.on('listening', (_worker, address) => {
    // Workers listening on port 0 share the primary's one handle, so they all report the same port.
    if (++listening === workers) process.stdout.write(JSON.stringify({ port: address.port }) + '\n');
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    process.stderr.write(`${name}: worker ${worker.id} exited (${String(signal ?? code)})\n`);
    process.exit(1);
  });
  process.once('SIGTERM', () => {
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    process.exit(0);
  });
  for (let i = 0; i < workers; i++) cluster.fork();
}

async function listenBareWorker(server: Server): Promise<void> {
  server.keepAliveTimeout = 65_000;
  // The primary gone (killed): nothing hands this worker connections any more.
  process.on('disconnect', () => process.exit(0));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
}

export function startBareCluster(workers: number, workUs = 0): Promise<{ url: string; proc: Managed }> {
  return startInternalServer(['--internal-bare-cluster', String(workers), String(workUs)], `bare node:http cluster of ${workers}${workUs > 0 ? ` with ${workUs} µs of work a request` : ''}`);
}

export function startBareProxy(workers: number, origin: string): Promise<{ url: string; proc: Managed }> {
  return startInternalServer(['--internal-bare-proxy', String(workers), origin], `bare node proxy cluster of ${workers}`);
}
