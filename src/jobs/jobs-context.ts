// What a cluster's supervisor holds (docs/SCALE.md): it serves no request, so it builds no edge cache, no
// HTTP surface, no hashing threads, no GeoIP database and no origin pools. It holds the data directory
// (opened before any worker: prepareDataDir), the singleton jobs (multipart sweep, lifecycle rules, blob GC, scrub, the
// request log's roll-ups and retention, WAL checkpoints; on PostgreSQL, under the jobs' leadership), and
// the state it serves to every worker (src/cluster/shared-state.ts): the edge limiter, the anomaly
// monitor, the blob leases. The single process builds the same jobs over its serving context
// (context.ts); SingletonJobs takes only what both have.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Db } from '../db/open.js';
import { MultipartRepo } from '../db/repos/multipart.js';
import { META_DB_FILE } from '../db/data-dir.js';
import type { RootCredentials } from '../auth/root.js';
import { DURABLE_AT_COMMIT } from '../db/wal-sync.js';
import { walMode } from '../db/wal-mode.js';
import { createStorage } from '../storage/select.js';
import { BlobLeases } from '../storage/blob-leases.js';
import { BlobRemovals } from '../storage/blob-removals.js';
import { CorruptionReporter } from '../storage/corruption.js';
import { RequestLog } from '../analytics/request-log.js';
import { EdgeMonitor } from '../proxy/detect/monitor.js';
import { ClientLimiter } from '../proxy/limiter.js';
import type { PreparedDataDir } from '../data-dir-setup.js';
import { Closers } from '../context/closers.js';
import type { JobsDeps, SingletonJobsOptions } from './singleton-jobs.js';
import { ProcessJobs } from './process-jobs.js';

/** What the singleton jobs need (JobsDeps), and what the supervisor serves its workers besides. */
export interface JobsContext extends JobsDeps {
  db?: Db;
  root: RootCredentials;
  /** The request log's maintenance only (roll-ups and retention; the workers write the records), from startJobs(). */
  requestLog?: RequestLog;
  /** The one anomaly monitor of the cluster (the workers forward their observations). */
  edgeMonitor: EdgeMonitor;
  /** The one edge limiter of the cluster (the workers ask it). */
  edgeLimiter: ClientLimiter;
  /**
   * Starts the singleton jobs and the request log's maintenance. The supervisor calls it once its workers
   * listen: their start does not share the cores with a blob collection or a scrub of a large store.
   */
  startJobs(opts?: Pick<SingletonJobsOptions, 'removeBlob'>): Promise<void>;
  close(): Promise<void>;
}

export interface JobsContextOptions {
  log: Logger;
  clock?: () => Date;
  /** A monotonic clock in ms for elapsed time (the edge limiter the workers ask, the anomaly monitor's step check); default performance.now. */
  monotonic?: () => number;
}

/**
 * Builds the supervisor's context on a prepared data directory (whose store it then owns and closes).
 * The jobs start with startJobs().
 */
export async function createJobsContext(config: Config, dir: PreparedDataDir, opts: JobsContextOptions): Promise<JobsContext> {
  const { log } = opts;
  const clock = opts.clock ?? (() => new Date());
  const { db, store, repos } = dir;
  const postgres = db === undefined;
  // A supervisor buffers no upload: createStorage's budget is the workers'.
  const storage = await createStorage(config);
  const closers = new Closers();
  closers.push(() => store.close());
  closers.push(() => storage.close());
  try {
    // The checkpoints of every process's commits: the workers never checkpoint (wal_autocheckpoint = 0).
    const durability = db ? walMode(db, join(config.dataDir, META_DB_FILE), { log, checkpoints: true, closers }) : DURABLE_AT_COMMIT;
    await storage.init();
    const removals = postgres ? new BlobRemovals({ repo: repos.blobRemovals, storage, now: () => clock().getTime(), log }) : undefined;
    const leases = removals
      ? new BlobLeases(removals.schedule)
      : new BlobLeases((blobId) => storage.remove(blobId).catch((err: unknown) => log.warn({ err, blobId }, 'blob removal failed')));
    const edgeMonitor = new EdgeMonitor({ repo: repos.anomalies, config: config.edge.anomalies, now: () => clock().getTime(), elapsed: opts.monotonic ?? (() => performance.now()), log });
    closers.push(() => edgeMonitor.close());
    // Of the nodes on one PostgreSQL, the one holding the jobs' advisory lock runs them (and the log's roll-ups).
    const jobs = new ProcessJobs(config, log, postgres);
    const ctx: JobsContext = {
      config,
      log,
      clock,
      ...(db ? { db } : {}),
      repos,
      multipart: new MultipartRepo(repos.store),
      storage,
      durability,
      leases,
      corruption: new CorruptionReporter(repos.integrity, log, clock),
      root: dir.root,
      masterKey: dir.masterKey,
      edgeMonitor,
      edgeLimiter: new ClientLimiter({ maxClients: config.edge.maxTrackedClients, ...(opts.monotonic ? { now: opts.monotonic } : {}) }),
      async startJobs(opts = {}) {
        if (ctx.requestLog) return;
        const requestLog = new RequestLog(store, config.cdn.log, {
          maintain: postgres ? () => jobs.leads() : true,
          clock: () => clock().getTime(),
          log,
        });
        ctx.requestLog = requestLog;
        closers.push(() => requestLog.close());
        closers.push(() => jobs.close());
        await jobs.start(ctx, { ...opts, ...(removals ? { removals } : {}) });
      },
      close: () => closers.close(),
    };
    return ctx;
  } catch (err) {
    await closers.close().catch(() => undefined);
    throw err;
  }
}
