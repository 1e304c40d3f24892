// The runtime's ceiling of --fastpath: a bare node:http server under node:cluster with N workers (as
// s3edge's `serve --workers N` shares its listeners), answering every GET with the same 4 KiB from
// memory: no routing, no auth, no logging. What Node itself costs per request on this machine, at the
// worker count s3edge runs with. Its own process tree (`main.js --internal-bare-cluster N`): the
// primary forks the workers, prints {"port":N} once all of them listen, and stops them on SIGTERM.
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Managed } from './proc.js';
import { startInternalServer } from './proc.js';

export const BARE_PATH = '/4k';
const SIZE = 4096;

export async function runBareCluster(workers: number): Promise<void> {
  if (cluster.isPrimary) {
    let listening = 0;
    let stopping = false;
    cluster.on('listening', (_worker, address) => {
      // Workers listening on port 0 share the primary's one handle, so they all report the same port.
      if (++listening === workers) process.stdout.write(JSON.stringify({ port: address.port }) + '\n');
    });
    cluster.on('exit', (worker, code, signal) => {
      if (stopping) return;
      process.stderr.write(`bare cluster: worker ${worker.id} exited (${String(signal ?? code)})\n`);
      process.exit(1);
    });
    process.once('SIGTERM', () => {
      stopping = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.kill();
      process.exit(0);
    });
    for (let i = 0; i < workers; i++) cluster.fork();
    return;
  }
  const body = randomBytes(SIZE);
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': SIZE });
    res.end(body);
  });
  server.keepAliveTimeout = 65_000;
  // The primary gone (killed): nothing hands this worker connections any more.
  process.on('disconnect', () => process.exit(0));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
}

export function startBareCluster(workers: number): Promise<{ url: string; proc: Managed }> {
  return startInternalServer(['--internal-bare-cluster', String(workers)], `bare node:http cluster of ${workers}`);
}
