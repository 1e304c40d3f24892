// The PostgreSQL implementation of the metadata store: a bounded pool (db/pg/pool.ts), every statement
// prepared once per connection (a named statement per SQL text), transactions SERIALIZABLE on one
// pooled client so that a body reads and writes as if alone, as SQLite's IMMEDIATE transactions do,
// re-run when PostgreSQL aborts one for a conflict. changeVersion() moves on NOTIFY s3edge_changes
// (pg-change-feed.ts). A commit that changed rows the nodes cache (objects, buckets: migration 005)
// returns only after `afterCachedWrite` (the row cache's lease, db/metadata-cache.ts), so that a write
// acknowledged here is read at once on every node (docs/SCALE.md, "Coherence").
import type pg from 'pg';
import { checkOut } from '../pg/pool.js';
import { changesCachedRows, type MetadataCache } from '../metadata-cache.js';
import { bindValues, translatePlaceholders, type PgStatement } from './pg-sql.js';
import type { SqlExecutor, SqlParams, SqlRunResult, SqlStore } from './types.js';

/** serialization_failure and deadlock_detected: the transaction lost a conflict and may be run again. */
const RETRYABLE = new Set(['40001', '40P01']);
/**
 * Transactions on one hot row (a user's credit account under a burst of uploads through several nodes)
 * conflict often: enough attempts, with a growing jittered wait, that a burst settles.
 */
const MAX_ATTEMPTS = 30;

interface Prepared extends PgStatement {
  name: string;
  /** The statement may change a row of a table the nodes cache (migration 005's triggers). */
  changesCached: boolean;
}

class PgStatements {
  private readonly cache = new Map<string, Prepared>();

  get(sql: string): Prepared {
    let stmt = this.cache.get(sql);
    if (stmt === undefined) {
      stmt = { ...translatePlaceholders(sql), name: `s3e_${this.cache.size + 1}`, changesCached: changesCachedRows(sql) };
      this.cache.set(sql, stmt);
    }
    return stmt;
  }
}

type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

abstract class PgExecutor implements SqlExecutor {
  readonly dialect = 'postgres' as const;

  constructor(protected readonly statements: PgStatements) {}

  protected abstract target(): Queryable;

  /** A statement that may have changed cached rows has run (on the store: committed). */
  protected abstract changedCached(): Promise<void> | void;

  async get<R>(sql: string, params?: SqlParams): Promise<R | undefined> {
    return (await this.query<R>(sql, params)).rows[0];
  }

  async all<R>(sql: string, params?: SqlParams): Promise<R[]> {
    return (await this.query<R>(sql, params)).rows;
  }

  async run(sql: string, params?: SqlParams): Promise<SqlRunResult> {
    return { changes: (await this.query(sql, params)).rowCount ?? 0 };
  }

  abstract transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;

  private query<R>(sql: string, params: SqlParams | undefined): Promise<pg.QueryResult<R & pg.QueryResultRow>> {
    const stmt = this.statements.get(sql);
    const result = this.target().query<R & pg.QueryResultRow>({ name: stmt.name, text: stmt.text, values: bindValues(stmt, params) });
    return stmt.changesCached ? this.afterChange(result) : result;
  }

  private async afterChange<T>(result: Promise<T>): Promise<T> {
    const value = await result;
    await this.changedCached();
    return value;
  }
}

class PgTransaction extends PgExecutor {
  private savepoints = 0;
  /** A statement of this transaction (a savepoint's too, even one rolled back) may have changed cached rows. */
  changed = false;

  constructor(
    private readonly client: pg.PoolClient,
    statements: PgStatements,
  ) {
    super(statements);
  }

  protected target(): Queryable {
    return this.client;
  }

  protected changedCached(): void {
    this.changed = true;
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const name = `s${++this.savepoints}`;
    await this.client.query(`SAVEPOINT ${name}`);
    try {
      const value = await fn(this);
      await this.client.query(`RELEASE SAVEPOINT ${name}`);
      return value;
    } catch (err) {
      await this.client.query(`ROLLBACK TO SAVEPOINT ${name}`);
      await this.client.query(`RELEASE SAVEPOINT ${name}`);
      throw err;
    } finally {
      this.savepoints--;
    }
  }
}

export interface PgStoreOptions {
  /** What changeVersion() reads; the store's own counter when absent (it then never moves). */
  changeVersion?: () => number;
  /** Called after the pool has ended (the change feed's own connection, for one). */
  onClose?: () => Promise<void>;
  /**
   * Awaited after a commit that may have changed cached rows, before its caller goes on (the row
   * cache's lease: db/metadata-cache.ts).
   */
  afterCachedWrite?: () => Promise<void>;
  /** The node's cache of hot rows (db/metadata-cache.ts), read by the repositories outside transactions. */
  readCache?: MetadataCache;
}

export class PgStore extends PgExecutor implements SqlStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgStoreOptions = {},
  ) {
    super(new PgStatements());
    this.readCache = options.readCache;
  }

  readonly readCache: MetadataCache | undefined;

  protected target(): Queryable {
    return this.pool;
  }

  protected changedCached(): Promise<void> | void {
    return this.options.afterCachedWrite?.();
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const { value, changed } = await this.attempts(fn);
    // After the client is back in the pool: the lease holds the caller, not a connection.
    if (changed) await this.changedCached();
    return value;
  }

  private async attempts<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<{ value: T; changed: boolean }> {
    for (let attempt = 1; ; attempt++) {
      const { client, release } = await checkOut(this.pool);
      let broken: Error | undefined;
      try {
        await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
        const tx = new PgTransaction(client, this.statements);
        const value = await fn(tx);
        await client.query('COMMIT');
        return { value, changed: tx.changed };
      } catch (err) {
        await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
        const code = (err as { code?: unknown } | null)?.code;
        if (typeof code === 'string' && RETRYABLE.has(code) && attempt < MAX_ATTEMPTS) {
          await backoff(attempt);
          continue;
        }
        throw err;
      } finally {
        // A client whose ROLLBACK failed is in an unknown state: the pool closes it instead of reusing it.
        release(broken);
      }
    }
  }

  changeVersion(): number {
    return this.options.changeVersion?.() ?? 0;
  }

  async close(): Promise<void> {
    await this.pool.end();
    await this.options.onClose?.();
  }
}

/** A few ms, growing and jittered, so that two transactions that collided do not collide again. */
function backoff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(250, 5 * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, ms));
}
