// Management API helpers for e2e tests: users and API keys through the real admin CLI, typed clients
// that record every response body, and the scan for internal names that must never reach a client.
import { openSqlite } from '../../src/db/sqlite/index.js';
import { join } from 'node:path';
import type { Test } from 'tap';
import { ApiClientError, S3EdgeClient } from '../../src/client/index.js';
import type { RunningServer } from './server.js';

export interface RecordedResponse {
  method: string;
  path: string;
  status: number;
  body: string;
}

/** Every response body the clients of one test file received. */
export class ResponseRecorder {
  readonly responses: RecordedResponse[] = [];

  record = (r: RecordedResponse): void => {
    this.responses.push(r);
  };

  /** Fails `t` for every recorded body that contains one of `forbidden` (case-insensitive). */
  assertNoLeaks(t: Test, forbidden: readonly string[]): void {
    const needles = forbidden.filter((f) => f.length >= 3).map((f) => f.toLowerCase());
    let leaks = 0;
    for (const r of this.responses) {
      const body = r.body.toLowerCase();
      for (const needle of needles) {
        if (body.includes(needle)) {
          leaks++;
          t.fail(`${r.method} ${r.path} (${r.status}) leaks '${needle}'`, { body: r.body.slice(0, 500) });
        }
      }
    }
    t.equal(leaks, 0, `no internal name in ${this.responses.length} response bodies`);
    t.ok(this.responses.length > 0, 'the scan saw responses');
  }
}

/** Names of storage providers and internal layout that no API response may carry. */
export const PROVIDER_NAMES: readonly string[] = [
  'amazonaws', 'minio', 'cloudflare', 'r2.dev', 'backblaze', 'wasabi', 'ceph', 'digitalocean', 'moto', 'DiskStorage',
  'blob_id', 'blobId', 'tenant', 'meta.db',
];

export interface ApiUser {
  name: string;
  token: string;
  client: S3EdgeClient;
}

let counter = 0;

/** Creates a user (unless it exists) and an API key with `scopes` through the admin CLI. */
export async function apiUser(server: RunningServer, scopes: readonly string[], opts: { name?: string; recorder?: ResponseRecorder } = {}): Promise<ApiUser> {
  const name = opts.name ?? `user${process.pid}x${++counter}`;
  const users = (await server.cli(['users', 'list'])).json as { name: string }[] | undefined;
  if (!users?.some((u) => u.name === name)) await server.admin(['users', 'create', name]);
  const key = await server.admin(['api-keys', 'create', '--user', name, '--scopes', scopes.join(',')]);
  const token = key['token'] as string;
  return { name, token, client: apiClient(server, token, opts.recorder) };
}

export function apiClient(server: RunningServer, token: string, recorder?: ResponseRecorder): S3EdgeClient {
  return new S3EdgeClient({ baseUrl: server.url, apiKey: token, ...(recorder ? { onResponse: recorder.record } : {}) });
}

/** Rows of a read-only query on the server's meta.db (tests look at what was stored, and what was not). */
export function query<T>(server: RunningServer, sql: string, ...params: unknown[]): T[] {
  const db = openSqlite(join(server.dataDir, 'meta.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/**
 * Waits until `check` holds. Usage events of a download are written when the server sees the response
 * end, which can be just after the client did: a bound for that, not a timing assertion.
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, boundMs = 15_000): Promise<void> {
  const until = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`${what}: not within ${boundMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One sample of the Prometheus text at /api/v3/metrics (a token with metrics:read); NaN when absent. */
export async function metricValue(server: Pick<RunningServer, 'url'>, token: string, name: string): Promise<number> {
  const res = await fetch(`${server.url}/api/v3/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const line = (await res.text()).split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** The refusal of `p`: status, code and the message it must have. */
export async function refused(t: Test, p: Promise<unknown>, status: number, code: string, message: RegExp, what: string): Promise<void> {
  try {
    await p;
    t.fail(`${what}: expected ${status} ${code}, got success`);
  } catch (err) {
    if (!(err instanceof ApiClientError)) throw err;
    t.same([err.status, err.body.code, err.body.success], [status, code, false], `${what}: ${status} ${code}`);
    t.match(err.body.message, message, `${what}: says why`);
  }
}
