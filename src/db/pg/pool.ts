// The PostgreSQL connection pool (pg.Pool) for the metadata: bounded, every connection named 's3edge'
// (pg_stat_activity), every statement limited in time, and BIGINT read as a JavaScript number, as
// better-sqlite3 reads SQLite's INTEGER (the values are unix ms, sizes, counts: far below 2^53), and
// NUMERIC (sums) as a number.
import pg from 'pg';

export interface PgPoolOptions {
  /** Connections at most; default 10. */
  max?: number;
  /** Waiting for a connection (a new one, or a free one of the pool) longer than this fails; default 10 s. */
  connectionTimeoutMs?: number;
  /** A statement running longer than this is cancelled by the server; default 30 s (0: no limit). */
  statementTimeoutMs?: number;
  /** Idle connections are closed after this; default 30 s. */
  idleTimeoutMs?: number;
  /** An idle connection failed (the server restarted, the network dropped it): the pool drops it; this hears of it. */
  onIdleError?: (err: Error) => void;
}

const INT8_OID = 20;
/** sum() and avg() of BIGINT are NUMERIC: read as numbers too (SQLite's sum of INTEGERs is an INTEGER). */
const NUMERIC_OID = 1700;

const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (oid === INT8_OID || oid === NUMERIC_OID) && format !== 'binary' ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export function createPgPool(url: string, options: PgPoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
    idleTimeoutMillis: options.idleTimeoutMs ?? 30_000,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    application_name: 's3edge',
    types,
  });
  // Without a listener an idle connection's error would end the process.
  pool.on('error', (err) => options.onIdleError?.(err));
  return pool;
}

/** A client of the pool checked out for several statements, and how to give it back. */
export interface CheckedOut {
  client: pg.PoolClient;
  /** Back to the pool; a client whose connection broke while out (or `err` given) is closed instead. */
  release(err?: Error): void;
}

/**
 * Checks a client out for several statements (a transaction). pg-pool takes its own 'error' listener
 * off a client while it is out, and a connection that breaks between two statements (a failover, a
 * server restarted) would then emit an 'error' nobody hears, which ends the process: this listens
 * while the client is out, and the next statement fails instead (answered 503: s3-errors.ts).
 */
export async function checkOut(pool: pg.Pool): Promise<CheckedOut> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error): void => {
    broken ??= err;
  };
  client.on('error', onError);
  return {
    client,
    release: (err) => {
      client.removeListener('error', onError);
      client.release(err ?? broken);
    },
  };
}
