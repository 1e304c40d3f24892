// Fixed-window rate-limit counters shared through the metadata store (migration 019), counted as
// @fastify/rate-limit's LocalStore counts in memory: a window starts at the first hit, and a hit after
// it has ended starts a new one. One statement per hit (an upsert), atomic on both stores.
//
// The windows count on one clock for every node: PostgreSQL's own (statement_timestamp(), read in the
// statement itself), not each node's wall clock. A node's clock stepped an hour back no longer keeps
// every window it hits open an hour longer, nor do nodes whose clocks disagree restart each other's
// windows. A window that began "later" than now (the database host's own clock stepped back) is over.
import type { SqlDialect, SqlExecutor } from '../store/types.js';

export interface WindowCount {
  /** Hits in the window, this one included. */
  count: number;
  /** Milliseconds until the window ends. */
  ttl: number;
}

/**
 * How far a window's start may lie ahead of a statement's `now` and still be a window, not a stepped-back
 * clock: concurrent hits on one counter wait for its row lock, so a statement that began (and read its
 * clock) first may update after one that began later and started the window; two SQLite processes read
 * their own clocks too. A step of the clock is minutes or hours; a lock wait is not.
 */
export const CLOCK_SKEW_MS = 60_000;

/** The window has ended, or began well after now (the clock was stepped back). */
const ENDED = (row: string): string => `(${row}.started_at + ${row}.window_ms <= @now OR ${row}.started_at > @now + ${CLOCK_SKEW_MS})`;

const HIT = `INSERT INTO rate_limit_counters (limiter, key, count, started_at, window_ms) VALUES (@limiter, @key, 1, @now, @window)
  ON CONFLICT (limiter, key) DO UPDATE SET
    count = CASE WHEN ${ENDED('rate_limit_counters')} THEN 1
                 ELSE rate_limit_counters.count + 1 END,
    started_at = CASE WHEN ${ENDED('rate_limit_counters')} THEN @now
                      WHEN @restart = 1 AND rate_limit_counters.count + 1 > @max THEN @now
                      ELSE rate_limit_counters.started_at END,
    window_ms = @window
  RETURNING count, started_at, @now AS now`;
const READ = `SELECT count, started_at, window_ms, @now AS now FROM rate_limit_counters WHERE limiter = @limiter AND key = @key`;
const PRUNE = `DELETE FROM rate_limit_counters WHERE ${ENDED('rate_limit_counters')}`;

/** PostgreSQL's clock in epoch ms, the same value everywhere in one statement. */
const PG_NOW = '(extract(epoch from statement_timestamp()) * 1000)::bigint';

/** The statements as `dialect` runs them: on PostgreSQL, `@now` is the database's clock, not a parameter. */
function statements(dialect: SqlDialect, databaseClock: boolean): { hit: string; read: string; prune: string } {
  const now = (sql: string): string => (databaseClock && dialect === 'postgres' ? sql.replaceAll('@now', PG_NOW) : sql);
  return { hit: now(HIT), read: now(READ), prune: now(PRUNE) };
}

export interface HitOptions {
  window: number;
  max: number;
  /** continueExceeding: a hit over the limit starts the window again. */
  restartWhenExceeded: boolean;
}

export class RateLimitsRepo {
  private readonly sql: { hit: string; read: string; prune: string };

  /**
   * `clock`: the windows' clock in epoch ms where the database's is not used (SQLite: one machine's
   * counters, in tests), or in place of it (a test's clock on either store).
   */
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock?: () => number,
  ) {
    this.sql = statements(db.dialect, clock === undefined);
  }

  async hit(limiter: string, key: string, options: HitOptions): Promise<WindowCount> {
    const row = await this.db.get<{ count: number | string; started_at: number | string; now: number | string }>(this.sql.hit, {
      limiter,
      key,
      now: this.now(),
      window: options.window,
      max: options.max,
      restart: options.restartWhenExceeded ? 1 : 0,
    });
    if (!row) throw new Error('rate limits: the upsert returned no row');
    // A window started by a statement that read a later clock: its ttl is at most the window.
    return { count: Number(row.count), ttl: Math.min(options.window, Number(row.started_at) + options.window - Number(row.now)) };
  }

  /** The window's count without a hit: 0 (ttl 0) when there is none or it has ended. */
  async read(limiter: string, key: string): Promise<WindowCount> {
    const row = await this.db.get<{ count: number | string; started_at: number | string; window_ms: number | string; now: number | string }>(this.sql.read, { limiter, key, now: this.now() });
    if (!row) return { count: 0, ttl: 0 };
    const [started, window, now] = [Number(row.started_at), Number(row.window_ms), Number(row.now)];
    if (started + window <= now || started > now + CLOCK_SKEW_MS) return { count: 0, ttl: 0 };
    return { count: Number(row.count), ttl: Math.min(window, started + window - now) };
  }

  /** Removes ended windows; the number removed. */
  async prune(): Promise<number> {
    return (await this.db.run(this.sql.prune, { now: this.now() })).changes;
  }

  /** The `now` parameter (unused by the PostgreSQL statements that read the database's clock). */
  private now(): number {
    return this.clock?.() ?? Date.now();
  }
}
