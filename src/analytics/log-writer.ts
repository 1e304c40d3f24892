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

export interface LogWriter {
  /** All or nothing: the batch is one transaction. */
  insertBatch(records: readonly CdnRequestRecord[]): Promise<void>;
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

/**
 * The SQLite writer thread, started by the first batch: a process that serves no logged request (an idle
 * worker, a cluster waiting for traffic) holds no isolate for it (~17 MiB of RSS each). If the thread
 * cannot start or dies, its batches in flight fail (the request log keeps them for its next flush) and
 * later ones are written on `fallback`, on the event loop, as before.
 */
export class ThreadLogWriter implements LogWriter {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  private nextId = 0;
  private dead = false;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly fallback: LogWriter,
    private readonly log: Pick<Logger, 'error'>,
  ) {}

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
    worker.on('message', (reply: WriteReply) => {
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
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, records: encodeRecordBatch(records) } satisfies WriteRequest);
    });
  }

  private failAll(err: Error): void {
    this.dead = true;
    for (const waiter of this.pending.values()) waiter.reject(err);
    this.pending.clear();
  }

  async close(): Promise<void> {
    const worker = this.worker;
    if (this.dead || worker === undefined) return;
    // Held until it has gone: the last batch is written by then (messages are handled in order).
    worker.ref();
    worker.postMessage('close');
    await this.exited;
  }
}
