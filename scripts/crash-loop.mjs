// The crash loop of docs/ARCHITECTURE.md ("Garbage collection of unreferenced blobs"): ROUNDS times, a
// server is started on one data directory, four large PUTs are streamed to it, overwriting the same
// four keys each round (an overwritten version's blob is freed after the commit), and it is killed with
// SIGKILL at a random moment (some uploads half-written, some committed, some between); then one more
// start. Prints what each kill left in storage/ and, after the last start, what remains: no temp file,
// no blob beyond those object rows name, and every acknowledged PUT readable.
//
//   npm run build && node scripts/crash-loop.mjs [ROUNDS=20] [SIZE_MIB=64] [MAX_WAIT_MS=3800]
//
// Uses the tests' helpers from dist/test (the server as the e2e tests start it); the data directory is a
// temporary one, removed at the end.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

const [rounds = 20, sizeMiB = 64, maxWaitMs = 3800] = process.argv.slice(2).map(Number);
const helpers = new URL('../dist/test/helpers/', import.meta.url);
const { startServer } = await import(new URL('server.js', helpers).href);
const { RawS3 } = await import(new URL('s3-client.js', helpers).href);
const { query } = await import(new URL('api.js', helpers).href);

const root = mkdtempSync(join(tmpdir(), 's3edge-crash-loop-'));
const dataDir = join(root, 'data');
const size = sizeMiB * 1024 * 1024;
const chunk = randomBytes(1024 * 1024);
const acknowledged = [];

function files(sub) {
  let n = 0;
  let bytes = 0;
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const info = statSync(path);
      if (info.isDirectory()) walk(path);
      else (n++, (bytes += info.size));
    }
  };
  try {
    walk(join(dataDir, 'storage', sub));
  } catch {
    // not made yet
  }
  return { files: n, MiB: Math.round(bytes / 2 ** 20) };
}

try {
  for (let round = 1; round <= rounds; round++) {
    const server = await startServer({ dataDir });
    const s3 = new RawS3({ url: server.url }, server.rootKey);
    if (round === 1) await s3.createBucket('crash');
    const { port, hostname } = new URL(server.url);
    const sockets = [];
    for (let i = 0; i < 4; i++) {
      const key = `k${i}`;
      const signed = await s3.sign({ method: 'PUT', bucket: 'crash', key, headers: { 'content-length': String(size) }, payloadHash: 'UNSIGNED-PAYLOAD' });
      const socket = connect(Number(port), hostname);
      socket.on('error', () => undefined);
      socket.on('data', (d) => d.toString('latin1').startsWith('HTTP/1.1 200') && acknowledged.push(key));
      sockets.push(socket);
      socket.write(`PUT ${signed.target} HTTP/1.1\r\n${signed.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
      void (async () => {
        for (let sent = 0; sent < size && !socket.destroyed; sent += chunk.length) await new Promise((done) => socket.write(chunk, done));
      })();
    }
    await new Promise((done) => setTimeout(done, 300 + Math.random() * (maxWaitMs - 300)));
    server.kill('SIGKILL');
    await server.exited;
    for (const socket of sockets) socket.destroy();
    console.log(`round ${round}: the kill left tmp ${JSON.stringify(files('tmp'))}, blobs ${JSON.stringify(files('blobs'))}`);
  }
  const server = await startServer({ dataDir });
  try {
    // The start-up sweep and the collector's first pass run in the background.
    await new Promise((done) => setTimeout(done, 3000));
    const rows = query(server, "SELECT count(*) AS n FROM objects WHERE blob_id NOT LIKE 'inline-%'")[0].n;
    const s3 = new RawS3({ url: server.url }, server.rootKey);
    let readable = 0;
    for (const key of new Set(acknowledged)) if ((await s3.headObject('crash', key)).status === 200) readable++;
    console.log(
      `after ${rounds} kills and a start: tmp ${JSON.stringify(files('tmp'))}, blobs ${JSON.stringify(files('blobs'))}, ` +
        `object rows with a blob ${rows}; acknowledged PUTs ${acknowledged.length} (of ${new Set(acknowledged).size} keys), keys readable ${readable}`,
    );
  } finally {
    await server.stop();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
