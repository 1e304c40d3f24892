// The SQLite implementation of the metadata store, over the one synchronous connection of db/open.ts.
// Statements are prepared once per SQL text and run at once; the promise they return is already
// settled. A transaction body may await, and other requests' statements would then land inside it on
// the shared connection: while one is open they wait for it to end (the gate), as a second connection
// would wait for SQLite's write lock. Another connection's lock (another worker, the log writer thread,
// a backup, `sqlite3` by hand) is waited for without blocking the event loop when the store is given
// `busyWaitMs` (every serving process): the connection's busy_timeout is 0, and a statement or BEGIN
// refused with SQLITE_BUSY is tried again after a timer, other requests served meanwhile.
import type { Db } from '../open.js';
import { isSqliteBusy } from '../sqlite/result-codes.js';
import type { Statement } from '../sqlite/index.js';
import { MetadataCache, SQLITE_COHERENCE_LEASE_MS, changesCachedRows, leaseAfterCommit, type RowChangeListener, type RowChangeSource } from '../metadata-cache.js';
import { DatabaseBusyError, TransactionWaitError, type SqlExecutor, type SqlParams, type SqlRunResult, type SqlStore } from './types.js';

/** How long a statement waits for another request's transaction (SQLite's own busy timeout). */
const GATE_TIMEOUT_MS = 5000;
/** The longest pause between two tries of a statement refused with SQLITE_BUSY (the first is 1 ms, doubling). */
const BUSY_RETRY_MAX_MS = 50;

/**
 * One statement's wait for another connection's lock: a timer between tries, doubling from 1 ms to
 * BUSY_RETRY_MAX_MS; past `limitMs` it fails with DatabaseBusyError.
 */
class BusyWait {
  private readonly started = performance.now();
  private delay = 1;

  constructor(private readonly limitMs: number) {}

  async next(): Promise<void> {
    const waited = performance.now() - this.started;
    if (waited >= this.limitMs) throw new DatabaseBusyError(Math.round(waited));
    const pause = Math.min(this.delay, this.limitMs - waited);
    this.delay = Math.min(this.delay * 2, BUSY_RETRY_MAX_MS);
    await new Promise<void>((resolve) => setTimeout(resolve, pause));
  }
}

function bind(params: SqlParams | undefined): unknown[] {
  if (params === undefined) return [];
  return Array.isArray(params) ? params : [params];
}

class Statements {
  /** Each SQL text's prepared statement, and whether it may change cached rows (changesCachedRows). */
  private readonly cache = new Map<string, { stmt: Statement; changesCached: boolean }>();
  constructor(private readonly db: Db) {}

  private entry(sql: string): { stmt: Statement; changesCached: boolean } {
    let entry = this.cache.get(sql);
    if (entry === undefined) {
      entry = { stmt: this.db.prepare(sql), changesCached: changesCachedRows(sql) };
      this.cache.set(sql, entry);
    }
    return entry;
  }

  get(sql: string): Statement {
    return this.entry(sql).stmt;
  }

  changesCached(sql: string): boolean {
    return this.entry(sql).changesCached;
  }
}

/** Runs statements on the connection without the gate: the transaction's own `tx`. */
class SqliteTransaction implements SqlExecutor {
  readonly dialect = 'sqlite' as const;
  private savepoints = 0;
  /** A statement of this transaction (a savepoint's too, even one rolled back) may have changed cached rows. */
  changed = false;

  constructor(
    private readonly db: Db,
    private readonly statements: Statements,
  ) {}

  async get<R>(sql: string, params?: SqlParams): Promise<R | undefined> {
    const stmt = this.statements.get(sql);
    return stmt.get(...bind(params)) as R | undefined;
  }

  async all<R>(sql: string, params?: SqlParams): Promise<R[]> {
    const stmt = this.statements.get(sql);
    return stmt.all(...bind(params)) as R[];
  }

  async run(sql: string, params?: SqlParams): Promise<SqlRunResult> {
    const stmt = this.statements.get(sql);
    if (!this.changed && this.statements.changesCached(sql)) this.changed = true;
    return { changes: stmt.run(...bind(params)).changes };
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const name = `s${++this.savepoints}`;
    this.db.exec(`SAVEPOINT ${name}`);
    try {
      const value = await fn(this);
      this.db.exec(`RELEASE ${name}`);
      return value;
    } catch (err) {
      this.db.exec(`ROLLBACK TO ${name}`);
      this.db.exec(`RELEASE ${name}`);
      throw err;
    } finally {
      this.savepoints--;
    }
  }
}

/**
 * The row cache's change source on SQLite (db/metadata-cache.ts): the connection's data_version (moves
 * when another connection committed: another worker, an admin command, the request log's writer
 * thread) and total_changes() (moves with this connection's own writes). Either moved since the last
 * look: everything cached is dropped, and the answer is read again. Coarse (any commit anywhere empties
 * the cache) but exact: every process holds a write of cached rows for SQLITE_COHERENCE_LEASE_MS
 * after its COMMIT (SqliteStore's `coherenceLease`), and a cached answer is served to a request begun
 * at t only after a look begun after t - that lease, so a commit acknowledged before a request began
 * is seen by that request; a writer outside s3edge (sqlite3 by hand) holds no lease, and its change is
 * read within one. A look takes SQLite's WAL read lock (four fcntl calls: ~15 µs under load, more than
 * the row with a small object's bytes it saves): one per lease serves every request of it.
 */
export class SqliteRowChanges implements RowChangeSource {
  readonly live = true;
  private readonly dataVersion: Statement;
  private readonly totalChanges: Statement;
  private seenVersion = -1;
  private seenChanges = -1;
  /** performance.now() when the last look began (-Infinity: none yet). */
  private lookedAt = Number.NEGATIVE_INFINITY;
  private listener: RowChangeListener | undefined;

  constructor(
    db: Db,
    readonly leaseMs: number = SQLITE_COHERENCE_LEASE_MS,
  ) {
    // Two statements: pragma_data_version() as a table costs a statement's preparation on every read.
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.totalChanges = db.prepare('SELECT total_changes()').pluck();
  }

  subscribe(listener: RowChangeListener): void {
    this.listener = listener;
  }

  /**
   * True when a look begun after `time` found nothing new (or dropped what it found). Otherwise looks
   * now: false (and everything dropped) when anything was committed since the last look.
   */
  confirmedAfter(time: number): boolean {
    if (this.lookedAt > time) return true;
    const begun = performance.now();
    let version: number;
    let changes: number;
    try {
      version = this.dataVersion.get() as number;
      changes = this.totalChanges.get() as number;
    } catch (err) {
      // Not even a look now (another connection's lock, on a connection that never waits: SQLITE_BUSY):
      // nothing is confirmed, and the caller reads through the store, which waits on timers.
      if (!isSqliteBusy(err)) throw err;
      this.listener?.reset();
      return false;
    }
    this.lookedAt = begun;
    if (version === this.seenVersion && changes === this.seenChanges) return true;
    this.seenVersion = version;
    this.seenChanges = changes;
    this.listener?.reset();
    return false;
  }

  /** What confirmedAfter found is applied at once: nothing to wait for. */
  confirmAfter(): Promise<void> {
    return Promise.resolve();
  }
}

export interface SqliteStoreOptions {
  /** Bytes of the row cache (db/metadata-cache.ts); 0 or absent: none. */
  readCacheBytes?: number;
  /**
   * Hold each write of cached rows for SQLITE_COHERENCE_LEASE_MS after its COMMIT, so that the row
   * cache of every process on this file reads it at once (SqliteRowChanges). Default off (tests, tools
   * that share the file with no server); on in every process of a data directory whose servers cache
   * (db/data-dir.ts), a process without a cache of its own included.
   */
  coherenceLease?: boolean;
  /**
   * The lease's length: how long a write is held and a look serves. SQLITE_COHERENCE_LEASE_MS unless a
   * test needs a look that lasts (to show what the lease prevents without racing the clock).
   */
  leaseMs?: number;
  /**
   * How long a statement (or a transaction's BEGIN) waits for another connection's lock, on timers: the
   * connection's busy_timeout is set to 0, so SQLite never waits on the event loop. Past it the call
   * fails with DatabaseBusyError. Absent: SQLite's own busy_timeout waits, synchronously (the admin
   * CLI, tools and tests, which serve no one meanwhile).
   */
  busyWaitMs?: number;
}

export class SqliteStore implements SqlStore {
  readonly dialect = 'sqlite' as const;
  readonly readCache: MetadataCache | undefined;
  private readonly statements: Statements;
  private readonly dataVersion: Statement;
  private readonly lease: boolean;
  private readonly leaseMs: number;
  private readonly busyWaitMs: number | undefined;
  /** Settles when the open transaction ends; undefined while none is open. */
  private open: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    opts: SqliteStoreOptions = {},
  ) {
    this.statements = new Statements(db);
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.lease = opts.coherenceLease ?? false;
    this.leaseMs = opts.leaseMs ?? SQLITE_COHERENCE_LEASE_MS;
    this.busyWaitMs = opts.busyWaitMs;
    if (this.busyWaitMs !== undefined) db.pragma('busy_timeout = 0');
    const bytes = opts.readCacheBytes ?? 0;
    this.readCache = bytes > 0 ? new MetadataCache(new SqliteRowChanges(db, this.leaseMs), { maxBytes: bytes }) : undefined;
  }

  /** The connection itself, for what is SQLite's alone (checkpoints, PRAGMAs, the migrations). */
  get connection(): Db {
    return this.db;
  }

  async get<R>(sql: string, params?: SqlParams): Promise<R | undefined> {
    const stmt = this.statements.get(sql);
    return this.step(() => stmt.get(...bind(params)) as R | undefined);
  }

  async all<R>(sql: string, params?: SqlParams): Promise<R[]> {
    const stmt = this.statements.get(sql);
    return this.step(() => stmt.all(...bind(params)) as R[]);
  }

  async run(sql: string, params?: SqlParams): Promise<SqlRunResult> {
    const stmt = this.statements.get(sql);
    const result = await this.step(() => ({ changes: stmt.run(...bind(params)).changes }));
    if (this.lease && this.statements.changesCached(sql)) await leaseAfterCommit(this.leaseMs);
    return result;
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    // BEGIN runs in the turn that found the gate open, and the gate closes in that same turn: no other
    // request's statement can land inside the transaction. A BEGIN refused leaves the gate open.
    let end!: () => void;
    await this.step(() => {
      this.db.exec('BEGIN IMMEDIATE');
      this.open = new Promise<void>((resolve) => (end = resolve));
    });
    const tx = new SqliteTransaction(this.db, this.statements);
    let value: T;
    try {
      try {
        value = await fn(tx);
        this.db.exec('COMMIT');
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    } finally {
      this.open = undefined;
      end();
    }
    // After the gate opened: the lease holds the caller, not the connection.
    if (this.lease && tx.changed) await leaseAfterCommit(this.leaseMs);
    return value;
  }

  /**
   * Runs `fn` (one synchronous step on the connection) once no transaction of this store is open;
   * refused with SQLITE_BUSY, it is tried again on timers (busyWaitMs), the gate looked at again first.
   */
  private async step<T>(fn: () => T): Promise<T> {
    for (let wait: BusyWait | undefined; ; ) {
      while (this.open !== undefined) await this.waitForGate();
      try {
        return fn();
      } catch (err) {
        wait = this.busyWait(err, wait);
        await wait.next();
      }
    }
  }

  /** The wait for a statement SQLite refused with SQLITE_BUSY; anything else (or no busyWaitMs) is rethrown. */
  private busyWait(err: unknown, wait: BusyWait | undefined): BusyWait {
    if (this.busyWaitMs === undefined || !isSqliteBusy(err)) throw err;
    return wait ?? new BusyWait(this.busyWaitMs);
  }

  changeVersion(): number {
    return this.dataVersion.get() as number;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private async waitForGate(): Promise<void> {
    const started = performance.now();
    while (this.open !== undefined) {
      const open = this.open;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        open.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), GATE_TIMEOUT_MS - (performance.now() - started)))),
      ]);
      clearTimeout(timer);
      if (timedOut) throw new TransactionWaitError(Math.round(performance.now() - started));
    }
  }
}
