// The background jobs that must run in exactly one process: the single process, a cluster's supervisor,
// or, of the nodes on one PostgreSQL, the one leading the jobs (db/store/pg-leadership.ts), which starts
// them when it takes the lead and stops them when it loses it. The request log's roll-ups ask the same
// leadership themselves (analytics/request-log.ts).
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import type { MultipartRepo } from '../db/repos/multipart.js';
import type { Durability } from '../db/wal-sync.js';
import type { ObjectRemovalDeps } from '../buckets/object-removal.js';
import { LifecycleJob } from '../lifecycle/job.js';
import { startMultipartSweeper } from './multipart-sweep.js';
import { startPeriodic, type Periodic } from './periodic.js';
import { settleTransfer } from '../credits/transfer-settlement.js';
import { settleStorage } from '../credits/storage-settlement.js';
import { CreditsService } from '../credits/credits.js';
import { suspendsDelivery } from '../credits/delivery-suspension.js';
import type { StorageBackend } from '../storage/backend.js';
import { BlobCollector } from '../storage/blob-gc.js';
import type { BlobLeases } from '../storage/blob-leases.js';
import type { BlobRemovals } from '../storage/blob-removals.js';
import type { CorruptionReporter } from '../storage/corruption.js';
import { Scrubber } from '../storage/scrub.js';
import { NotificationDispatcher } from '../notifications/dispatcher.js';
import { CertificateIssuance } from '../certificates/issuance.js';

/**
 * What the jobs use: the single process's serving context or the supervisor's jobs context (either has
 * these). The blob collector and the scrub are set on it while the jobs run (their figures are scraped there).
 */
export interface JobsDeps {
  config: Config;
  log: Logger;
  clock: () => Date;
  repos: Repos;
  multipart: MultipartRepo;
  storage: StorageBackend;
  durability: Durability;
  leases: BlobLeases;
  corruption: CorruptionReporter;
  blobGc?: BlobCollector;
  scrubber?: Scrubber;
  /** The single process's (its serving context's): the lifecycle job's removals batch with the requests' writes and purge its CDN cache. */
  commits?: ObjectRemovalDeps['commits'];
  cachePurges?: ObjectRemovalDeps['cachePurges'];
  /** Seals the notification targets' secrets (deliveries are signed with them). */
  masterKey: Buffer;
  /** The outbox's delivery, set while the jobs run. */
  notifications?: NotificationDispatcher;
  /**
   * The single process's route table: reloaded at once after a certificate is stored (its own commit
   * does not move SQLite's data_version for itself). A supervisor's workers see the commit anyway.
   */
  edgeRoutes?: { invalidate(): Promise<void> };
}

/** How often finished hours of public traffic are looked for to charge (each is charged once). */
const TRANSFER_SETTLE_EVERY_MS = 10 * 60_000;
/** How often stored bytes are sampled (the first sample of an hour stays) and finished days charged. */
const STORAGE_SETTLE_EVERY_MS = 10 * 60_000;

/** How often due blob removals are done, and ended rate-limit windows pruned (nodes on PostgreSQL). */
const REMOVALS_EVERY_MS = 10_000;
const PRUNE_EVERY_MS = 60_000;

export interface SingletonJobsOptions {
  /** Nodes on PostgreSQL: freed blobs wait out a grace here, and this process removes them when due. */
  removals?: BlobRemovals;
  /**
   * A cluster's supervisor: how a blob a job frees is removed, once no worker streams it and after the
   * grace a worker's lease note may take to arrive (cluster/shared-leases.ts). Default: ctx.leases.
   */
  removeBlob?: (blobId: string) => Promise<void>;
}

export class SingletonJobs {
  private running = false;
  private sweeper: Periodic | undefined;
  private lifecycle: Periodic | undefined;
  private transfer: Periodic | undefined;
  private storageMeter: Periodic | undefined;
  private acme: Periodic | undefined;
  private timers: NodeJS.Timeout[] = [];
  /** The removal or prune round under way (one at a time). */
  private round: Promise<void> | undefined;

  constructor(
    private readonly ctx: JobsDeps,
    private readonly opts: SingletonJobsOptions = {},
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    const { ctx } = this;
    const { config, storage, repos, log, clock, leases } = ctx;
    // Abandoned multipart uploads: swept now and every hour.
    this.sweeper = startMultipartSweeper(ctx);
    // Buckets' lifecycle rules: each bucket walked once per interval (lifecycle/job.ts).
    if (config.lifecycleIntervalSeconds > 0) {
      const { removeBlob } = this.opts;
      const deps = removeBlob ? { ...ctx, leases: { removeWhenFree: removeBlob } } : ctx;
      this.lifecycle = new LifecycleJob(deps, { intervalMs: config.lifecycleIntervalSeconds * 1000 }).start();
    }
    // Transfer charged: each user's hours of public traffic, once over (credits/transfer-settlement.ts).
    // With atZero 'suspend-delivery', accounts at zero get the new month's free credits without waiting
    // for their owner's next credit activity: a suspended delivery resumes when the month turns.
    const monthly = suspendsDelivery(config.credits) ? new CreditsService(repos, config.credits, clock) : undefined;
    this.transfer = startPeriodic(
      async () => {
        await settleTransfer({ repos, config: config.credits, now: () => clock().getTime() });
        await monthly?.grantMonthlyToDepleted();
      },
      TRANSFER_SETTLE_EVERY_MS,
      (err) => log.warn({ err }, 'credits: settling transfer or the monthly grants of accounts at zero failed (tried again on the next round)'),
    );
    // Storage charged: stored bytes sampled each hour, each day charged once over (credits/storage-settlement.ts).
    this.storageMeter = startPeriodic(
      () => settleStorage({ repos, config: config.credits, now: () => clock().getTime() }),
      STORAGE_SETTLE_EVERY_MS,
      (err) => log.warn({ err }, 'credits: sampling or charging storage failed (tried again on the next round)'),
    );
    // Certificates of project hostnames (acme.directory): issued, retried and renewed (certificates/issuance.ts).
    if (config.acme.directory !== '') {
      const { edgeRoutes } = ctx;
      const issuance = new CertificateIssuance({
        config: config.acme,
        repos,
        masterKey: ctx.masterKey,
        now: () => clock().getTime(),
        log,
        ...(edgeRoutes ? { changed: () => edgeRoutes.invalidate() } : {}),
      });
      this.acme = startPeriodic(
        () => issuance.runDue(),
        config.acme.checkIntervalSeconds * 1000,
        (err) => log.warn({ err }, 'acme: a round of certificate issuance failed (tried again on the next round)'),
      );
    }
    // What a crash left on the local disk (docs/ARCHITECTURE.md "Garbage collection"): half-written
    // uploads and unreferenced blobs from before this process started, every worker being younger.
    const leftoversBefore = storage.sweepStaged ? performance.timeOrigin : undefined;
    if (leftoversBefore !== undefined) {
      storage.sweepStaged?.(leftoversBefore).then(
        (removed) => (removed > 0 ? log.info({ removed }, 'storage: removed uploads an earlier process left half-written') : undefined),
        (err: unknown) => log.warn({ err }, 'storage: could not remove the half-written uploads of an earlier process'),
      );
    }
    // Unreferenced blobs (left by a crash): collected now, in the background, and every interval.
    ctx.blobGc = new BlobCollector(
      { storage, blobRefs: repos.blobRefs, leases, clock, log, graceMs: config.integrity.gcGraceSeconds * 1000, ...(leftoversBefore !== undefined ? { leftoversBefore } : {}) },
      config.integrity.gcIntervalSeconds * 1000,
    );
    // Stored bytes re-hashed against their digests, at a bounded rate: now, then every interval.
    if (config.integrity.scrubBytesPerSecond > 0) {
      ctx.scrubber = new Scrubber(
        { storage, integrity: repos.integrity, blobRefs: repos.blobRefs, objects: repos.objects, corruption: ctx.corruption, log },
        config.integrity.scrubBytesPerSecond,
        config.integrity.scrubIntervalSeconds * 1000,
      );
    }
    // Bucket notifications: the outbox delivered to its webhooks, at least once.
    ctx.notifications = new NotificationDispatcher({ repos, masterKey: ctx.masterKey, config: config.notifications, log, now: () => clock().getTime() });
    ctx.notifications.start();
    const { removals } = this.opts;
    if (removals) {
      this.every(REMOVALS_EVERY_MS, async () => {
        await removals.removeDue();
      });
      this.every(PRUNE_EVERY_MS, async () => {
        await repos.rateLimits.prune();
      });
    }
  }

  /** Stops every job and waits for the runs under way. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    const { ctx } = this;
    await this.sweeper?.stop();
    this.sweeper = undefined;
    await this.lifecycle?.stop();
    this.lifecycle = undefined;
    await this.transfer?.stop();
    this.transfer = undefined;
    await this.storageMeter?.stop();
    this.storageMeter = undefined;
    await this.acme?.stop();
    this.acme = undefined;
    await ctx.blobGc?.stop();
    delete ctx.blobGc;
    await ctx.scrubber?.stop();
    delete ctx.scrubber;
    await ctx.notifications?.stop();
    delete ctx.notifications;
    await this.round;
  }

  private every(ms: number, run: () => Promise<void>): void {
    const timer = setInterval(() => {
      if (this.round || !this.running) return;
      this.round = run()
        .catch((err: unknown) => this.ctx.log.warn({ err }, 'a background job round failed (tried again on the next)'))
        .finally(() => (this.round = undefined));
    }, ms);
    timer.unref();
    this.timers.push(timer);
  }
}
