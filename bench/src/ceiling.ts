// The ceiling: a bare node:http server with no S3 logic, to show what this machine and Node can do.
// PUT: hash SHA-256 + MD5 inline while receiving, write in 1 MiB batches (one in flight) to a temp file, fsync,
// rename into place (so a GET can read it back), answer 200. GET: send the file with 1 MiB reads
// (a fresh buffer per read, the size of what is left when that is smaller).
// Runs in its own process (`main.js --internal-ceiling-server DIR`), like the servers it bounds.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

const BATCH = 1024 * 1024;

function fileName(url: string): string {
  const path = url.split('?')[0] ?? '';
  return path.replace(/^\/+/, '').replace(/[^A-Za-z0-9._-]/g, '_') || '_';
}

async function put(dir: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const tmp = join(dir, 'tmp', randomBytes(8).toString('hex'));
  const fh = await open(tmp, 'w');
  try {
    const sha = createHash('sha256');
    const md5 = createHash('md5');
    // One write in flight while the next MiB arrives and is hashed: disk and CPU overlap.
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let inFlight: Promise<unknown> = Promise.resolve();
    for await (const chunk of req as AsyncIterable<Buffer>) {
      sha.update(chunk);
      md5.update(chunk);
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes >= BATCH) {
        await inFlight;
        inFlight = fh.writev(pending);
        inFlight.catch(() => undefined); // awaited (and thrown) at the next batch or the end
        pending = [];
        pendingBytes = 0;
      }
    }
    await inFlight;
    if (pendingBytes > 0) await fh.writev(pending);
    await fh.sync();
    await fh.close();
    await rename(tmp, join(dir, 'objects', fileName(req.url ?? '/')));
    sha.digest();
    res.writeHead(200, { etag: `"${md5.digest('hex')}"`, 'content-length': '0' });
    res.end();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}

async function get(dir: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = join(dir, 'objects', fileName(req.url ?? '/'));
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch {
    res.writeHead(404, { 'content-length': '0' });
    res.end();
    return;
  }
  try {
    const size = (await fh.stat()).size;
    res.writeHead(200, { 'content-length': String(size), 'content-type': 'application/octet-stream' });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    // 1 MiB reads (smaller only for the tail), each into its own buffer: the socket may still hold the last one.
    let left = size;
    while (left > 0) {
      const buf = Buffer.allocUnsafe(Math.min(BATCH, left));
      const { bytesRead } = await fh.read(buf, 0, buf.length, size - left);
      if (bytesRead === 0) throw new Error('file shrank while being read');
      left -= bytesRead;
      if (!res.write(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead))) await once(res, 'drain');
    }
    res.end();
  } finally {
    await fh.close();
  }
}

/** Only for the harness's untimed clean-up between rounds. */
async function del(dir: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await unlink(join(dir, 'objects', fileName(req.url ?? '/'))).catch(() => undefined);
  res.writeHead(204);
  res.end();
}

export async function runCeilingServer(dir: string): Promise<void> {
  await mkdir(join(dir, 'tmp'), { recursive: true });
  await mkdir(join(dir, 'objects'), { recursive: true });
  const server = createServer((req, res) => {
    const work =
      req.method === 'PUT' ? put(dir, req, res)
      : req.method === 'GET' || req.method === 'HEAD' ? get(dir, req, res)
      : req.method === 'DELETE' ? del(dir, req, res)
      : null;
    if (!work) {
      res.writeHead(405, { 'content-length': '0' });
      res.end();
      return;
    }
    work.catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-length': '0' });
        res.end();
      } else {
        res.destroy(err instanceof Error ? err : undefined);
      }
    });
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 70_000;
  server.requestTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  process.stdout.write(JSON.stringify({ event: 'listening', port }) + '\n');
  const stop = (): void => {
    server.close();
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
