// Batches hot-path metadata writes: every write queued during one turn of the event loop runs in a
// single transaction, each in its own savepoint (one write's failure, such as a lost conditional
// write, rolls back only that write). One BEGIN/COMMIT and one WAL append then serve many concurrent
// PUTs and DELETEs instead of one each; WalSync makes the batch durable.
import type { Db } from './open.js';

interface Job {
  run(): unknown;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export class CommitQueue {
  private jobs: Job[] = [];
  private scheduled = false;
  /** Transactions committed so far (tests and metrics: how many writes each one carried). */
  batches = 0;

  constructor(private readonly db: Db) {}

  /** Runs `write` (synchronous, may throw) in the next batch; settles with its result once committed. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.jobs.push({ run: write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const jobs = this.jobs;
    this.jobs = [];
    const outcomes: { ok: boolean; value: unknown }[] = [];
    try {
      this.db.transaction(() => {
        for (const job of jobs) {
          try {
            // A nested transaction is a savepoint: a throw undoes this job's changes only.
            outcomes.push({ ok: true, value: this.db.transaction(job.run)() });
          } catch (err) {
            outcomes.push({ ok: false, value: err });
          }
        }
      }).immediate();
      this.batches++;
    } catch (err) {
      for (const job of jobs) job.reject(err);
      return;
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i] as { ok: boolean; value: unknown };
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.value);
    });
  }
}
