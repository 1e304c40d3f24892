// A real PostgreSQL server for a test file: Debian's initdb and postgres in a fresh temp dir, on a free
// loopback port, its unix socket inside the temp dir. Run as root (CI, this machine) the server runs as
// `nobody` (PostgreSQL refuses root). Tuned to be disposable: no fsync, no synchronous commit. One per
// test file; `database()` gives each test a database of its own. Stopped on teardown and, like the
// gateway of server.ts, when the test process exits or is stopped by a signal.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import pg from 'pg';
import { onTestProcessExit } from './exit-cleanup.js';

interface Teardown {
  teardown(fn: () => void | Promise<void>): void;
}

export interface RunningPostgres {
  /** postgres://postgres:<password>@127.0.0.1:<port>/s3edge_test: a database created empty for the caller. */
  url: string;
  /** A new empty database on this server, and its URL. */
  database(name?: string): Promise<string>;
  /** Runs one statement on the `postgres` database (as the superuser). */
  admin<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  /**
   * Kills the server at once (SIGQUIT: every connection dropped, as in a failover) and starts it again on
   * the same data and port after `downMs`; resolves once it takes connections again.
   */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const NOBODY = 65534;
const START_TIMEOUT_MS = 30_000;
const PROGRAMS = ['initdb', 'postgres'] as const;

/** The directory holding initdb and postgres: PATH first (symlinks followed), else the newest /usr/lib/postgresql/<v>/bin. */
export function postgresBinDir(path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const initdb = join(dir, 'initdb');
    if (!existsSync(initdb)) continue;
    const real = dirname(realpathSync(initdb));
    if (PROGRAMS.every((p) => existsSync(join(real, p)))) return real;
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const bin = join(root, v, 'bin');
    if (PROGRAMS.every((p) => existsSync(join(bin, p)))) return bin;
  }
  return undefined;
}

const live = new Set<{ child: ChildProcess; dir: string }>();
function killAll(): void {
  for (const { child, dir } of live) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
function installExitHook(): void {
  onTestProcessExit(killAll);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Starts PostgreSQL for this test file (stopped in t.teardown). Fails with a clear line when it is not installed. */
export async function startPostgres(t: Teardown): Promise<RunningPostgres> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error('PostgreSQL is not installed (no initdb on PATH or under /usr/lib/postgresql/*/bin): sudo apt-get install -y postgresql');
  installExitHook();
  const dir = mkdtempSync(join(tmpdir(), 's3edge-pg-'));
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot ? { uid: NOBODY, gid: NOBODY } : {};
  const password = randomBytes(18).toString('base64url');
  const dataDir = join(dir, 'data');
  const socketDir = join(dir, 'socket');
  mkdirSync(socketDir);
  writeFileSync(join(dir, 'pwfile'), `${password}\n`, { mode: 0o600 });
  if (asRoot) for (const p of [dir, socketDir, join(dir, 'pwfile')]) chownSync(p, NOBODY, NOBODY);

  const initdb = spawnSync(
    join(bin, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', `--pwfile=${join(dir, 'pwfile')}`, '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
    { cwd: dir, ...ids, encoding: 'utf8', timeout: START_TIMEOUT_MS },
  );
  if (initdb.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (exit ${String(initdb.status)}): ${initdb.stderr || String(initdb.error)}`);
  }

  const launch = (port: number): ChildProcess => {
    const child = spawn(
      join(bin, 'postgres'),
      [
        '-D', dataDir, '-p', String(port), '-k', socketDir,
        '-c', 'listen_addresses=127.0.0.1',
        '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
        '-c', 'shared_buffers=16MB', '-c', 'max_connections=60', '-c', 'max_wal_size=256MB',
        '-c', 'logging_collector=off', '-c', 'log_min_messages=warning',
      ],
      { cwd: dir, ...ids, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const entry = { child, dir };
    live.add(entry);
    child.once('exit', () => live.delete(entry));
    return child;
  };
  // The port was free a moment ago; another process may take it first: try again on a new one.
  let started: { child: ChildProcess; port: number } | undefined;
  let lastError = '';
  for (let attempt = 0; attempt < 3 && started === undefined; attempt++) {
    const port = await freePort();
    const child = launch(port);
    const ready = await untilReady(child, port, password);
    if (ready === true) started = { child, port };
    else {
      lastError = ready;
      child.kill('SIGKILL');
    }
  }
  if (started === undefined) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL did not start: ${lastError}`);
  }
  let { child } = started;
  const { port } = started;
  const base = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`;

  const admin = async <R extends pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<pg.QueryResult<R>> => {
    const client = new pg.Client({ connectionString: `${base}/postgres` });
    await client.connect();
    try {
      return await client.query<R>(sql, values);
    } finally {
      await client.end();
    }
  };
  let count = 0;
  const database = async (name = `s3edge_test_${++count}`): Promise<string> => {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain database name: ${name}`);
    await admin(`CREATE DATABASE ${name}`);
    return `${base}/${name}`;
  };

  /** SIGQUIT: immediate shutdown, nothing to keep. */
  const quit = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGQUIT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const restart = async (downMs = 0): Promise<void> => {
    await quit();
    if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
    child = launch(port);
    const ready = await untilReady(child, port, password);
    if (ready !== true) throw new Error(`PostgreSQL did not start again: ${ready}`);
  };
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await quit();
      rmSync(dir, { recursive: true, force: true });
    })());
  t.teardown(stop);

  try {
    return { url: await database('s3edge_test'), database, admin, restart, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** true once a password login over TCP works; else why not (the server's last words). */
async function untilReady(child: ChildProcess, port: number, password: string): Promise<true | string> {
  let output = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (d: string) => {
    output = (output + d).slice(-4096);
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return `postgres exited (${String(child.exitCode ?? child.signalCode)}): ${output}`;
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres', connectionTimeoutMillis: 1000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.end();
      return true;
    } catch {
      await client.end().catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return `no connection within ${START_TIMEOUT_MS} ms: ${output}`;
}
