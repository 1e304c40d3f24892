// Chaos: mixed S3, CDN and API traffic while a deployment is hurt, then the oracle "nothing lost,
// nothing extra" (docs/DEPLOYMENT.md, "What a fault costs"):
//  - every write acknowledged (an S3 PUT 200, an asset upload, a storage key) is there, byte for byte,
//    and every delete acknowledged (204) is gone;
//  - a write refused (503 SlowDown: the lock, the upstream) left nothing, and a delete refused left the
//    object whole; one whose outcome is unknown (503 ServiceUnavailable: PostgreSQL went away, maybe
//    after its commit; or no answer: its worker was killed) is either whole or absent, never partial;
//  - every answer was 200/204 or 503 (Retry-After), never a 500; no answer at all only for requests on
//    the killed worker, or reads of a body the upstream store cut;
//  - nothing is left behind: no half-written temp file and no unreferenced blob after the next start
//    (the data dir); no upstream blob beyond the rows' and no upstream multipart upload (an upstream store).
// Two deployments of two workers each: SQLite and the data dir (a worker killed, then meta.db locked
// longer than a write waits); PostgreSQL and an upstream S3 behind a fault proxy (a worker killed,
// PostgreSQL restarted, then the upstream answering 503s and 500s and cutting bodies).
import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClientError, type S3EdgeClient } from '../../src/client/index.js';
import { SQLITE_BUSY_WAIT_MS } from '../../src/context/metadata.js';
import { openDatabase } from '../../src/db/open.js';
import { BlobRefsRepo } from '../../src/db/repos/blob-refs.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import { openSqlite } from '../../src/db/sqlite/index.js';
import { S3Storage } from '../../src/storage/upstream/s3-storage.js';
import { apiUser, eventually } from '../helpers/api.js';
import { startFaultyUpstream } from '../helpers/fault-proxy.js';
import { listKeys } from '../helpers/moto.js';
import { startPostgres } from '../helpers/postgres.js';
import { childrenOf, pidsLogging } from '../helpers/processes.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { pgStore } from '../helpers/stores.js';
import { tempDir } from '../helpers/temp-data.js';

const BUCKET = 'chaos';
/** Sizes the writers cycle through: inline in the row, a blob, a bigger blob. */
const SIZES = [700, 96 * 1024, 320 * 1024];

/** How long a request may take before it counts as unanswered: far longer than any fault here lasts. */
const ANSWER_MS = 15_000;

/** When a fault was on: [from, to] in performance.now() ms. */
type Window = [number, number];

/** Everything the traffic was told, and what it saw. */
class Ledger {
  /** Acknowledged and not deleted: key -> bytes. */
  readonly objects = new Map<string, Buffer>();
  /** Answered with a refusal: must not exist. */
  readonly refusedObjects = new Set<string>();
  /** A PUT or DELETE whose answer never came: whole (these bytes) or absent. */
  readonly objectsInDoubt = new Map<string, Buffer>();
  /** Deleted with a 204: must not exist. */
  readonly deleted = new Set<string>();
  /** Assets acknowledged: id -> bytes; refused and unanswered ones by file name. */
  readonly assets = new Map<string, Buffer>();
  readonly refusedAssets = new Set<string>();
  readonly assetsInDoubt = new Set<string>();
  /** Storage keys by name. */
  readonly keys = new Set<string>();
  readonly refusedKeys = new Set<string>();
  readonly keysInDoubt = new Set<string>();
  /** "PUT 200" -> count; "PUT lost" for no answer. */
  readonly seen = new Map<string, number>();
  /** What breaks the contract: a 500, another status, a wrong body, an answer lost outside a fault that explains it. */
  readonly wrong: string[] = [];
  /** Windows in which an answer may be lost: a killed worker's requests; reads while the upstream cuts bodies. */
  readonly lossWindows: Window[] = [];
  readonly readLossWindows: Window[] = [];

  count(what: string): void {
    this.seen.set(what, (this.seen.get(what) ?? 0) + 1);
  }

  /** How many outcomes were counted under names starting with `prefix`. */
  total(prefix: string): number {
    let n = 0;
    for (const [what, count] of this.seen) if (what.startsWith(prefix)) n += count;
    return n;
  }

  /** Whether a request that ran over [from, to] and got no answer is explained by a fault. */
  lossExplained(from: number, to: number, read: boolean): boolean {
    const windows = read ? [...this.lossWindows, ...this.readLossWindows] : this.lossWindows;
    return windows.some(([a, b]) => from <= b && to >= a);
  }

  summary(): string {
    return JSON.stringify(Object.fromEntries([...this.seen].sort()));
  }
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex').slice(0, 16);

interface Deployment {
  server: RunningServer;
  s3: RawS3;
  api: S3EdgeClient;
  /** Public objects written before the faults: read all along through S3 and the CDN. */
  stable: Map<string, Buffer>;
}

async function prepare(server: RunningServer): Promise<Deployment> {
  const user = await apiUser(server, ['buckets:manage', 'assets:write', 'assets:read', 'storage-keys:manage']);
  await user.client.createBucket(BUCKET);
  await user.client.setBucketPublic(BUCKET, true);
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  const stable = new Map<string, Buffer>();
  for (const [i, size] of SIZES.entries()) {
    const body = randomBytes(size);
    const put = await s3.putObject(BUCKET, `stable-${i}`, body);
    if (put.status !== 200) throw new Error(`stable-${i}: ${put.status} ${put.text}`);
    stable.set(`stable-${i}`, body);
  }
  return { server, s3, api: user.client, stable };
}

/** Runs the traffic until `stop()` resolves; every outcome goes to the ledger. */
async function traffic(d: Deployment, ledger: Ledger, stop: Promise<void>): Promise<void> {
  let running = true;
  void stop.then(() => (running = false));
  const cdnHost = `cdn.localhost:${new URL(d.server.cdnUrl).port}`;

  /**
   * One request: its answer, or undefined (and the ledger told) when none came. A connection node:cluster
   * handed to the worker as it was killed waits for the client's timeout (docs/SCALE.md): this client's is
   * ANSWER_MS (the request itself ends when the server stops).
   */
  const attempt = async <T>(what: string, read: boolean, fn: () => Promise<T>): Promise<T | undefined> => {
    const from = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const request = fn();
      request.catch(() => undefined);
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_MS} ms`)), ANSWER_MS)));
      return await Promise.race([request, timeout]);
    } catch (err) {
      if (err instanceof ApiClientError) throw err;
      ledger.count(`${what} lost`);
      if (!ledger.lossExplained(from, performance.now(), read)) ledger.wrong.push(`${what}: no answer outside a fault that explains it (${(err as Error).message})`);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };
  /**
   * A status the contract allows for this request; anything else is wrong. A 503 always says when to
   * retry; SlowDown means nothing was done, ServiceUnavailable (the database went away, perhaps after
   * the commit) that the outcome is unknown, as S3's 5xx say.
   */
  const judge = (what: string, res: RawResponse, ok: number): 'ok' | 'refused' | 'unknown' | 'wrong' => {
    const code = /<Code>([^<]*)<\/Code>/.exec(res.text)?.[1];
    ledger.count(`${what} ${res.status}${code ? ` ${code}` : ''}`);
    if (res.status === ok) return 'ok';
    if (res.status === 503 && res.headers['retry-after'] !== undefined) return code === 'ServiceUnavailable' ? 'unknown' : 'refused';
    ledger.wrong.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
    return 'wrong';
  };
  /** The same of an API error: `metadata_unavailable` is the unknown outcome. */
  const judgeApi = (what: string, err: unknown): 'refused' | 'unknown' | 'wrong' => {
    if (!(err instanceof ApiClientError)) throw err;
    ledger.count(`${what} ${err.status} ${String(err.body.code)}`);
    if (err.status === 503) return err.body.code === 'metadata_unavailable' ? 'unknown' : 'refused';
    ledger.wrong.push(`${what}: ${err.message}`);
    return 'wrong';
  };

  const writer = async (w: number): Promise<void> => {
    const mine: string[] = [];
    for (let n = 0; running; n++) {
      if (n % 4 === 3 && mine.length > 0) {
        const key = mine.splice(n % mine.length, 1)[0] as string;
        const res = await attempt('DELETE', false, () => d.s3.deleteObject(BUCKET, key));
        const body = ledger.objects.get(key) as Buffer;
        const verdict = res === undefined ? 'unknown' : judge('DELETE', res, 204);
        if (verdict === 'unknown') {
          ledger.objects.delete(key);
          ledger.objectsInDoubt.set(key, body);
        } else if (verdict === 'ok') {
          ledger.objects.delete(key);
          ledger.deleted.add(key);
        } else mine.push(key);
        continue;
      }
      const key = `w${w}-${n}`;
      const body = randomBytes(SIZES[n % SIZES.length] as number);
      const res = await attempt('PUT', false, () => d.s3.putObject(BUCKET, key, body));
      const verdict = res === undefined ? 'unknown' : judge('PUT', res, 200);
      if (verdict === 'ok') {
        ledger.objects.set(key, body);
        mine.push(key);
      } else if (verdict === 'unknown') ledger.objectsInDoubt.set(key, body);
      else if (verdict === 'refused') ledger.refusedObjects.add(key);
    }
  };

  const reader = async (): Promise<void> => {
    for (let n = 0; running; n++) {
      const key = `stable-${n % SIZES.length}`;
      const expected = d.stable.get(key) as Buffer;
      const cdn = n % 2 === 0;
      const what = cdn ? 'CDN GET' : 'S3 GET';
      const res = await attempt(what, true, async () => {
        const r = await (cdn ? rawRequest({ url: d.server.cdnUrl }, { method: 'GET', target: `/b/${BUCKET}/${key}`, headers: [['Host', cdnHost]] }) : d.s3.getObject(BUCKET, key));
        // A body cut short of its Content-Length (the connection closed): what a client sees of an upstream
        // that cut the body after the head was sent. It must never look whole.
        const length = r.headers['content-length'];
        if (length !== undefined && r.body.length < Number(length)) throw new Error(`body cut at ${r.body.length} of ${length} bytes`);
        return r;
      });
      if (res !== undefined && judge(what, res, 200) === 'ok' && !res.body.equals(expected)) {
        ledger.wrong.push(`${what} ${key}: 200 with ${res.body.length} bytes (sha ${sha(res.body)}), not its ${expected.length} (sha ${sha(expected)})`);
      }
    }
  };

  const account = async (): Promise<void> => {
    for (let n = 0; running; n++) {
      const name = `chaos-${n}`;
      if (n % 2 === 0) {
        const file = randomBytes(2048 + n);
        try {
          const asset = await attempt('asset upload', false, () => d.api.upload({ file, fileName: `${name}.bin`, visibility: 'public' }));
          ledger.count(asset === undefined ? 'asset upload lost' : 'asset upload 201');
          if (asset === undefined) ledger.assetsInDoubt.add(`${name}.bin`);
          else ledger.assets.set(asset.id, file);
        } catch (err) {
          const verdict = judgeApi('asset upload', err);
          if (verdict === 'unknown') ledger.assetsInDoubt.add(`${name}.bin`);
          else if (verdict === 'refused') ledger.refusedAssets.add(`${name}.bin`);
        }
      } else {
        try {
          const created = await attempt('storage key', false, () => d.api.createAccessKey(BUCKET, { name, permission: 'read' }));
          ledger.count(created === undefined ? 'storage key lost' : 'storage key 201');
          if (created === undefined) ledger.keysInDoubt.add(name);
          else ledger.keys.add(name);
        } catch (err) {
          const verdict = judgeApi('storage key', err);
          if (verdict === 'unknown') ledger.keysInDoubt.add(name);
          else if (verdict === 'refused') ledger.refusedKeys.add(name);
        }
      }
    }
  };

  await Promise.all([writer(1), writer(2), writer(3), reader(), reader(), account()]);
}

/**
 * Kills one worker with SIGKILL; resolves once its replacement listens. Answers may be lost from the kill
 * until a moment after the supervisor saw it die: a connection handed to the dead worker before that is
 * lost with it (docs/SCALE.md).
 */
async function killWorker(server: RunningServer, ledger: Ledger): Promise<void> {
  const before = childrenOf(server.pid);
  const listening = pidsLogging(server.output(), 'cluster: a worker listens').length;
  const window: Window = [performance.now(), Infinity];
  ledger.lossWindows.push(window);
  process.kill(before[0] as number, 'SIGKILL');
  await eventually(() => pidsLogging(server.output(), 'cluster: a worker exited; starting another').length === 1, 'the supervisor saw the worker die', 30_000);
  window[1] = performance.now() + 500;
  await eventually(() => pidsLogging(server.output(), 'cluster: a worker listens').length > listening, 'a new worker listens', 30_000);
}

/** The oracle, through the deployment's own S3 and API: nothing lost, nothing extra. */
async function checkOracle(t: Test, d: Deployment, ledger: Ledger): Promise<void> {
  t.same(ledger.wrong, [], `no 500, no other status, no wrong body, no answer lost outside a fault (${ledger.summary()})`);
  t.ok(ledger.total('PUT 200') > 20, 'writes were acknowledged');

  const listed = new Set(await d.s3.listAllKeys(BUCKET));
  const missing = [...ledger.objects.keys()].filter((k) => !listed.has(k));
  t.same(missing, [], `every acknowledged object is listed (${ledger.objects.size})`);
  let differing = 0;
  for (const [key, body] of ledger.objects) {
    const got = await d.s3.getObject(BUCKET, key);
    if (got.status !== 200 || !got.body.equals(body)) differing++;
  }
  t.equal(differing, 0, 'every acknowledged object reads back byte for byte');
  const doubtful = [...ledger.objectsInDoubt].filter(([k]) => listed.has(k));
  let partial = 0;
  for (const [key, body] of doubtful) if (!(await d.s3.getObject(BUCKET, key)).body.equals(body)) partial++;
  t.equal(partial, 0, `an unanswered write is whole or absent (${doubtful.length} of ${ledger.objectsInDoubt.size} present, whole)`);
  const explained = new Set([...ledger.objects.keys(), ...ledger.objectsInDoubt.keys(), ...d.stable.keys()]);
  t.same([...listed].filter((k) => !explained.has(k)), [], `nothing else is listed: no refused write (${ledger.refusedObjects.size}), no deleted object (${ledger.deleted.size})`);

  const assets: { id: string; fileName: string }[] = [];
  for (let page = 1; ; page++) {
    const got = await d.api.listAssets({ page, limit: 100 });
    assets.push(...got.assets.map((a) => ({ id: a.id, fileName: a.fileName })));
    if (got.assets.length < 100) break;
  }
  const assetIds = new Set(assets.map((a) => a.id));
  t.same([...ledger.assets.keys()].filter((id) => !assetIds.has(id)), [], `every acknowledged asset is listed (${ledger.assets.size})`);
  t.same(assets.filter((a) => !ledger.assets.has(a.id) && !ledger.assetsInDoubt.has(a.fileName)).map((a) => a.fileName), [], `no other asset (${ledger.refusedAssets.size} refused)`);
  let assetsDiffering = 0;
  for (const [id, body] of ledger.assets) if (!(await d.api.download(id)).body.equals(body)) assetsDiffering++;
  t.equal(assetsDiffering, 0, 'every acknowledged asset downloads byte for byte');

  const keys = new Set((await d.api.listAccessKeys(BUCKET)).map((k) => k.name));
  t.same([...ledger.keys].filter((k) => !keys.has(k)), [], `every acknowledged storage key is listed (${ledger.keys.size})`);
  t.same([...keys].filter((k) => !ledger.keys.has(k) && !ledger.keysInDoubt.has(k)), [], `no other storage key (${ledger.refusedKeys.size} refused)`);
  t.notOk(d.server.output().includes('"level":60'), 'no fatal log line');
}

/** Runs the traffic while a worker is killed and then `faults` (the deployment's own) run their course. */
async function underTraffic(d: Deployment, ledger: Ledger, faults: () => Promise<void>): Promise<void> {
  let end!: () => void;
  const stop = new Promise<void>((resolve) => (end = resolve));
  const load = traffic(d, ledger, stop);
  try {
    await sleep(800);
    await killWorker(d.server, ledger);
    await sleep(500);
    await faults();
    await sleep(800);
  } finally {
    end();
    await load;
  }
}

t.test('SQLite and the data dir: a worker killed, meta.db locked past the write wait', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const server = await startServer({ dataDir, workers: 2 });
  t.teardown(() => server.stop());
  const d = await prepare(server);
  const ledger = new Ledger();

  await underTraffic(d, ledger, async () => {
    // Another process (a backup tool, sqlite3 by hand) holds the write lock longer than a write waits.
    const other = openSqlite(join(dataDir, 'meta.db'));
    other.exec('BEGIN EXCLUSIVE');
    await sleep(SQLITE_BUSY_WAIT_MS + 1000);
    other.exec('ROLLBACK');
    other.close();
  });
  // Which writes were in flight during the lock varies with the machine's speed: any of them refused is the lock seen.
  const refusedByLock = ledger.total('PUT 503 SlowDown') + ledger.total('DELETE 503 SlowDown') + ledger.total('asset upload 503 busy');
  t.ok(refusedByLock > 0, `writes met the lock as 503 SlowDown or busy (${ledger.summary()})`);
  await checkOracle(t, d, ledger);

  // The next start removes what the killed worker left half-written; no blob on disk is unreferenced.
  await server.stop();
  const again = await startServer({ dataDir });
  t.teardown(() => again.stop());
  await eventually(() => readdirSync(join(dataDir, 'storage', 'tmp')).length === 0, 'no temp file after the start', 15_000);
  const store = new SqliteStore(openDatabase(join(dataDir, 'meta.db')));
  t.teardown(() => store.close());
  const refs = new BlobRefsRepo(store);
  const unreferenced = async (): Promise<string[]> => {
    const referenced = await refs.referenced();
    const files: string[] = [];
    for (const sub of readdirSync(join(dataDir, 'storage', 'blobs'))) files.push(...readdirSync(join(dataDir, 'storage', 'blobs', sub)));
    return files.filter((f) => !referenced.has(f));
  };
  await eventually(async () => (await unreferenced()).length === 0, 'no unreferenced blob after the start', 15_000).catch(() => undefined);
  t.same(await unreferenced(), [], 'every blob file on disk is one a row names');
  const s3 = new RawS3({ url: again.url }, again.rootKey);
  let unreadable = 0;
  for (const [key, body] of ledger.objects) if (!(await s3.getObject(BUCKET, key)).body.equals(body)) unreadable++;
  t.equal(unreadable, 0, 'after the restart, every acknowledged object still reads back');
});

t.test('PostgreSQL and an upstream store: a worker killed, PostgreSQL restarted, the upstream failing', async (t) => {
  const postgres = await startPostgres(t);
  const url = await postgres.database('chaos');
  // The helper's server is tuned to be disposable (no synchronous commit) and restart() crashes it: here
  // a commit acknowledged must outlive the crash, as on any production server.
  await postgres.admin('ALTER DATABASE chaos SET synchronous_commit = on');
  const { moto, proxy, env } = await startFaultyUpstream(t, 'chaos/');
  const server = await startServer({
    upstream: false,
    metadata: url,
    workers: 2,
    // The collector's grace down to seconds: after the run, the upstream holds only the rows' blobs.
    env: { ...env, S3EDGE_INTEGRITY_GC_GRACE_SECONDS: '2', S3EDGE_INTEGRITY_GC_INTERVAL_SECONDS: '1' },
  });
  t.teardown(() => server.stop());
  const d = await prepare(server);
  const ledger = new Ledger();

  await underTraffic(d, ledger, async () => {
    // Every connection dropped at once, the server back after a second: a failover.
    await postgres.restart(1000);
    await sleep(1500);
    // The upstream store fails: bursts of 503 and 500, bodies cut in the middle.
    const cut: Window = [performance.now(), Infinity];
    ledger.readLossWindows.push(cut);
    const blobs = (p: string): boolean => p.includes('/chaos/blobs/');
    proxy.inject({ method: 'PUT', match: blobs, fault: { kind: 'status', status: 503 }, times: 12 });
    proxy.inject({ method: 'GET', match: blobs, fault: { kind: 'status', status: 500 }, times: 8 });
    proxy.inject({ method: 'GET', match: blobs, fault: { kind: 'reset-mid-body' }, times: 3 });
    await eventually(() => proxy.pending() === 0, 'the faults were met', 20_000);
    cut[1] = performance.now() + 500;
  });
  t.ok(ledger.total('PUT 503') > 0, `writes met the faults as 503 (${ledger.summary()})`);
  await checkOracle(t, d, ledger);

  const upstream = new S3Storage(moto.storageOptions('chaos/'));
  t.same(await upstream.listUploads(), [], 'no upstream multipart upload left');
  const store = await pgStore(postgres, t, url);
  const refs = new BlobRefsRepo(store);
  const unreferenced = async (): Promise<string[]> => {
    const referenced = await refs.referenced();
    return (await listKeys(moto)).filter((k) => k.startsWith('chaos/blobs/')).map((k) => k.slice(k.lastIndexOf('/') + 1)).filter((id) => !referenced.has(id));
  };
  await eventually(async () => (await unreferenced()).length === 0, 'the collector removed what no row names', 20_000).catch(() => undefined);
  t.same(await unreferenced(), [], 'every upstream blob is one a row names');
});
