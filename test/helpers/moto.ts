// Starts moto's S3 server (a real S3 implementation in Python) on 127.0.0.1 and a free port, for the
// upstream storage backend's tests; makes one bucket; stop() kills it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { S3Storage, type S3StorageOptions } from '../../src/storage/upstream/s3-storage.js';

export interface RunningMoto {
  endpoint: string;
  port: number;
  bucket: string;
  /** Options for an S3Storage (or the gateway's storage.s3 settings) on this moto and bucket. */
  storageOptions(prefix?: string): S3StorageOptions;
  /** Env for a gateway process using this moto as its upstream. */
  gatewayEnv(prefix?: string): Record<string, string>;
  /** SIGKILL: the upstream disappears mid-request. */
  kill(): void;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const addr = srv.address();
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

export async function startMoto(opts: { bucket?: string; port?: number } = {}): Promise<RunningMoto> {
  const port = opts.port ?? (await freePort());
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' },
  });
  live.add(child);
  let exited = false;
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4096);
  });
  const gone = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      live.delete(child);
      resolve();
    }),
  );
  // Poll until it answers: a safety-net wait, not an assertion (up to ~30 s on a busy machine).
  for (let i = 0; ; i++) {
    if (exited) throw new Error(`moto exited: ${stderr}`);
    try {
      const res = await request(`${endpoint}/moto-api/`, { method: 'GET' });
      await res.body.dump();
      break;
    } catch {
      if (i > 300) {
        child.kill('SIGKILL');
        throw new Error(`moto did not start: ${stderr}`);
      }
      await sleep(100);
    }
  }
  const bucket = opts.bucket ?? 'upstream-bucket';
  const storageOptions = (prefix = ''): S3StorageOptions => ({
    endpoint,
    region: 'us-east-1',
    bucket,
    accessKeyId: 'test',
    secretAccessKey: 'test',
    forcePathStyle: true,
    prefix,
    // Fail fast in tests once moto is gone.
    attempts: 2,
    retryBaseMs: 20,
  });
  const made = await request(`${endpoint}/${bucket}`, { method: 'PUT' });
  await made.body.dump();
  if (made.statusCode !== 200) throw new Error(`moto: create bucket answered ${made.statusCode}`);
  // Sanity: the backend itself can reach it.
  const probe = new S3Storage(storageOptions());
  await probe.init();
  await probe.close();
  return {
    endpoint,
    port,
    bucket,
    storageOptions,
    gatewayEnv: (prefix = '') => ({
      S3EDGE_STORAGE_BACKEND: 's3',
      S3EDGE_STORAGE_S3_ENDPOINT: endpoint,
      S3EDGE_STORAGE_S3_REGION: 'us-east-1',
      S3EDGE_STORAGE_S3_BUCKET: bucket,
      S3EDGE_STORAGE_S3_ACCESS_KEY_ID: 'test',
      S3EDGE_STORAGE_S3_SECRET_ACCESS_KEY: 'test',
      S3EDGE_STORAGE_S3_FORCE_PATH_STYLE: 'true',
      S3EDGE_STORAGE_S3_PREFIX: prefix,
    }),
    kill: () => {
      child.kill('SIGKILL');
    },
    stop: async () => {
      if (!exited) child.kill('SIGKILL');
      await gone;
    },
  };
}

/** Every key in the bucket (plain list; moto's test buckets stay small). */
export async function listKeys(moto: RunningMoto): Promise<string[]> {
  const res = await request(`${moto.endpoint}/${moto.bucket}?list-type=2`, { method: 'GET' });
  const text = await res.body.text();
  return [...text.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1] ?? '');
}
