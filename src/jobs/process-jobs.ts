// The singleton jobs in the process that runs them (jobs/singleton-jobs.ts): at once on SQLite (one
// machine: this process is the one), or, of the nodes on one PostgreSQL, while this one holds the jobs'
// advisory lock (db/store/pg-leadership.ts). The single process and a cluster's supervisor both start them
// so (context.ts, jobs/jobs-context.ts).
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { PgLeadership } from '../db/store/pg-leadership.js';
import { SingletonJobs, type JobsDeps, type SingletonJobsOptions } from './singleton-jobs.js';

/** The background jobs' line: one process of a server logs it (tests look for it). */
export const JOBS_LINE = 'background jobs run in this process: multipart sweep, lifecycle rules, blob GC, scrub, request-log roll-ups, WAL checkpoints';

/** This process's singleton jobs and, on PostgreSQL, the leadership that runs them on one node. */
export class ProcessJobs {
  private jobs: SingletonJobs | undefined;
  private leadership: PgLeadership | undefined;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly postgres: boolean,
    private readonly role = 'supervisor',
  ) {}

  /** This node leads the jobs of the nodes on one PostgreSQL (false until it does; never asked on SQLite). */
  leads(): boolean {
    return this.leadership?.isLeader() === true;
  }

  /** Starts the jobs (once): at once on SQLite, on PostgreSQL whenever this node takes the lead. */
  async start(deps: JobsDeps, opts: SingletonJobsOptions = {}): Promise<void> {
    if (this.jobs) return;
    this.jobs = new SingletonJobs(deps, opts);
    this.leadership = await startJobs(this.jobs, this.config, this.log, this.postgres, this.role);
  }

  /** The leadership released, then the jobs stopped (they finish the run under way). */
  async close(): Promise<void> {
    await this.leadership?.close();
    await this.jobs?.stop();
  }
}

/**
 * Starts the singleton jobs in this process: at once on SQLite, or while this node holds the jobs'
 * advisory lock on PostgreSQL. The leadership, when there is one, is the caller's to close.
 */
async function startJobs(jobs: SingletonJobs, config: Config, log: Logger, postgres: boolean, role = 'supervisor'): Promise<PgLeadership | undefined> {
  if (!postgres) {
    log.info({ role }, JOBS_LINE);
    jobs.start();
    return undefined;
  }
  const { PgLeadership } = await import('../db/store/pg-leadership.js');
  const leadership = new PgLeadership(config.metadata, {
    onChange: (leader) => {
      if (leader) {
        log.info({ role }, 'this node runs the singleton jobs: multipart sweep, lifecycle rules, blob GC, scrub, blob removals, request-log roll-ups');
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
