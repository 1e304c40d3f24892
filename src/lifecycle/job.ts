// The lifecycle job, one of the singleton jobs (jobs/singleton-jobs.ts: the single process, a cluster's
// supervisor, or the node leading the jobs on PostgreSQL). Every round (at start, then every minute at
// most) it walks each bucket with rules whose walk is due: never walked since its rules were put, left
// unfinished (a restart, a stop), or begun a whole interval ago (lifecycleIntervalSeconds, 1 hour by
// default: S3 itself applies rules once a day, and its days end at midnight UTC). A walk goes a batch of
// keys at a time (lifecycle/run.ts) and records after each where it stands (lifecycle_progress), so a
// restarted server resumes it where it was.
import type { Logger } from 'pino';
import { startPeriodic, type Periodic } from '../jobs/periodic.js';
import { bucketsWithRules, countsTotal, DONE, START, walkBucket, type LifecycleDeps, type WalkPosition } from './run.js';

/** How often a round looks for due walks, at most. */
const ROUND_MS = 60_000;

export interface LifecycleJobDeps extends LifecycleDeps {
  clock: () => Date;
  log: Pick<Logger, 'info' | 'warn'>;
}

export interface LifecycleJobOptions {
  intervalMs: number;
  batch?: number;
}

export class LifecycleJob {
  constructor(
    private readonly d: LifecycleJobDeps,
    private readonly opts: LifecycleJobOptions,
  ) {}

  /** Rounds now and every minute (or interval, when shorter). */
  start(): Periodic {
    return startPeriodic((stopped) => this.round(stopped), Math.min(ROUND_MS, this.opts.intervalMs), (err) =>
      this.d.log.warn({ err }, 'lifecycle: a round failed (tried again on the next)'),
    );
  }

  /** Walks every bucket whose walk is due, to its end or until stopped. */
  async round(stopped: () => boolean = () => false): Promise<void> {
    for await (const bucketId of bucketsWithRules(this.d.repos)) {
      if (stopped()) return;
      try {
        await this.walkIfDue(bucketId, stopped);
      } catch (err) {
        // A bucket deleted meanwhile, a busy database: the next round tries again; the others go on.
        this.d.log.warn({ err, bucketId }, 'lifecycle: a bucket walk failed (resumed on the next round)');
      }
    }
  }

  private async walkIfDue(bucketId: string, stopped: () => boolean): Promise<void> {
    const { repos, clock, log } = this.d;
    const now = clock().getTime();
    const progress = await repos.bucketLifecycle.progress(bucketId);
    const underWay = progress !== undefined && progress.phase !== 'done';
    if (progress && !underWay && now < progress.startedAt + this.opts.intervalMs) return;
    const [bucket, rules] = await Promise.all([repos.buckets.getById(bucketId), repos.bucketLifecycle.get(bucketId)]);
    if (!bucket || !rules) return;
    const startedAt = underWay ? progress.startedAt : now;
    const save = (at: WalkPosition): Promise<void> => repos.bucketLifecycle.saveProgress({ bucketId, startedAt, ...at });
    if (!underWay) await save(START);
    const { counts, done } = await walkBucket(this.d, bucket, rules, {
      now: () => clock().getTime(),
      ...(underWay ? { from: progress } : {}),
      ...(this.opts.batch === undefined ? {} : { batch: this.opts.batch }),
      onBatch: save,
      stop: stopped,
    });
    if (done) await save(DONE);
    if (countsTotal(counts) > 0 || !done) log.info({ bucket: bucket.name, ...counts, done }, 'lifecycle: rules applied');
  }
}
