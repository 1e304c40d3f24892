// Fixed-window rate-limit counters shared through the metadata store (migration 019), counted as
// @fastify/rate-limit's LocalStore counts in memory: a window starts at the first hit, and a hit after
// it has ended starts a new one. One statement per hit (an upsert), atomic on both stores.
import type { SqlExecutor } from '../store/types.js';

export interface WindowCount {
  /** Hits in the window, this one included. */
  count: number;
  /** Milliseconds until the window ends. */
  ttl: number;
}

const HIT = `INSERT INTO rate_limit_counters (limiter, key, count, started_at, window_ms) VALUES (@limiter, @key, 1, @now, @window)
  ON CONFLICT (limiter, key) DO UPDATE SET
    count = CASE WHEN rate_limit_counters.started_at + rate_limit_counters.window_ms <= @now THEN 1
                 ELSE rate_limit_counters.count + 1 END,
    started_at = CASE WHEN rate_limit_counters.started_at + rate_limit_counters.window_ms <= @now THEN @now
                      WHEN @restart = 1 AND rate_limit_counters.count + 1 > @max THEN @now
                      ELSE rate_limit_counters.started_at END,
    window_ms = @window
  RETURNING count, started_at`;
const READ = 'SELECT count, started_at, window_ms FROM rate_limit_counters WHERE limiter = ? AND key = ?';
const PRUNE = 'DELETE FROM rate_limit_counters WHERE started_at + window_ms <= ?';

export interface HitOptions {
  window: number;
  max: number;
  /** continueExceeding: a hit over the limit starts the window again. */
  restartWhenExceeded: boolean;
}

export class RateLimitsRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  async hit(limiter: string, key: string, options: HitOptions): Promise<WindowCount> {
    const now = this.clock();
    const row = await this.db.get<{ count: number; started_at: number }>(HIT, {
      limiter,
      key,
      now,
      window: options.window,
      max: options.max,
      restart: options.restartWhenExceeded ? 1 : 0,
    });
    const started = row?.started_at ?? now;
    return { count: row?.count ?? 1, ttl: started + options.window - now };
  }

  /** The window's count without a hit: 0 (ttl 0) when there is none or it has ended. */
  async read(limiter: string, key: string): Promise<WindowCount> {
    const now = this.clock();
    const row = await this.db.get<{ count: number; started_at: number; window_ms: number }>(READ, [limiter, key]);
    if (!row || row.started_at + row.window_ms <= now) return { count: 0, ttl: 0 };
    return { count: row.count, ttl: row.started_at + row.window_ms - now };
  }

  /** Removes ended windows; the number removed. */
  async prune(): Promise<number> {
    return (await this.db.run(PRUNE, [this.clock()])).changes;
  }
}
