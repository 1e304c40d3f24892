// The CDN request log: every CDN request is appended to a bounded in-memory buffer (never blocking the
// response, never throwing); a timer writes the buffer to the metadata store in one transaction (one
// flush at a time). A full buffer drops
// what does not fit and counts it (metrics), so a stalled disk costs log rows, never requests. Hourly,
// complete hours are rolled up per owner and old rows expire (log-maintenance.ts).
import type { Logger } from 'pino';
import type { CdnLogConfig } from '../config/schema.js';
import { CdnLogRepo } from '../db/repos/cdn-log.js';
import { CdnTrafficRepo } from '../db/repos/cdn-traffic.js';
import type { SqlExecutor } from '../db/store/types.js';
import { storeLogWriter, type LogWriter } from './log-writer.js';
import { maintainLog, type MaintenanceResult } from './log-maintenance.js';
import { HOUR_MS } from '../db/repos/traffic.js';
import type { CdnRequestRecord } from '../db/repos/request-records.js';

export interface Scheduler {
  every(ms: number, fn: () => void): () => void;
  soon(fn: () => void): void;
}

/** Real timers, unref'd: the log never keeps the process alive (close() flushes what is left). */
const UNREF_TIMERS: Scheduler = {
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
  soon(fn) {
    setImmediate(fn).unref();
  },
};

export interface RequestLogOptions {
  /** Unix ms; drives roll-ups and retention. */
  clock?: () => number;
  log?: Pick<Logger, 'warn'>;
  scheduler?: Scheduler;
  /** Sees every record as it is appended, kept or dropped (the request metrics). */
  observe?: (r: CdnRequestRecord) => void;
  /** Where flushes are written (log-writer.ts): default the store itself. */
  writer?: LogWriter;
  /**
   * Roll up and expire hourly (default). Off in cluster workers: their supervisor does it, once. A
   * function is asked before each run: nodes on one PostgreSQL leave it to the node leading the jobs.
   */
  maintain?: boolean | (() => boolean);
}

export interface RequestLogStats {
  /** Records waiting for the next flush. */
  buffered: number;
  capacity: number;
  /** Records lost: the buffer was full, the record was malformed, or the log was closed. */
  dropped: number;
  /** Records written to the store. */
  flushed: number;
  /** Flush transactions committed. */
  flushes: number;
  /** Flushes that failed (their records stay buffered for the next one). */
  flushErrors: number;
}

const CACHE_STATUSES: ReadonlySet<string> = new Set(['HIT', 'MISS', 'EXPIRED', 'BYPASS']);

function text(s: string, max: number): string {
  return typeof s !== 'string' ? '' : s.length > max ? s.slice(0, max) : s;
}

function optionalText(s: string | null, max: number): string | null {
  return typeof s !== 'string' ? null : s.length > max ? s.slice(0, max) : s;
}

function count(n: number): number {
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}

/**
 * Makes `r` safe to store, in place (bounded strings, valid codes; one record a request, so no copy), or
 * undefined when it cannot be. The record is the log's from here on.
 */
function clean(r: CdnRequestRecord): CdnRequestRecord | undefined {
  if (!Number.isInteger(r.status) || r.status < 100 || r.status > 999 || !Number.isFinite(r.time)) return undefined;
  r.surface = r.surface === 'proxy' ? 'proxy' : 'cdn';
  if (!METHOD.test(r.method)) r.method = 'OTHER';
  r.path = text(r.path, 1024);
  r.bytesIn = count(r.bytesIn ?? 0);
  r.decision = typeof r.decision === 'string' && DECISION.test(r.decision) ? r.decision : 'allowed';
  r.time = Math.floor(r.time);
  r.host = text(r.host, 253);
  r.assetId = optionalText(r.assetId, 64);
  r.bucket = optionalText(r.bucket, 63);
  r.key = optionalText(r.key, 1024);
  r.ownerId = optionalText(r.ownerId, 64);
  r.bytesSent = count(r.bytesSent);
  if (r.cacheStatus !== null && !CACHE_STATUSES.has(r.cacheStatus)) r.cacheStatus = null;
  r.clientIp = text(r.clientIp, 64);
  if (typeof r.country !== 'string' || !COUNTRY.test(r.country)) r.country = '';
  r.userAgent = text(r.userAgent, 512);
  if (!(Number.isFinite(r.durationMs) && r.durationMs > 0)) r.durationMs = 0;
  r.downloadKey = typeof r.downloadKey === 'string' ? text(r.downloadKey, 1100) : undefined;
  return r;
}

/**
 * The share of the buffer waiting behind the flush in flight at which the writer is told it is behind.
 * Not half, where the early flush starts: a writer under SCHED_IDLE beside one busy worker keeps up on
 * average, only its batches take longer, and at half a buffer it took normal priority back within
 * seconds of load (docs/ARCHITECTURE.md "Background threads yield").
 */
const BEHIND_SHARE = 0.75;

const METHOD = /^[A-Z]{1,16}$/;
const DECISION = /^[a-z-]{1,32}$/;
const COUNTRY = /^[A-Z]{2}$|^$/;

export class RequestLog {
  /** Reads for analytics (summary, proxy logs). Call flush() first to include the buffer. */
  readonly traffic: CdnTrafficRepo;
  private readonly repo: CdnLogRepo;
  private readonly writer: LogWriter;
  private readonly clock: () => number;
  private readonly log: Pick<Logger, 'warn'> | undefined;
  private readonly capacity: number;
  private buffer: CdnRequestRecord[] = [];
  private readonly counters = { dropped: 0, flushed: 0, flushes: 0, flushErrors: 0 };
  private readonly stops: (() => void)[];
  private closed = false;
  private earlyFlushQueued = false;
  private readonly scheduler: Scheduler;
  private readonly observe: ((r: CdnRequestRecord) => void) | undefined;
  /** The flush being written (flushes never overlap: the next one waits for it). */
  private flushing: Promise<number> | undefined;
  /** Records of the flush being written (still counted as buffered). */
  private inFlight = 0;
  /** The maintenance under way (one at a time; close() waits for it). */
  private maintaining: Promise<void> | undefined;

  constructor(
    store: SqlExecutor,
    private readonly config: CdnLogConfig,
    opts: RequestLogOptions = {},
  ) {
    this.clock = opts.clock ?? Date.now;
    this.repo = new CdnLogRepo(store);
    this.writer = opts.writer ?? storeLogWriter(store);
    this.traffic = new CdnTrafficRepo(store);
    this.log = opts.log;
    this.observe = opts.observe;
    this.capacity = config.bufferSize;
    const scheduler = opts.scheduler ?? UNREF_TIMERS;
    this.scheduler = scheduler;
    this.stops = [scheduler.every(config.flushIntervalMs, () => void this.flush())];
    const maintain = opts.maintain ?? true;
    if (maintain !== false) {
      const due = maintain === true ? () => true : maintain;
      // Roll up and expire what accumulated while the server was down, then hourly.
      if (due()) void this.maintainQuietly();
      this.stops.push(scheduler.every(HOUR_MS, () => void (due() ? this.maintainQuietly() : undefined)));
    }
  }

  /** Appends the record to the buffer; never blocks, never throws. */
  record(r: CdnRequestRecord): void {
    try {
      this.observe?.(r);
      const row = this.closed || this.buffer.length >= this.capacity ? undefined : clean(r);
      if (row) this.buffer.push(row);
      else this.counters.dropped++;
      // Under load the timer is too slow: half a buffer is flushed at once rather than dropped later
      // (downloads' usage events ride on these records).
      if (this.buffer.length >= this.capacity / 2) {
        // Three quarters of a buffer behind the flush in flight: the writer is behind (a thread left to
        // idle CPU time), and records would be dropped a quarter of a buffer later.
        if (this.flushing !== undefined && this.buffer.length >= BEHIND_SHARE * this.capacity) this.writer.behind?.();
        if (!this.earlyFlushQueued) {
          this.earlyFlushQueued = true;
          this.scheduler.soon(() => {
            this.earlyFlushQueued = false;
            if (!this.closed) void this.flush();
          });
        }
      }
    } catch {
      this.counters.dropped++;
    }
  }

  /**
   * Writes the buffer in one transaction, after the flush in progress if any; resolves to the records
   * written (0 when it failed: they stay buffered). Never rejects.
   */
  async flush(): Promise<number> {
    while (this.flushing !== undefined) await this.flushing;
    if (this.buffer.length === 0) return 0;
    this.flushing = this.write();
    try {
      return await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }

  private async write(): Promise<number> {
    const batch = this.buffer;
    this.buffer = [];
    this.inFlight = batch.length;
    try {
      await this.writer.insertBatch(batch);
    } catch (err) {
      // Nothing was written (one transaction); keep the records for the next flush. Requests that
      // arrive meanwhile are dropped once the buffer is full.
      this.buffer = batch.concat(this.buffer);
      this.counters.flushErrors++;
      this.log?.warn({ err, records: batch.length }, 'cdn request log flush failed');
      return 0;
    } finally {
      this.inFlight = 0;
    }
    this.counters.flushed += batch.length;
    this.counters.flushes++;
    return batch.length;
  }

  /** Flushes, rolls complete hours up and deletes what is past the retention. */
  async maintain(): Promise<MaintenanceResult> {
    await this.flush();
    return maintainLog(this.repo, this.clock(), this.config.retentionDays);
  }

  stats(): RequestLogStats {
    return { buffered: this.buffer.length + this.inFlight, capacity: this.capacity, ...this.counters };
  }

  /** Stops the timers, waits for the maintenance under way and writes what is buffered; later records are dropped. */
  async close(): Promise<void> {
    if (this.closed) return;
    for (const stop of this.stops) stop();
    await this.maintaining;
    await this.flush();
    this.closed = true;
    this.counters.dropped += this.buffer.length;
    this.buffer = [];
    await this.writer.close();
  }

  /** One run at a time (a slow one is not overlapped by the next hour's); never rejects. */
  private maintainQuietly(): Promise<void> {
    if (this.maintaining) return this.maintaining;
    const run = this.maintain().then(
      () => undefined,
      (err: unknown) => this.log?.warn({ err }, 'cdn request log maintenance failed'),
    );
    this.maintaining = run.finally(() => {
      this.maintaining = undefined;
    });
    return this.maintaining;
  }
}
