// What a cluster's supervisor holds (docs/SCALE.md): it serves no request, so it builds no edge cache, no
// HTTP surface, no hashing threads, no GeoIP database and no origin pools. It holds the data directory
// (opened before any worker: prepareDataDir), the singleton jobs (multipart sweep, blob GC, scrub, the
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
import { DURABLE_AT_COMMIT, WalSync } from '../db/wal-sync.js';
import { Checkpointer, CHECKPOINTS_AFTER_START_MS } from '../db/checkpointer.js';
import { createStorage } from '../storage/select.js';
import { BlobLeases } from '../storage/blob-leases.js';
import { BlobRemovals } from '../storage/blob-removals.js';
import { CorruptionReporter } from '../storage/corruption.js';
import { RequestLog } from '../analytics/request-log.js';
import { EdgeMonitor } from '../edge/detect/monitor.js';
import { ClientLimiter } from '../edge/limiter.js';
import type { PgLeadership } from '../db/store/pg-leadership.js';
import type { PreparedDataDir } from '../data-dir-setup.js';
import { SingletonJobs, type JobsDeps } from './singleton-jobs.js';

/** The background jobs' line: one process of a server logs it (tests look for it). */
export const JOBS_LINE = 'background jobs run in this process: multipart sweep, blob GC, scrub, request-log roll-ups, WAL checkpoints';

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
  startJobs(): Promise<void>;
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
  let walSync: WalSync | undefined;
  let checkpointer: Checkpointer | undefined;
  let leadership: PgLeadership | undefined;
  let jobs: SingletonJobs | undefined;
  try {
    if (db) {
      const dbFile = join(config.dataDir, META_DB_FILE);
      db.pragma('synchronous = NORMAL');
      walSync = new WalSync(`${dbFile}-wal`);
      // The checkpoints of every process's commits: the workers never checkpoint (wal_autocheckpoint = 0).
      checkpointer = new Checkpointer(db, dbFile, log, undefined, CHECKPOINTS_AFTER_START_MS);
    }
    await storage.init();
    const removals = postgres ? new BlobRemovals({ repo: repos.blobRemovals, storage, now: () => clock().getTime(), log }) : undefined;
    const leases = removals
      ? new BlobLeases(removals.schedule)
      : new BlobLeases((blobId) => storage.remove(blobId).catch((err: unknown) => log.warn({ err, blobId }, 'blob removal failed')));
    const durability = walSync ?? DURABLE_AT_COMMIT;
    const checkpoints = checkpointer;
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
      edgeMonitor: new EdgeMonitor({ repo: repos.anomalies, config: config.edge.anomalies, now: () => clock().getTime(), elapsed: opts.monotonic ?? (() => performance.now()), log }),
      edgeLimiter: new ClientLimiter({ maxClients: config.edge.maxTrackedClients, ...(opts.monotonic ? { now: opts.monotonic } : {}) }),
      async startJobs() {
        if (jobs) return;
        ctx.requestLog = new RequestLog(store, config.cdn.log, {
          maintain: postgres ? () => leadership?.isLeader() === true : true,
          clock: () => clock().getTime(),
          log,
        });
        jobs = new SingletonJobs(ctx, { ...(removals ? { removals } : {}) });
        leadership = await startJobs(jobs, config, log, postgres);
      },
      async close() {
        ctx.edgeMonitor.close();
        await leadership?.close();
        await jobs?.stop();
        await ctx.requestLog?.close();
        await storage.close();
        await durability.close();
        await checkpoints?.close();
        await store.close();
      },
    };
    return ctx;
  } catch (err) {
    await storage.close().catch(() => undefined);
    await walSync?.close();
    await checkpointer?.close();
    await store.close();
    throw err;
  }
}

/**
 * Starts the singleton jobs in this process: at once on SQLite (one machine: this process is the one),
 * or, of the nodes on one PostgreSQL, while this one holds the jobs' advisory lock. The leadership, when
 * there is one, is the caller's to close.
 */
export async function startJobs(jobs: SingletonJobs, config: Config, log: Logger, postgres: boolean, role = 'supervisor'): Promise<PgLeadership | undefined> {
  if (!postgres) {
    log.info({ role }, JOBS_LINE);
    jobs.start();
    return undefined;
  }
  const { PgLeadership } = await import('../db/store/pg-leadership.js');
  const leadership = new PgLeadership(config.metadata, {
    onChange: (leader) => {
      if (leader) {
        log.info({ role }, 'this node runs the singleton jobs: multipart sweep, blob GC, scrub, blob removals, request-log roll-ups');
        jobs.start();
      } else {
        log.warn({ role }, 'this node no longer runs the singleton jobs (its PostgreSQL session ended; another node takes them)');
        void jobs.stop();
      }
    },
    onError: (err) => log.warn({ err }, 'jobs leadership: the PostgreSQL connection failed (tried again)'),
  });
  try {
    await leadership.start();
  } catch (err) {
    await leadership.close();
    throw err;
  }
  return leadership;
}
