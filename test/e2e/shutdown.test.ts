// Stopping the real server with signals, over raw sockets (docs/ARCHITECTURE.md "Stopping"):
//  - SIGTERM while a 100 MiB PutObject body streams: new connections are refused and an idle keep-alive
//    connection is closed while the upload goes on; the upload ends 200 with Connection: close, the
//    process exits 0, and the object is there with its size and ETag after a restart on the same data;
//  - SIGTERM while a 100 MiB GET downloads: the download ends whole, the process exits 0;
//  - a request held open past a 1 s grace period is cut, and the process still exits 0;
//  - a second signal while a request is in flight exits at once with 128 + its number.
// The body and the download are held at a point until the server has visibly taken the signal (a
// connect is refused), so the signal lands mid-transfer without any timing guess.
import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { md5Hex } from '../helpers/checksums.js';
import { parseRawResponse, type RawResponse } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer, type RunningServer, type ServerExit } from '../helpers/server.js';
import { UNSIGNED_PAYLOAD } from '../helpers/signer.js';
import { tempDir } from '../helpers/temp-data.js';

const BUCKET = 'drain';
const MiB = 1024 * 1024;
const SIZE = 100 * MiB;
/** Safety net for anything awaited here: generous for a busy 2-core machine, never an assertion of speed. */
const SAFETY_MS = 20_000;

// Three servers for the three stops that cannot share one; started side by side, not one after another.
const dataDir = tempDir(t, 's3edge-shutdown-');
const [uploadServer, graceServer, twiceServer] = await Promise.all([
  startServer({ dataDir }),
  // The grace as a duration, the way an operator writes it.
  startServer({ env: { S3EDGE_SHUTDOWN_GRACE_SECONDS: '1s' } }),
  startServer(),
]);
t.teardown(() => Promise.all([uploadServer.stop(), graceServer.stop(), twiceServer.stop()]));

/** Resolves with `promise`'s value, or 'timed out' after SAFETY_MS. */
function safely<T>(promise: Promise<T>): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const out = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), SAFETY_MS)));
  return Promise.race([promise, out]).finally(() => clearTimeout(timer));
}

/** A connection we write to when we like; `closed` settles with what the server sent (up to `keep` bytes). */
interface Conn {
  socket: Socket;
  write(data: Buffer | string): Promise<void>;
  closed: Promise<Buffer>;
}

function open(url: string, keep = Infinity): Conn {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  socket.setNoDelay(true);
  const chunks: Buffer[] = [];
  let kept = 0;
  socket.on('data', (d: Buffer) => {
    if (kept >= keep) return;
    chunks.push(d);
    kept += d.length;
  });
  // A cut connection may end in a reset: what matters is that it closed.
  socket.on('error', () => undefined);
  const closed = new Promise<Buffer>((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks))));
  return {
    socket,
    write: (data) => new Promise<void>((resolve) => socket.write(data, () => resolve())),
    closed,
  };
}

/** Tries to connect every 50 ms until one is refused: the server has taken the signal. False after SAFETY_MS. */
async function refusedSoon(url: string): Promise<boolean> {
  const port = Number(new URL(url).port);
  for (const deadline = Date.now() + SAFETY_MS; Date.now() < deadline; await sleep(50)) {
    const code = await new Promise<string | undefined>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(undefined);
      });
      s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code));
    });
    if (code === 'ECONNREFUSED') return true;
  }
  return false;
}

/** The head of a signed request, without Connection: close (a keep-alive client's). */
async function head(s3: RawS3, method: string, key: string | undefined, extra: string[] = [], query?: Record<string, string>): Promise<string> {
  const signed = await s3.sign({ method, bucket: BUCKET, key, query, payloadHash: UNSIGNED_PAYLOAD });
  return [`${method} ${signed.target} HTTP/1.1`, ...signed.headers.map(([k, v]) => `${k}: ${v}`), ...extra, '', ''].join('\r\n');
}

function response(raw: Buffer): RawResponse | undefined {
  return raw.length > 0 ? parseRawResponse(raw, false) : undefined;
}

/** The server's log lines with this message, parsed. */
function logLines(server: RunningServer, msg: string): Array<Record<string, unknown>> {
  return server
    .output()
    .split('\n')
    .filter((line) => line.includes(msg))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A PutObject whose body is announced (1 MiB) but never sent past its first 1000 bytes: it stays in flight. */
async function heldRequest(t: Test, server: RunningServer): Promise<Conn> {
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  t.equal((await s3.createBucket(BUCKET)).status, 200);
  const held = open(server.url);
  await held.write(await head(s3, 'PUT', 'held.bin', ['content-length: 1048576']));
  await held.write(Buffer.alloc(1000, 1));
  return held;
}

const body = randomBytes(SIZE);
const bodyMd5 = md5Hex(body);

await t.test('SIGTERM during a 100 MiB upload: refused, idle closed, the upload completes, exit 0', async (t) => {
  const s3 = new RawS3({ url: uploadServer.url }, uploadServer.rootKey);
  t.equal((await s3.createBucket(BUCKET)).status, 200);

  // A keep-alive client between requests: it must be closed at once, not after keepAliveTimeout.
  const idle = open(uploadServer.url);
  await idle.write(await head(s3, 'GET', undefined, [], { 'list-type': '2' }));
  while (!idle.socket.destroyed && idle.socket.bytesRead === 0) await sleep(10);
  t.ok(idle.socket.bytesRead > 0 && !idle.socket.destroyed, 'the keep-alive connection got its answer and stays open');

  const upload = open(uploadServer.url);
  await upload.write(await head(s3, 'PUT', 'big.bin', [`content-length: ${SIZE}`]));
  const pieces = SIZE / MiB;
  for (let i = 0; i < pieces; i++) {
    await upload.write(body.subarray(i * MiB, (i + 1) * MiB));
    if (i === 20) {
      uploadServer.kill('SIGTERM');
      t.ok(await refusedSoon(uploadServer.url), 'a new connection is refused once the signal is taken');
      t.not(await safely(idle.closed), 'timed out', 'the idle keep-alive connection is closed while the upload still streams');
      t.equal(upload.socket.destroyed, false, 'the upload connection is still open');
    }
    // Small pauses, as a slow client's.
    if (i % 10 === 9) await sleep(5);
  }
  const answer = await safely(upload.closed);
  const res = answer === 'timed out' ? undefined : response(answer);
  t.equal(res?.status, 200, 'the upload that was streaming completes');
  t.equal(res?.headers['etag'], `"${bodyMd5}"`);
  t.equal(res?.headers['connection'], 'close', 'the answer says the connection closes');
  t.same(await safely(uploadServer.exited), { code: 0, signal: null }, 'the process exits 0');

  const [started] = logLines(uploadServer, 'stopping: no new connections');
  t.ok(Number(started?.['connections']) >= 2, 'the drain names the connections open (the upload and the idle one)');
  const [ended] = logLines(uploadServer, 'stopped: every connection closed');
  t.equal(ended?.['cut'], 0, 'nothing was cut');
});

await t.test('after a restart on the same data, the upload is there; SIGTERM during its download', async (t) => {
  const again = await startServer({ dataDir });
  t.teardown(() => again.stop());
  const s3 = new RawS3({ url: again.url }, again.rootKey);
  const headRes = await s3.headObject(BUCKET, 'big.bin');
  t.equal(headRes.status, 200);
  t.equal(headRes.headers['content-length'], String(SIZE));
  t.equal(headRes.headers['etag'], `"${bodyMd5}"`);

  // The body is hashed as it comes rather than held: 100 MiB kept and copied slows this machine down.
  const download = open(again.url, 0);
  let headBytes: Buffer | undefined = Buffer.alloc(0);
  let status = '';
  const md5 = createHash('md5');
  let received = 0;
  let resume: Promise<void> | undefined;
  download.socket.on('data', (d: Buffer) => {
    let piece = d;
    if (headBytes !== undefined) {
      headBytes = Buffer.concat([headBytes, d]);
      const end = headBytes.indexOf('\r\n\r\n');
      if (end < 0) return;
      status = headBytes.toString('latin1', 0, headBytes.indexOf('\r\n'));
      piece = headBytes.subarray(end + 4);
      headBytes = undefined;
    }
    received += piece.length;
    md5.update(piece);
    if (resume === undefined && received >= 10 * MiB) {
      // Hold the download here until the server has taken the signal, then read on.
      download.socket.pause();
      again.kill('SIGTERM');
      resume = refusedSoon(again.url).then((refused) => {
        t.ok(refused, 'a new connection is refused while the download is held');
        download.socket.resume();
      });
    }
  });
  await download.write(await head(s3, 'GET', 'big.bin'));
  t.not(await safely(download.closed), 'timed out');
  await resume;
  t.ok(resume, 'the signal was sent mid-download');
  t.match(status, /^HTTP\/1\.1 200 /);
  t.equal(received, SIZE, 'the download is whole');
  t.equal(md5.digest('hex'), bodyMd5, 'and its bytes are the upload');
  t.same(await safely(again.exited), { code: 0, signal: null }, 'the process exits 0');
});

await t.test('a request held open past the grace period is cut; the process still exits 0', async (t) => {
  const held = await heldRequest(t, graceServer);
  graceServer.kill('SIGTERM');
  t.ok(await refusedSoon(graceServer.url), 'new connections are refused');
  t.not(await safely(held.closed), 'timed out', 'the held connection is cut');
  t.same(await safely(graceServer.exited), { code: 0, signal: null }, 'the process exits 0 after the grace period');
  const [ended] = logLines(graceServer, 'stopped: every connection closed');
  t.equal(ended?.['cut'], 1, 'the drain says one connection was cut');
  const [started] = logLines(graceServer, 'stopping: no new connections');
  t.equal(started?.['graceSeconds'], 1, 'the grace came from S3EDGE_SHUTDOWN_GRACE_SECONDS=1s');
});

await t.test('a second signal during the drain exits at once', async (t) => {
  const held = await heldRequest(t, twiceServer);
  twiceServer.kill('SIGINT');
  t.ok(await refusedSoon(twiceServer.url), 'the first signal (SIGINT) started the drain');
  twiceServer.kill('SIGTERM');
  // The default grace is 30 s: exiting inside the safety net means the second signal did not wait for it.
  const exit: ServerExit | 'timed out' = await safely(twiceServer.exited);
  t.same(exit, { code: 143, signal: null }, 'exit code 128 + SIGTERM');
  t.match(twiceServer.output(), /SIGTERM again: exiting now/);
  held.socket.destroy();
});
