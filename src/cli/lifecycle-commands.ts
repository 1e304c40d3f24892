// Admin commands of bucket lifecycle rules (issue 35 item 2): carry them out now, as the lifecycle job
// does once per interval (src/lifecycle/job.ts), for every bucket that has rules or the one named, and
// print what went. `--now` judges the rules as of another time (a test's or an operator's "what if":
// the objects' own dates are never changed); the removals themselves are the job's, through the same
// code (src/lifecycle/run.ts), so a running server's readers and caches see them as they see a client's.
import { AdminError, type Command } from './command.js';
import { requireBucket } from './lookups.js';

/** The flags these commands take, with the placeholder their synopsis shows. */
export const LIFECYCLE_FLAGS: Readonly<Record<string, { type: 'string'; value: string }>> = {
  now: { type: 'string', value: 'ISO-8601-TIME' },
};

export const LIFECYCLE_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  lifecycle: { section: 'Buckets', summary: "carry out buckets' lifecycle rules now (the server's job does it every hour)" },
};

function parseNow(value: string | undefined): number {
  if (value === undefined) return Date.now();
  const ms = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new AdminError('InvalidArgument', `--now must be an ISO 8601 date or time (2027-01-31, 2027-01-31T12:00:00Z), not '${value}'`);
  return ms;
}

export const LIFECYCLE_COMMANDS: Record<string, Record<string, Command>> = {
  lifecycle: {
    run: {
      args: [],
      flags: ['bucket', 'now'],
      summary:
        'expire what the lifecycle rules make due now (every bucket with rules, or --bucket NAME): current versions, noncurrent versions, ' +
        'lone delete markers, incomplete multipart uploads; prints the counts per bucket. --now judges the rules as of that time instead (testing, what-if)',
      example: 's3edge lifecycle run --bucket logs',
      run: async ({ config, repos, db, flags }) => {
        const now = parseNow(flags.now);
        const bucket = flags.bucket === undefined ? undefined : await requireBucket(repos, flags.bucket);
        if (bucket && !(await repos.bucketLifecycle.get(bucket.id))) {
          throw new AdminError('NoSuchLifecycleConfiguration', `bucket '${bucket.name}' has no lifecycle rules`);
        }
        // Removing bytes loads the storage backend (as `scrub run` does); the other commands start without it.
        const [{ createStorage }, { BlobLeases }, { BlobRemovals }, { MultipartRepo }, { DURABLE_AT_COMMIT }, { runLifecycle }] = await Promise.all([
          import('../storage/select.js'),
          import('../storage/blob-leases.js'),
          import('../storage/blob-removals.js'),
          import('../db/repos/multipart.js'),
          import('../db/wal-sync.js'),
          import('../lifecycle/run.js'),
        ]);
        // No init(): it would clear a running server's uploads in flight.
        const storage = await createStorage(config);
        try {
          const quiet = { warn: () => undefined };
          // This process streams nothing; on PostgreSQL other nodes may, so a freed blob waits out their grace.
          const removals = db ? undefined : new BlobRemovals({ repo: repos.blobRemovals, storage, now: () => Date.now(), log: quiet });
          const leases = new BlobLeases(removals ? removals.schedule : (blobId) => storage.remove(blobId).catch(() => undefined));
          return await runLifecycle(
            // The admin CLI's SQLite commits are durable when they return (synchronous FULL), as PostgreSQL's.
            { clock: () => new Date(), repos, multipart: new MultipartRepo(repos.store), storage, durability: DURABLE_AT_COMMIT, leases, log: quiet },
            { now, ...(bucket ? { bucket } : {}) },
          );
        } finally {
          await storage.close();
        }
      },
    },
  },
};
