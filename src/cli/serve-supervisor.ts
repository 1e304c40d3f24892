// The cluster's supervisor (docs/SCALE.md): forks one worker per slot at once (they load their code while
// it opens the data directory, and open it only once it has: migrations, the root user, the TLD seed),
// runs the background jobs exactly once (src/jobs/jobs-context.ts: no serving context), starts another
// worker when one dies, prints the one start message, and drains them all on a stop signal (a second
// signal kills them). It serves no request itself.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { PreparedDataDir } from '../data-dir-setup.js';
import type { JobsContext } from '../jobs/jobs-context.js';
import { announce, describeStartupFailure, startupFailure, untilStopSignal, type Listening, type StartupFailure } from './serve-lifecycle.js';
import { CLUSTER_METRICS, DATA_DIR_READY, STOP_NOTE, SupervisorChannel, WORKER_METRICS, WORKER_NOTES } from '../cluster/ipc.js';

/** A worker that dies sooner than this after its start is restarted later each time (up to MAX_BACKOFF_MS). */
const STABLE_MS = 10_000;
const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 10_000;

interface Slot {
  worker: Worker;
  startedAt: number;
  backoffMs: number;
}

/** The workers by slot: forked, watched, restarted, stopped. */
class Workers {
  private readonly slots = new Map<number, Slot>();
  private stopping = false;
  private restartTimers = new Set<NodeJS.Timeout>();
  private readonly exited = new Set<() => void>();

  constructor(
    private readonly count: number,
    private readonly channel: SupervisorChannel,
    /** The supervisor's logger: made once the workers are forked (its code loads meanwhile), undefined before. */
    private readonly log: () => Logger | undefined,
  ) {}

  /**
   * Forks every slot; resolves with where they listen once all have, or rejects with the first failure.
   * As many start at once as there are cores but one (the supervisor starts beside them), the others as
   * soon as the first listens: starting more processes than cores at once only makes each start slower,
   * the first to serve included.
   */
  start(cores = availableParallelism()): Promise<Listening> {
    return new Promise<Listening>((resolve, reject) => {
      const listening = new Map<number, Listening>();
      let settled = false;
      const atOnce = Math.min(this.count, Math.max(1, cores - 1));
      let next = atOnce + 1;
      this.channel.onNote(WORKER_NOTES.listening, (body, from) => {
        this.log()?.info({ slot: from.slot }, 'cluster: a worker listens');
        while (next <= this.count && !this.stopping) this.fork(next++, MIN_BACKOFF_MS);
        if (settled) return;
        listening.set(from.slot, body as Listening);
        if (listening.size === this.count) {
          settled = true;
          resolve(listening.get(1) as Listening);
        }
      });
      this.channel.onNote(WORKER_NOTES.failed, (body) => {
        if (settled) return;
        settled = true;
        reject(body as StartupFailure);
      });
      this.onFirstExitBeforeListening = (slot, code) => {
        if (settled || listening.has(slot)) return false;
        settled = true;
        reject({ message: `worker ${slot} exited (code ${code}) before it listened`, exitCode: 1 } satisfies StartupFailure);
        return true;
      };
      for (let slot = 1; slot <= atOnce; slot++) this.fork(slot, MIN_BACKOFF_MS);
    });
  }

  /** During start: a worker that exits before listening fails the start instead of being restarted. */
  private onFirstExitBeforeListening: (slot: number, code: number | null) => boolean = () => false;

  private fork(slot: number, backoffMs: number): void {
    const worker = cluster.fork({ S3EDGE_WORKER_SLOT: String(slot), S3EDGE_WORKER_COUNT: String(this.count) });
    this.channel.attach(worker, slot);
    const entry: Slot = { worker, startedAt: performance.now(), backoffMs };
    this.slots.set(slot, entry);
    worker.once('exit', (code, signal) => {
      // node:cluster forgets a dead worker's listeners only once its IPC channel is seen closed too, and
      // until then may hand it new connections, which then hang: close the channel now, in this tick.
      if (worker.isConnected()) worker.process.disconnect?.();
      if (this.slots.get(slot) === entry) this.slots.delete(slot);
      for (const fn of this.exited) fn();
      if (this.stopping || this.onFirstExitBeforeListening(slot, code)) return;
      const lived = performance.now() - entry.startedAt;
      const delay = lived >= STABLE_MS ? MIN_BACKOFF_MS : Math.min(entry.backoffMs * 2, MAX_BACKOFF_MS);
      this.log()?.warn({ slot, workerPid: worker.process.pid, code, signal, restartInMs: delay }, 'cluster: a worker exited; starting another');
      const timer = setTimeout(() => {
        this.restartTimers.delete(timer);
        if (!this.stopping) this.fork(slot, delay);
      }, delay);
      this.restartTimers.add(timer);
    });
  }

  /** Tells every worker to drain; resolves once all have exited. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const timer of this.restartTimers) clearTimeout(timer);
    this.channel.broadcast(STOP_NOTE, null);
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.slots.size > 0) return;
        this.exited.delete(check);
        resolve();
      };
      this.exited.add(check);
      check();
    });
  }

  /** Kills whatever still runs (the forced stop). */
  kill(): void {
    this.stopping = true;
    for (const { worker } of this.slots.values()) worker.process.kill('SIGKILL');
  }
}

export async function runSupervisor(config: Config, count: number, json: boolean): Promise<number> {
  const channel = new SupervisorChannel();
  // The workers are forked first and wait for this before they open the data directory: their start
  // (loading their code) runs beside the supervisor's own (loading its code, opening the data directory),
  // and no two processes migrate.
  let opened!: (ready: boolean) => void;
  const dataDirReady = new Promise<boolean>((resolve) => (opened = resolve));
  channel.handle(DATA_DIR_READY, async () => {
    if (!(await dataDirReady)) throw new Error('the supervisor could not open the data directory');
    return null;
  });
  let jobs: JobsContext | undefined;
  channel.handle(CLUSTER_METRICS, async () => {
    const { clusterMetrics, jobMetrics } = await import('../metrics/cluster-metrics.js');
    return clusterMetrics((await channel.requestAll(WORKER_METRICS, null)) as Parameters<typeof clusterMetrics>[0], jobs ? await jobMetrics(jobs) : []);
  });
  let logger: Logger | undefined;
  const workers = new Workers(count, channel, () => logger);
  // Heard from before the first fork: a stop while the cluster starts (a worker may answer /healthz
  // before the others are forked) takes effect once every worker listens, never kills the supervisor
  // mid-start (a worker still being forked then died on its IPC channel).
  const stopped = untilStopSignal(() => workers.kill());
  const started = workers.start();
  // Settled now so that a failure while the data directory opens is not an unhandled rejection.
  started.catch(() => undefined);
  const [{ createLogger }, { prepareDataDir }, { createJobsContext }, { serveSharedState }, { thisServer }] = await Promise.all([
    import('../log-format.js'),
    import('../data-dir-setup.js'),
    import('../jobs/jobs-context.js'),
    import('../cluster/shared-state.js'),
    import('../server-record.js'),
  ]);
  const log = (logger = createLogger(config));

  let dir: PreparedDataDir | undefined;
  try {
    dir = await prepareDataDir(config, {
      // The supervisor serves no GET: no row cache (db/metadata-cache.ts); its writes still wait out the lease.
      postgres: { onError: (err) => log.warn({ err }, 'metadata: a PostgreSQL connection failed (the pool connects again)'), readCacheBytes: 0 },
    });
    opened(true);
    jobs = await createJobsContext(config, dir, { log });
  } catch (err) {
    opened(false);
    if (!jobs) await dir?.store.close().catch(() => undefined);
    workers.kill();
    await workers.stop();
    const failure = describeStartupFailure(err);
    if (!failure) throw err;
    process.stderr.write(`s3edge: ${failure.message}\n`);
    return failure.exitCode;
  }
  const ctx = jobs;
  // Rate-limit counters, the edge limiter and monitor, blob removal: one for every worker.
  const shared = serveSharedState(channel, ctx);
  let at: Listening;
  try {
    at = await started;
  } catch (failure) {
    workers.kill();
    await workers.stop();
    shared.close();
    await ctx.close();
    const f = failure as StartupFailure;
    process.stderr.write(`s3edge: ${f.message}\n`);
    return f.exitCode;
  }
  try {
    // Once the workers listen: a blob collection or a scrub of a large store does not slow their start.
    // The jobs' freed blobs (the lifecycle job's) wait for the workers' leases, as the workers' own do.
    await ctx.startJobs({ removeBlob: shared.removeBlob });
  } catch (err) {
    workers.kill();
    await workers.stop();
    shared.close();
    await ctx.close();
    return startupFailure(err);
  }
  // Admin commands (other processes) print these, and tell from the supervisor's pid whether the server
  // runs: recorded before the start message, as by one process.
  const record = thisServer({ s3: at.s3, s3Tls: at.s3Tls, cdn: at.cdnBase, region: config.region }, ctx.clock());
  await ctx.repos.settings.setServerEndpoints(record);
  announce(json, config, ctx.root, count, at);
  await stopped;
  ctx.log.info({ workers: count }, 'stopping: every worker drains');
  await workers.stop();
  shared.close();
  try {
    await ctx.repos.settings.markServerStopped(record, ctx.clock().getTime());
  } catch (err) {
    ctx.log.warn({ err }, 'could not record the stop in the settings table');
  }
  await ctx.close();
  return 0;
}
