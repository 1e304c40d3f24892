// Batches hot-path metadata writes: every write queued during one turn of the event loop runs in a
// single store transaction, each in its own nested transaction (a savepoint) one after another, so one
// write's failure, such as a lost conditional write, rolls back only that write. One BEGIN/COMMIT (and
// on SQLite one WAL append, made durable by WalSync) then serves many concurrent PUTs and DELETEs.
import type { Repos } from './repos/index.js';

/** PostgreSQL's serialization_failure and deadlock_detected: the whole batch is re-run (pg-store.ts). */
const RETRYABLE = new Set(['40001', '40P01']);

interface Job {
  run(r: Repos): Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

export class CommitQueue {
  private jobs: Job[] = [];
  private scheduled = false;
  /** Transactions committed so far (tests and metrics: how many writes each one carried). */
  batches = 0;

  constructor(private readonly repos: Pick<Repos, 'transact'>) {}

  /**
   * Runs `write` in the next batch, with repositories bound to the batch's transaction (it must touch
   * the database through them only, and nothing else: on PostgreSQL a batch may be re-run); settles
   * with its result once committed.
   */
  run<T>(write: (r: Repos) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.jobs.push({ run: write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const jobs = this.jobs;
    this.jobs = [];
    let outcomes: Outcome[] = [];
    try {
      await this.repos.transact(async (r) => {
        outcomes = [];
        for (const job of jobs) {
          try {
            outcomes.push({ ok: true, value: await r.transact((tx) => job.run(tx)) });
          } catch (err) {
            // A lost serialization conflict dooms the whole transaction: let the store run it again.
            const code = (err as { code?: unknown } | null)?.code;
            if (typeof code === 'string' && RETRYABLE.has(code)) throw err;
            outcomes.push({ ok: false, err });
          }
        }
      });
      this.batches++;
    } catch (err) {
      for (const job of jobs) job.reject(err);
      return;
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i] as Outcome;
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.err);
    });
  }
}
