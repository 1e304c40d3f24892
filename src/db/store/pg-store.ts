// The PostgreSQL implementation of the metadata store: a bounded pool (db/pg/pool.ts), every statement
// prepared once per connection (a named statement per SQL text), transactions SERIALIZABLE on one
// pooled client so that a body reads and writes as if alone, as SQLite's IMMEDIATE transactions do,
// re-run when PostgreSQL aborts one for a conflict. changeVersion() moves on NOTIFY s3edge_changes
// (change-feed.ts).
import type pg from 'pg';
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
}

class PgStatements {
  private readonly cache = new Map<string, Prepared>();

  get(sql: string): Prepared {
    let stmt = this.cache.get(sql);
    if (stmt === undefined) {
      stmt = { ...translatePlaceholders(sql), name: `s3e_${this.cache.size + 1}` };
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
    return this.target().query<R & pg.QueryResultRow>({ name: stmt.name, text: stmt.text, values: bindValues(stmt, params) });
  }
}

class PgTransaction extends PgExecutor {
  private savepoints = 0;

  constructor(
    private readonly client: pg.PoolClient,
    statements: PgStatements,
  ) {
    super(statements);
  }

  protected target(): Queryable {
    return this.client;
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
}

export class PgStore extends PgExecutor implements SqlStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgStoreOptions = {},
  ) {
    super(new PgStatements());
  }

  protected target(): Queryable {
    return this.pool;
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
        const value = await fn(new PgTransaction(client, this.statements));
        await client.query('COMMIT');
        return value;
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
        client.release(broken);
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
