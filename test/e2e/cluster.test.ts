// `serve --workers 2` (docs/SCALE.md), the real server over real sockets, each request on a connection of
// its own so that the cluster hands them to both workers:
//  - one start message (workers: 2); the supervisor and two worker processes; both workers serve;
//  - the background jobs start in the supervisor only, once, also after a worker was restarted;
//  - a worker killed with SIGKILL is replaced, and the server answers all along;
//  - SIGTERM while an upload streams: the upload ends 200, every process exits, the supervisor with 0;
//  - a port that is taken fails the start with one line and exit 1;
//  - a data directory the supervisor cannot open (the workers, forked first, wait for it) fails the start
//    with its one line and exit 2, and no worker is left.
import t, { type Test } from 'tap';
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { rawRequest } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { childrenOf, pidsLogging } from '../helpers/processes.js';
import { startServer } from '../helpers/server.js';
import { runS3edge } from '../helpers/cli.js';
import { UNSIGNED_PAYLOAD } from '../helpers/signer.js';

/** Safety net for polls, generous for a busy 2-core machine: never an assertion of speed. */
const SAFETY_MS = 30_000;

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> {
  for (const deadline = Date.now() + SAFETY_MS; Date.now() < deadline; await sleep(100)) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
  }
  throw new Error(`not within ${SAFETY_MS} ms: ${what}`);
}

const JOBS_LINE = 'background jobs run in this process: multipart sweep, lifecycle rules, blob GC, scrub, request-log roll-ups, WAL checkpoints';

const server = await startServer({ workers: 2 });
t.teardown(() => server.stop());
const s3 = new RawS3({ url: server.url }, server.rootKey);

t.test('one start message, a supervisor and two workers, both serving', async (t) => {
  t.equal(server.listening['workers'], 2, 'the start message says 2 workers');
  const workers = await until('two workers', () => {
    const c = childrenOf(server.pid);
    return c.length === 2 ? c : undefined;
  });
  t.equal(workers.length, 2, 'the supervisor has two worker processes');
  t.equal((await s3.createBucket('cluster')).status, 200);
  const body = Buffer.from('written through one worker, read through any');
  t.equal((await s3.putObject('cluster', 'one', body)).status, 200);
  for (let i = 0; i < 8; i++) {
    const res = await s3.getObject('cluster', 'one');
    t.equal(res.status, 200, `GET ${i + 1} on a new connection`);
    t.same(res.body, body, `GET ${i + 1}: the bytes written`);
  }
  const served = await until('S3 request lines from both workers', () => {
    const pids = new Set(pidsLogging(server.output(), 's3 request'));
    return workers.every((w) => pids.has(w)) ? pids : undefined;
  });
  t.ok(workers.every((w) => served.has(w)), 'both workers served requests');
  t.notOk(served.has(server.pid), 'the supervisor served none');

  // Whichever worker a scrape lands on answers for both: the same count of S3 GETs every time.
  const gets: number[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await rawRequest({ url: server.url }, { method: 'GET', target: '/metrics', headers: [['host', new URL(server.url).host]] });
    t.equal(res.status, 200, `GET /metrics ${i + 1}`);
    t.match(res.text, /^s3edge_workers_reporting 2$/m, `scrape ${i + 1}: both workers reporting`);
    let n = 0;
    for (const m of res.text.matchAll(/^s3edge_requests_total\{([^}]*)\} (\d+)$/gm)) {
      if (/surface="s3"/.test(m[1] as string) && /operation="GetObject"/.test(m[1] as string) && /status="200"/.test(m[1] as string)) n += Number(m[2]);
    }
    gets.push(n);
  }
  t.same(gets, [8, 8, 8, 8], 'every scrape counts the 8 GETs of both workers');
});

t.test('background jobs in the supervisor only; a killed worker is replaced while the other serves', async (t) => {
  t.same(pidsLogging(server.output(), JOBS_LINE), [server.pid], 'the jobs started once, in the supervisor');
  const before = childrenOf(server.pid);
  const victim = before[0] as number;
  process.kill(victim, 'SIGKILL');
  // Once the supervisor has seen it die (and closed its channel), the cluster hands it no more
  // connections: every request from then on is answered, by the other worker, then by either. (One
  // handed to it between its death and that moment is lost with it: docs/SCALE.md.)
  await until('the supervisor saw the worker die', () => pidsLogging(server.output(), 'cluster: a worker exited; starting another').length === 1);
  let answered = 0;
  const after = await until('a new worker', async () => {
    const res = await rawRequest({ url: server.url }, { method: 'GET', target: '/healthz', headers: [['host', new URL(server.url).host]], timeoutMs: 10_000 });
    if (res.status === 200) answered++;
    else t.fail(`healthz answered ${res.status}`);
    const c = childrenOf(server.pid);
    return c.length === 2 ? c : undefined;
  });
  t.ok(answered > 0, `healthz answered ${answered} times while a worker was replaced`);
  t.notOk(after.includes(victim), 'the killed worker is gone');
  t.equal(after.length, 2, 'two workers again');
  await until('the new worker listens', () => pidsLogging(server.output(), 'cluster: a worker listens').length >= 3);
  const res = await s3.getObject('cluster', 'one');
  t.equal(res.status, 200, 'the object is served after the restart');
  t.same(pidsLogging(server.output(), JOBS_LINE), [server.pid], 'still once: a new worker runs no jobs');
});

t.test('SIGTERM drains an upload in flight, then every process exits', async (t) => {
  const workers = childrenOf(server.pid);
  const size = 4 * 1024 * 1024;
  const signed = await s3.sign({ method: 'PUT', bucket: 'cluster', key: 'drained', payloadHash: UNSIGNED_PAYLOAD, headers: { 'content-length': String(size) } });
  const { connect } = await import('node:net');
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1'))));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const head = [`PUT ${signed.target} HTTP/1.1`, ...signed.headers.map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
  socket.write(head);
  socket.write(Buffer.alloc(size / 2, 1));
  await sleep(300);
  server.kill('SIGTERM');
  // The server has taken the signal once a new connection is refused.
  await until('new connections refused', async () => {
    try {
      const r = await rawRequest({ url: server.url }, { method: 'GET', target: '/healthz', headers: [['host', 'x']], timeoutMs: 2000 });
      return r.status === 0;
    } catch {
      return true;
    }
  });
  socket.write(Buffer.alloc(size / 2, 1));
  const answer = await closed;
  t.match(answer, /^HTTP\/1\.1 200 /, 'the upload in flight ended 200');
  const exit = await server.exited;
  t.same(exit, { code: 0, signal: null }, 'the supervisor exited 0');
  t.same(
    workers.filter((w) => childrenOf(server.pid).includes(w)),
    [],
    'no worker is left',
  );
  t.equal(pidsLogging(server.output(), 'stopped: every connection closed').filter((p) => workers.includes(p)).length, 2, 'both workers drained');
});

t.test('a taken port fails the start with one line and exit 1', async (t) => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => blocker.close());
  const port = (blocker.address() as { port: number }).port;
  const { tempDir } = await import('../helpers/temp-data.js');
  const dir = tempDir(t, 's3edge-cluster-port-');
  const r = await runS3edge(['serve', '--workers', '2', '--data-dir', dir, '--host', '127.0.0.1', '--port', String(port), '--cdn-port', '0']);
  t.equal(r.code, 1, 'exit 1');
  t.match(r.stderr, /^s3edge: cannot listen: .*EADDRINUSE/m, 'one line naming the problem');
  t.equal(r.stderr.split('\n').filter((l) => l.startsWith('s3edge:')).length, 1, 'said once, not once per worker');
});

t.test('a data directory the supervisor cannot open fails the start with one line and exit 2', async (t) => {
  const { tempDir } = await import('../helpers/temp-data.js');
  const dir = tempDir(t, 's3edge-cluster-key-');
  const { randomBytes } = await import('node:crypto');
  const key = (): Record<string, string> => ({ S3EDGE_MASTER_KEY: randomBytes(32).toString('hex') });
  // One start with a key makes the directory; the next, with another key, cannot open its metadata.
  const first = await runS3edge(['users', 'create', 'someone', '--data-dir', dir, '--json'], key());
  t.equal(first.code, 0, `the data directory is made: ${first.stderr}`);
  const r = await runS3edge(['serve', '--workers', '2', '--data-dir', dir, '--host', '127.0.0.1', '--port', '0', '--cdn-port', '0'], key());
  t.equal(r.code, 2, 'exit 2');
  t.match(r.stderr, /^s3edge: config: the master key does not match this metadata/m, 'the supervisor says why');
  t.equal(r.stderr.split('\n').filter((l) => l.startsWith('s3edge:')).length, 1, 'said once: the workers waiting for the directory say nothing');
  t.notMatch(r.stdout, /"event":"listening"|s3edge is running/, 'no start message');
});

/** `serve --workers 2 --json` on a data directory of its own, stdout and stderr piped: the cluster's supervisor. */
async function spawnCluster(t: Test, dirPrefix: string): Promise<ChildProcessByStdio<null, Readable, Readable>> {
  const { spawn } = await import('node:child_process');
  const { childProcessEnv, s3edgeCommand } = await import('../helpers/child-env.js');
  const { tempDir } = await import('../helpers/temp-data.js');
  const dir = tempDir(t, dirPrefix);
  const [cmd, args] = s3edgeCommand(['serve', '--workers', '2', '--json', '--data-dir', dir, '--host', '127.0.0.1', '--port', '0', '--cdn-port', '0']);
  const child = spawn(cmd, args, { env: childProcessEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  // A test that failed before its SIGTERM must not leave the cluster running (the file would wait for it).
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });
  return child;
}

t.test('SIGTERM as soon as the first worker listens: the start completes, then every process exits 0, no stack trace', async (t) => {
  // The second worker is forked once the first listens: the signal lands while it starts.
  const child = await spawnCluster(t, 's3edge-cluster-early-stop-');
  let stdout = '';
  let stderr = '';
  let signalled = false;
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (!signalled && pidsLogging(stdout, 'cluster: a worker listens').length > 0) {
      signalled = true;
      child.kill('SIGTERM');
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  t.ok(signalled, 'the signal was sent after the first worker listened');
  t.equal(code, 0, `the supervisor exits 0 (stderr: ${stderr.slice(0, 500)})`);
  t.notMatch(stderr, /EPIPE|Error|at .*\(node:/, 'no worker died on its channel');
  t.match(stdout, /"event":"listening"/, 'the start completed before the stop');
  t.match(stdout, /stopping: every worker drains/, 'the stop drained the workers');
  t.same(childrenOf(child.pid as number), [], 'no process left');
});

/** The TCP ports `pid` listens on (its sockets' inodes in /proc/net/tcp, state LISTEN). */
async function listeningPorts(pid: number): Promise<number[]> {
  const { readdirSync, readFileSync, readlinkSync } = await import('node:fs');
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    // A descriptor closed since the listing (the starting process opens and closes files) is skipped.
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'utf8' });
    } catch {
      continue;
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m?.[1]) inodes.add(m[1]);
  }
  const ports: number[] = [];
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[3] === '0A' && f[9] !== undefined && inodes.has(f[9])) ports.push(parseInt((f[1] ?? '').split(':')[1] ?? '', 16));
  }
  return ports;
}

t.test('stdout gone before the start message (s3edge serve | head -1): the cluster serves and stops on SIGTERM', async (t) => {
  const child = await spawnCluster(t, 's3edge-cluster-no-stdout-');
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  // The reader goes after the first worker's line: the second's and the start message meet a closed pipe.
  let seen = '';
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (d: Buffer) => {
      seen += d.toString();
      if (pidsLogging(seen, 'cluster: a worker listens').length > 0) {
        child.stdout.destroy();
        resolve();
      }
    });
  });
  const pid = child.pid as number;
  const ports = await until('the cluster listens', async () => {
    const found = await listeningPorts(pid);
    return found.length >= 2 ? found : undefined;
  });
  const answers = await Promise.all(ports.map((port) => rawRequest({ url: `http://127.0.0.1:${port}` }, { method: 'GET', target: '/healthz', headers: [['host', `127.0.0.1:${port}`]] }).then((r) => r.status)));
  t.ok(answers.includes(200), `the server answers /healthz (ports ${ports.join(', ')}: ${answers.join(', ')})`);
  // The start message follows the second worker's listening by milliseconds: after a second it has met
  // the closed pipe (with it unhandled, the supervisor hung there and ignored the SIGTERM below).
  await until('two workers', () => childrenOf(pid).length === 2);
  await sleep(1000);
  child.kill('SIGTERM');
  // Unref'd: the safety timer must not keep this file's process alive once the supervisor exited (it did, 30 s).
  const code = await Promise.race([exited, sleep(SAFETY_MS, undefined, { ref: false }).then(() => 'still running')]);
  if (code === 'still running') child.kill('SIGKILL');
  t.equal(code, 0, `the supervisor stopped on SIGTERM and exited 0 (stderr: ${stderr.slice(0, 500)})`);
  t.same(childrenOf(pid), [], 'no process left');
});
