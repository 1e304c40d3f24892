// Rate limits exact across a cluster's workers (docs/SCALE.md). The counters live in the supervisor: the
// management API's per-route limits and the dashboard's sign-in limits (@fastify/rate-limit's own
// LocalStore, one per limiter as the plugin makes them), and the edge proxy's token buckets and bans (one
// ClientLimiter). A worker asks over the cluster channel. Without an answer (ChannelError, or a failed
// handler), the edge proxy serves (its limit protects an origin; refusing everything would be the outage)
// and the API limits count in the worker alone (at most N times looser while it lasts, never unlimited:
// the sign-in limits stay a brake on guessing); either is logged once per outage.
import { createRequire } from 'node:module';
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Logger } from 'pino';
import type { EdgeLimiter, LimitResult } from '../proxy/limiter.js';
import type { RateLimitRule } from '../db/repos/hostname-model.js';
import type { WorkerChannel } from './ipc.js';

export const LIMIT_REQUESTS = { apiIncr: 'limits.api.incr', apiRead: 'limits.api.read', edgeTake: 'limits.edge.take' } as const;

/** A limiter's count for a key in its window, as @fastify/rate-limit's stores answer. */
export interface Counter {
  current: number;
  ttl: number;
}

export type CounterCallback = (error: Error | null, result?: Counter) => void;

/** @fastify/rate-limit's store/LocalStore.js (it ships no types for it). */
export interface LocalStore {
  incr(key: string, cb: CounterCallback, timeWindow: number, max: number): void;
  read(key: string, cb: CounterCallback, timeWindow: number, max: number): void;
}
type LocalStoreCtor = new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => LocalStore;

// The plugin's own fixed-window store: the supervisor counts with it, so a cluster counts as one process does
// (and a process alone while the supervisor or the database does not answer).
export const LocalStore = createRequire(import.meta.url)('@fastify/rate-limit/store/LocalStore.js') as LocalStoreCtor;

/** One count asked of the supervisor: which limiter (its options) and which key. */
interface ApiCount {
  limiter: string;
  continueExceeding: boolean;
  exponentialBackoff: boolean;
  cache: number | null;
  key: string;
  timeWindow: number;
  max: number;
}

/** The options the plugin hands a store (its own, a route's or a createRateLimit's). */
export interface StoreParams {
  continueExceeding?: unknown;
  exponentialBackoff?: unknown;
  cache?: unknown;
  routeInfo?: { method?: unknown; url?: unknown };
}

/**
 * A child store's name, the same in every process: the route's method and URL, else (createRateLimit)
 * the order it was made in, every process running the same code.
 */
export function limiterName(params: StoreParams, nextUnnamed: () => number): string {
  const info = params.routeInfo;
  const method = Array.isArray(info?.method) ? info.method.join(',') : info?.method;
  return typeof info?.url === 'string' ? `${String(method)} ${info.url}` : `limiter ${nextUnnamed()}`;
}

/** Logs the first failure of an outage and the first answer after it, nothing in between. */
class OutageLog {
  private down = false;

  constructor(
    private readonly log: Pick<Logger, 'warn' | 'info'>,
    /** What this process does meanwhile. */
    private readonly meanwhile: string,
    /** What it does again once answered. */
    private readonly again: string,
  ) {}

  failed(err: unknown): void {
    if (this.down) return;
    this.down = true;
    this.log.warn({ err }, `cluster: the supervisor did not answer; ${this.meanwhile}`);
  }

  answered(): void {
    if (!this.down) return;
    this.down = false;
    this.log.info(`cluster: the supervisor answers again; ${this.again}`);
  }
}

/**
 * A worker's @fastify/rate-limit store (the plugin's `store` option): counts in the supervisor. The plugin
 * makes one child store per limited route and per createRateLimit; each is named the same in every worker
 * (the route's method and URL, else the order it was made in: every worker runs the same code), so the
 * supervisor keeps one counter set per limiter, as LocalStore's children do in one process.
 */
export function remoteRateLimitStore(channel: WorkerChannel, log: Pick<Logger, 'warn' | 'info'>): FastifyRateLimitStoreCtor {
  const outage = new OutageLog(log, 'API rate limits count in this worker alone', 'API rate limits count across workers');

  class RemoteStore implements FastifyRateLimitStore {
    private readonly continueExceeding: boolean;
    private readonly exponentialBackoff: boolean;
    private readonly cache: number | null;
    /** Children made without a route (createRateLimit), numbered in order. */
    private unnamed = 0;
    private local: LocalStore | undefined;

    constructor(
      params: StoreParams,
      private readonly name = 'global',
      private readonly root?: RemoteStore,
    ) {
      this.continueExceeding = params.continueExceeding === true;
      this.exponentialBackoff = params.exponentialBackoff === true;
      this.cache = typeof params.cache === 'number' ? params.cache : null;
    }

    incr(key: string, cb: CounterCallback, timeWindow: number, max: number): void {
      this.ask(LIMIT_REQUESTS.apiIncr, key, cb, timeWindow, max);
    }

    read(key: string, cb: CounterCallback, timeWindow: number, max: number): void {
      this.ask(LIMIT_REQUESTS.apiRead, key, cb, timeWindow, max);
    }

    child(routeOptions: object): FastifyRateLimitStore {
      const params = routeOptions as StoreParams;
      const root = this.root ?? this;
      return new RemoteStore(params, limiterName(params, () => ++root.unnamed), root);
    }

    private ask(type: string, key: string, cb: CounterCallback, timeWindow: number, max: number): void {
      const body: ApiCount = {
        limiter: this.name,
        continueExceeding: this.continueExceeding,
        exponentialBackoff: this.exponentialBackoff,
        cache: this.cache,
        key,
        timeWindow,
        max,
      };
      channel.request<Counter>(type, body).then(
        (counter) => {
          outage.answered();
          cb(null, counter);
        },
        (err: unknown) => {
          outage.failed(err);
          this.local ??= new LocalStore(this.continueExceeding, this.exponentialBackoff, this.cache ?? undefined);
          if (type === LIMIT_REQUESTS.apiRead) this.local.read(key, cb, timeWindow, max);
          else this.local.incr(key, cb, timeWindow, max);
        },
      );
    }
  }

  return RemoteStore as unknown as FastifyRateLimitStoreCtor;
}

/** Limiters the supervisor keeps counters for (every limited route and sign-in limit: a few dozen). */
const MAX_LIMITERS = 10_000;

function isFiniteNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** The supervisor's side of the API limits: one LocalStore per limiter, made on its first count. */
export class ApiLimitCounters {
  private readonly stores = new Map<string, LocalStore>();

  /** Counts (incr) or reads one key of one limiter; rejects a malformed request. */
  count(op: 'incr' | 'read', body: unknown): Promise<Counter> {
    const c = body as Partial<ApiCount> | null;
    if (
      typeof c !== 'object' || c === null ||
      typeof c.limiter !== 'string' || typeof c.key !== 'string' ||
      !isFiniteNumber(c.timeWindow) || !isFiniteNumber(c.max)
    ) {
      return Promise.reject(new Error('malformed rate-limit count'));
    }
    const store = this.storeOf(c.limiter, c.continueExceeding === true, c.exponentialBackoff === true, isFiniteNumber(c.cache) ? c.cache : undefined);
    return new Promise<Counter>((resolve, reject) => {
      const cb: CounterCallback = (err, res) => (err || !res ? reject(err ?? new Error('no count')) : resolve({ current: res.current, ttl: res.ttl }));
      if (op === 'read') store.read(c.key as string, cb, c.timeWindow as number, c.max as number);
      else store.incr(c.key as string, cb, c.timeWindow as number, c.max as number);
    });
  }

  /** Limiters counted so far. */
  get size(): number {
    return this.stores.size;
  }

  private storeOf(limiter: string, continueExceeding: boolean, exponentialBackoff: boolean, cache: number | undefined): LocalStore {
    let store = this.stores.get(limiter);
    if (!store) {
      if (this.stores.size >= MAX_LIMITERS) throw new Error('too many rate limiters');
      store = new LocalStore(continueExceeding, exponentialBackoff, cache);
      this.stores.set(limiter, store);
    }
    return store;
  }
}

const SERVE: LimitResult = { ok: true };

/** One take of the edge limiter, as a worker asks it. */
interface EdgeTake {
  scope: string;
  ip: string;
  rule: RateLimitRule;
}

/** A worker's edge limiter: the supervisor's ClientLimiter answers; without an answer, the request is served. */
export class RemoteEdgeLimiter implements EdgeLimiter {
  private readonly outage: OutageLog;

  constructor(
    private readonly channel: WorkerChannel,
    log: Pick<Logger, 'warn' | 'info'>,
  ) {
    this.outage = new OutageLog(log, 'the edge rate-limit rule lets requests through', 'the edge rate-limit rule applies');
  }

  /** The supervisor's limiter reads its own clock: the processes' monotonic clocks have other origins. */
  take(scope: string, ip: string, rule: RateLimitRule): Promise<LimitResult> {
    const body: EdgeTake = { scope, ip, rule };
    return this.channel.request<LimitResult>(LIMIT_REQUESTS.edgeTake, body).then(
      (r) => {
        this.outage.answered();
        return r;
      },
      (err: unknown) => {
        this.outage.failed(err);
        return SERVE;
      },
    );
  }
}

const RULE_NUMBERS = ['requestsPerSecond', 'burst', 'banAfter', 'banWindowSeconds', 'banSeconds', 'maxBanSeconds'] as const;

/** The supervisor's side of the edge limiter: a worker's take, checked, on the one limiter. */
export function takeForWorker(limiter: EdgeLimiter, body: unknown): LimitResult | Promise<LimitResult> {
  const t = body as Partial<EdgeTake> | null;
  const rule = t?.rule as Record<string, unknown> | undefined;
  if (
    typeof t !== 'object' || t === null || typeof t.scope !== 'string' || typeof t.ip !== 'string' ||
    typeof rule !== 'object' || rule === null || !RULE_NUMBERS.every((k) => isFiniteNumber(rule[k]))
  ) {
    throw new Error('malformed edge limiter take');
  }
  return limiter.take(t.scope, t.ip, t.rule as RateLimitRule);
}
