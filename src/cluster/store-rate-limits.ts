// Rate limits exact across nodes (docs/SCALE.md): when the metadata is PostgreSQL, the management API's
// per-route and sign-in limits count in it (db/repos/rate-limits.ts, one upsert per limited request), so
// every node and every worker of every node shares one counter. When the database does not answer the
// limits count in this process alone (looser while it lasts, never unlimited), logged once per outage.
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Logger } from 'pino';
import type { RateLimitsRepo } from '../db/repos/rate-limits.js';
import { LocalStore, limiterName, type CounterCallback, type StoreParams } from './shared-limits.js';

export function storeRateLimitStore(repo: RateLimitsRepo, log: Pick<Logger, 'warn' | 'info'>): FastifyRateLimitStoreCtor {
  let down = false;
  const failed = (err: unknown): void => {
    if (down) return;
    down = true;
    log.warn({ err }, 'rate limits: the metadata database did not answer; API rate limits count in this process alone');
  };
  const answered = (): void => {
    if (!down) return;
    down = false;
    log.info('rate limits: the metadata database answers again; API rate limits count across nodes');
  };

  class DatabaseStore implements FastifyRateLimitStore {
    private readonly continueExceeding: boolean;
    private unnamed = 0;
    private local: LocalStore | undefined;

    constructor(
      private readonly params: StoreParams,
      private readonly name = 'global',
      private readonly root?: DatabaseStore,
    ) {
      this.continueExceeding = params.continueExceeding === true;
    }

    incr(key: string, cb: CounterCallback, timeWindow: number, max: number): void {
      repo.hit(this.name, key, { window: timeWindow, max, restartWhenExceeded: this.continueExceeding }).then(
        (w) => {
          answered();
          cb(null, { current: w.count, ttl: w.ttl });
        },
        (err: unknown) => {
          failed(err);
          this.fallback().incr(key, cb, timeWindow, max);
        },
      );
    }

    read(key: string, cb: CounterCallback, timeWindow: number, max: number): void {
      repo.read(this.name, key).then(
        (w) => {
          answered();
          cb(null, { current: w.count, ttl: w.ttl });
        },
        (err: unknown) => {
          failed(err);
          this.fallback().read(key, cb, timeWindow, max);
        },
      );
    }

    child(routeOptions: object): FastifyRateLimitStore {
      const params = routeOptions as StoreParams;
      const root = this.root ?? this;
      return new DatabaseStore(params, limiterName(params, () => ++root.unnamed), root);
    }

    private fallback(): LocalStore {
      const cache = typeof this.params.cache === 'number' ? this.params.cache : undefined;
      return (this.local ??= new LocalStore(this.continueExceeding, this.params.exponentialBackoff === true, cache));
    }
  }

  return DatabaseStore as unknown as FastifyRateLimitStoreCtor;
}
