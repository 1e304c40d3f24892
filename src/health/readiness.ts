// Whether this process can serve writes now (GET /readyz): the metadata database takes a write lock
// and the storage backend answers (the disk's folders are writable, the upstream bucket answers a
// HEAD). Probes run at most once a second whatever the polling rate, concurrent callers share one,
// and each has a deadline, so a load balancer's checks stay cheap and never pile up.
import type { Db } from '../db/open.js';
import { isSqliteBusy } from '../db/sqlite/result-codes.js';
import type { SqlExecutor } from '../db/store/types.js';
import type { StorageBackend } from '../storage/backend.js';

export type CheckState = 'ok' | 'failing';

export interface ReadinessReport {
  ready: boolean;
  checks: { metadata: CheckState; storage: CheckState };
}

export interface ReadinessDeps {
  /** Resolves when the metadata store takes writes now, throws why not: sqliteWritable or postgresWritable. */
  metadata: () => Promise<void>;
  storage: Pick<StorageBackend, 'probe'>;
  /** Milliseconds, for the one-second reuse of a report. */
  now: () => number;
  /** Called with what failed, for the operator's log (the report itself says only which check). */
  onFailure: (check: keyof ReadinessReport['checks'], err: unknown) => void;
  probeTimeoutMs?: number;
}

const REUSE_MS = 1000;
const PROBE_WRITE = "INSERT INTO settings (name, value) VALUES ('readiness.probe', '') ON CONFLICT (name) DO UPDATE SET value = excluded.value";
const DEFAULT_PROBE_TIMEOUT_MS = 2000;
/** How long the lock may stay with another connection that commits nothing before /readyz says so. */
const LOCKED_AFTER_MS = 1000;

export class Readiness {
  private last: { at: number; report: ReadinessReport } | undefined;
  private inFlight: Promise<ReadinessReport> | undefined;

  constructor(private readonly deps: ReadinessDeps) {}

  check(): Promise<ReadinessReport> {
    const now = this.deps.now();
    if (this.last && now - this.last.at < REUSE_MS) return Promise.resolve(this.last.report);
    this.inFlight ??= this.probe().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async probe(): Promise<ReadinessReport> {
    const metadata = await this.metadataWritable();
    const storage = await this.storageAnswers();
    const report: ReadinessReport = { ready: metadata === 'ok' && storage === 'ok', checks: { metadata, storage } };
    this.last = { at: this.deps.now(), report };
    return report;
  }

  private async metadataWritable(): Promise<CheckState> {
    try {
      await withDeadline(this.deps.metadata(), this.deps.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS);
      return 'ok';
    } catch (err) {
      this.deps.onFailure('metadata', err);
      return 'failing';
    }
  }

  private async storageAnswers(): Promise<CheckState> {
    try {
      await this.deps.storage.probe(AbortSignal.timeout(this.deps.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS));
      return 'ok';
    } catch (err) {
      this.deps.onFailure('storage', err);
      return 'failing';
    }
  }
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/**
 * SQLite: writes a row and rolls it back. A read-only database (file, mount or connection) refuses the
 * write itself, while the write lock alone would still be granted; nothing reaches the disk. Without
 * waiting on the event loop: busy_timeout is 0 for these statements (one synchronous turn, so nothing
 * else sees it). Another connection holding the lock (SQLITE_BUSY) is tried again on timers: the
 * database is writable, just in use, once the probe gets the lock, a transaction of this connection
 * is open, or anyone commits meanwhile (data_version, total_changes() move: other workers and the log
 * writer under load); held by someone who commits nothing for `lockedAfterMs` (a backup, `sqlite3` by
 * hand, an admin command's long transaction), it is reported as locked, and writes would be refused.
 */
export function sqliteWritable(db: Pick<Db, 'pragma' | 'exec' | 'inTransaction' | 'prepare'>, lockedAfterMs = LOCKED_AFTER_MS): () => Promise<void> {
  const totalChanges = db.prepare('SELECT total_changes()').pluck();
  const commits = () => `${db.pragma('data_version', { simple: true }) as number}/${totalChanges.get() as number}`;
  return async () => {
    const started = performance.now();
    const before = commits();
    for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
      if (db.inTransaction || probeWrite(db)) return;
      const waited = performance.now() - started;
      if (commits() !== before) return;
      if (waited >= lockedAfterMs) {
        throw new Error(`the metadata database has been locked by another connection for ${Math.round(waited)} ms with no commit (a backup, sqlite3 by hand, a long admin command?); writes wait up to their limit, then get 503`);
      }
      await new Promise<void>((resolve) => setTimeout(resolve, pause));
    }
  };
}

/** One try of the probe's write: true when it was made (and rolled back), false when another connection holds the lock. */
function probeWrite(db: Pick<Db, 'pragma' | 'exec' | 'inTransaction'>): boolean {
  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(PROBE_WRITE);
    } finally {
      // Some errors (a full disk) end the transaction themselves.
      if (db.inTransaction) db.exec('ROLLBACK');
    }
    return true;
  } catch (err) {
    if (isSqliteBusy(err)) return false;
    throw err;
  } finally {
    db.pragma(`busy_timeout = ${busyTimeout}`);
  }
}

/**
 * PostgreSQL: a connection of the pool answers and the server is not read-only (a standby promoted
 * late, or one a failover left in recovery, answers reads but refuses writes).
 */
export function postgresWritable(store: SqlExecutor): () => Promise<void> {
  return async () => {
    const row = await store.get<{ ro: string }>("SELECT current_setting('transaction_read_only') AS ro");
    if (row?.ro !== 'off') throw new Error('the PostgreSQL server is read-only (a standby?)');
  };
}
