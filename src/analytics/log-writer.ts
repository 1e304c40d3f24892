// Where the request log's flushes are written (analytics/request-log.ts). On SQLite, a worker thread
// with its own connection (log-writer-worker.ts): the inserts were a tenth of a CDN hit's CPU on the
// event loop, and a flush that found the write lock taken (another worker's flush) waited for it
// synchronously, stalling every request of that worker. On PostgreSQL the store is asynchronous
// already: the batch is one statement on a pooled connection.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { CdnLogRepo } from '../db/repos/cdn-log.js';
import type { SqlExecutor } from '../db/store/types.js';
import type { WriteReply, WriteRequest } from './log-writer-worker.js';
import { encodeRecordBatch } from './record-batch.js';
import type { CdnRequestRecord } from '../db/repos/request-records.js';
import { canLeaveIdle, setThreadPolicy, type ThreadOnline, type ThreadPolicy } from '../thread-policy.js';

export interface LogWriter {
  /** All or nothing: the batch is one transaction. */
  insertBatch(records: readonly CdnRequestRecord[]): Promise<void>;
  /**
   * The log's buffer fills faster than batches are written (three quarters of it wait behind the batch in
   * flight): a writer that yields to serving stops yielding (ThreadLogWriter).
   */
  behind?(): void;
  close(): Promise<void>;
}

/** Writes on the store itself (PostgreSQL; SQLite in tests and tools that want no thread). */
export function storeLogWriter(store: SqlExecutor): LogWriter {
  const repo = new CdnLogRepo(store);
  return { insertBatch: (records) => repo.insertBatch(records), close: async () => undefined };
}

/** A batch the thread failed to write, with the SQLite error's code (SQLITE_BUSY ...). */
export class LogWriteError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'LogWriteError';
  }
}

/** The writer thread's name, as the OS lists it. */
export const LOG_WRITER_THREAD = 'request-log';

/** When the writer thread yields to serving, and when it stops (ThreadLogWriter). */
export interface WriterPriorityOptions {
  /** Put the thread under SCHED_IDLE at all (default: when it can be given normal priority back, canLeaveIdle). */
  yieldToServing?: boolean;
  /** A batch waiting this long means the thread gets no idle CPU: it runs at normal priority (so does behind()). */
  lagMs?: number;
  /** At normal priority this long (and caught up), it goes back under SCHED_IDLE. */
  normalForMs?: number;
}

const LAG_MS = 500;
const NORMAL_FOR_MS = 10_000;

/**
 * The SQLite writer thread, started by the first batch: a process that serves no logged request (an idle
 * worker, a cluster waiting for traffic) holds no isolate for it (~17 MiB of RSS each). If the thread
 * cannot start or dies, its batches in flight fail (the request log keeps them for its next flush) and
 * later ones are written on `fallback`, on the event loop, as before.
 *
 * The thread runs under SCHED_IDLE (thread-policy.ts: measured, it freed the event loop ~15% of its time
 * at one worker) when it can be given normal priority back: a machine with no idle CPU for long would
 * starve it and the log's buffer would fill, so three quarters of a buffer waiting behind a batch
 * (behind(), from the request log) or a batch waiting `lagMs` puts it at normal priority, and
 * `normalForMs` later, caught up, it yields again. Where it cannot be given normal priority back (no
 * CAP_SYS_NICE nor a nice limit of 20), or is told not to yield (`yieldToServing` false: the serving
 * processes fill every core, context/roles.ts), it stays at normal priority, as before.
 */
export class ThreadLogWriter implements LogWriter {
  private worker: Worker | undefined;
  /** Batches handed to the thread, with when (performance.now(): how long the oldest has waited). */
  private readonly pending = new Map<number, { resolve: () => void; reject: (err: Error) => void; postedAt: number }>();
  private nextId = 0;
  private dead = false;
  private exited: Promise<void> = Promise.resolve();
  /** The thread's OS id once it is up (0: unknown), and the policy it was last put under. */
  private threadId = 0;
  private policy: ThreadPolicy = 'normal';
  private policySince = 0;
  /** A change of policy under way (one at a time). */
  private changing = false;
  private watch: NodeJS.Timeout | undefined;
  private readonly yieldToServing: boolean | undefined;
  private readonly lagMs: number;
  private readonly normalForMs: number;

  constructor(
    private readonly file: string,
    private readonly fallback: LogWriter,
    private readonly log: Pick<Logger, 'error'>,
    priority: WriterPriorityOptions = {},
  ) {
    this.yieldToServing = priority.yieldToServing;
    this.lagMs = priority.lagMs ?? LAG_MS;
    this.normalForMs = priority.normalForMs ?? NORMAL_FOR_MS;
  }

  /** The thread's OS id (0 before it is up or where unknown). */
  get osThreadId(): number {
    return this.threadId;
  }

  /** The thread, started now if it is not yet; undefined when it cannot start (the fallback writes). */
  private thread(): Worker | undefined {
    if (this.worker) return this.worker;
    let worker: Worker;
    try {
      // Through the folder's name: the same file from the bundle in dist/src/bundle/ (scripts/bundle.mjs).
      // Named for `top -H` and /proc/<pid>/task/*/comm (at most 15 characters there).
      worker = new Worker(new URL('../analytics/log-writer-worker.js', import.meta.url), { name: LOG_WRITER_THREAD, workerData: { file: this.file } });
    } catch (err) {
      this.log.error({ err }, 'request log: the writer thread did not start; writing on the event loop');
      this.dead = true;
      return undefined;
    }
    this.worker = worker;
    // Never what keeps the process alive: close() is the orderly way out.
    worker.unref();
    worker.on('message', (reply: WriteReply | ThreadOnline) => {
      if ('threadId' in reply) {
        this.online(reply.threadId);
        return;
      }
      const waiter = this.pending.get(reply.id);
      if (!waiter) return;
      this.pending.delete(reply.id);
      if (reply.error) waiter.reject(new LogWriteError(reply.error.message, reply.error.code));
      else waiter.resolve();
    });
    this.exited = new Promise((resolve) => worker.once('exit', () => resolve()));
    worker.once('error', (err) => {
      this.log.error({ err }, 'request log: the writer thread died; writing on the event loop');
      this.failAll(err);
    });
    void this.exited.then(() => this.failAll(new Error('request log writer thread exited')));
    return worker;
  }

  insertBatch(records: readonly CdnRequestRecord[]): Promise<void> {
    const worker = this.dead ? undefined : this.thread();
    if (worker === undefined) return this.fallback.insertBatch(records);
    const id = ++this.nextId;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, postedAt: performance.now() });
      worker.postMessage({ id, records: encodeRecordBatch(records) } satisfies WriteRequest);
    });
  }

  behind(): void {
    if (this.policy === 'idle' && !this.changing && !this.dead) this.setPolicy('normal');
  }

  private failAll(err: Error): void {
    this.dead = true;
    clearInterval(this.watch);
    for (const waiter of this.pending.values()) waiter.reject(err);
    this.pending.clear();
  }

  /** The thread is up: under SCHED_IDLE if it yields, then watched for lag. */
  private online(threadId: number): void {
    this.threadId = threadId;
    // Asked here, not at construction: a process that never logs a request never reads /proc for it.
    if (threadId <= 0 || !(this.yieldToServing ?? canLeaveIdle())) return;
    this.setPolicy('idle');
    this.watch = setInterval(() => this.checkLag(), Math.max(10, Math.floor(this.lagMs / 2)));
    this.watch.unref();
  }

  /** Normal priority while a batch lags; back under SCHED_IDLE once caught up for normalForMs. */
  private checkLag(): void {
    if (this.changing || this.dead) return;
    const now = performance.now();
    // The first pending batch is the oldest: a Map keeps the order they were posted in.
    const oldest = this.pending.values().next().value?.postedAt ?? now;
    const lagging = now - oldest >= this.lagMs;
    if (this.policy === 'idle' && lagging) this.setPolicy('normal');
    else if (this.policy === 'normal' && !lagging && now - this.policySince >= this.normalForMs) this.setPolicy('idle');
  }

  private setPolicy(policy: ThreadPolicy): void {
    this.changing = true;
    void setThreadPolicy(this.threadId, policy).then((done) => {
      this.changing = false;
      if (!done) {
        // Not allowed or not possible after all: it stays as it is, and is not asked again.
        clearInterval(this.watch);
        return;
      }
      this.policy = policy;
      this.policySince = performance.now();
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    clearInterval(this.watch);
    if (this.dead || worker === undefined) return;
    // Its last batch is not left to idle CPU time (a busy machine could hold the exit back).
    if (this.policy === 'idle') await setThreadPolicy(this.threadId, 'normal');
    // Held until it has gone: the last batch is written by then (messages are handled in order).
    worker.ref();
    worker.postMessage('close');
    await this.exited;
  }
}
