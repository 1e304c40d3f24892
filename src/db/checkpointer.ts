// Moves WAL checkpoints off the event loop. With the server's connection on synchronous = NORMAL and
// wal_autocheckpoint = 0, its commits only append to the WAL; a worker thread with its own connection
// checkpoints every `intervalMs`. The writer restarts the WAL from its beginning once a checkpoint has
// caught up, and journal_size_limit trims what a burst left behind.
//
// The thread runs under SCHED_IDLE (thread-policy.ts): on CPU time no event loop wants. On a machine
// that has none for long, the request log's writer thread, the WAL's busiest writer, checkpoints a WAL
// grown past WAL_CHECKPOINT_FALLBACK_PAGES itself (its connection's autocheckpoint).
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Db } from './open.js';
import { setThreadPolicy, type ThreadOnline } from '../thread-policy.js';

const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

/** A WAL this long (pages) is checkpointed by the request log's writer when the checkpointer has not (64 MiB at 4 KiB pages). */
export const WAL_CHECKPOINT_FALLBACK_PAGES = 16384;

/** The checkpoint thread's name, as the OS lists it. */
export const CHECKPOINT_THREAD = 'checkpointer';

/** How long after a server's start its checkpoint thread starts (the start itself does not wait for it). */
export const CHECKPOINTS_AFTER_START_MS = 1000;

export class Checkpointer {
  private worker: Worker | undefined;
  private exited: Promise<void> = Promise.resolve();
  private readonly startTimer: NodeJS.Timeout | undefined;
  private closed = false;

  /**
   * `startAfterMs`: the thread (an isolate of its own: tens of milliseconds of the event loop to start)
   * starts that much later, so a server's start does not wait for it; the commits meanwhile stay in the
   * WAL until its first checkpoint.
   */
  constructor(
    private readonly db: Db,
    private readonly file: string,
    private readonly log: Logger,
    private readonly intervalMs = 200,
    startAfterMs = 0,
  ) {
    db.pragma('wal_autocheckpoint = 0');
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    if (startAfterMs <= 0) {
      this.start();
      return;
    }
    this.startTimer = setTimeout(() => this.start(), startAfterMs);
    this.startTimer.unref();
  }

  private start(): void {
    if (this.closed || this.worker) return;
    const { db, log } = this;
    // Through the folder's name: the same file from the bundle in dist/src/bundle/ (scripts/bundle.mjs).
    const worker = new Worker(new URL('../db/checkpoint-worker.js', import.meta.url), {
      name: CHECKPOINT_THREAD,
      workerData: { file: this.file, intervalMs: this.intervalMs },
    });
    this.worker = worker;
    // Never what keeps the process alive: close() is the orderly way out.
    worker.unref();
    worker.on('message', (msg: { error?: string } & Partial<ThreadOnline>) => {
      if (msg.error) log.warn({ error: msg.error }, 'sqlite: checkpoint failed');
      if (msg.threadId) void setThreadPolicy(msg.threadId, 'idle');
    });
    this.exited = new Promise((resolve) => {
      worker.once('exit', () => resolve());
    });
    worker.once('error', (err) => {
      // Without the worker the server's own connection checkpoints again, on the event loop.
      log.error({ err }, 'sqlite: checkpoint worker died; checkpointing inline');
      if (db.open) db.pragma('wal_autocheckpoint = 1000');
    });
  }

  /** A last checkpoint, then the worker goes. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.startTimer);
    const worker = this.worker;
    if (!worker) {
      // Closed before its thread started: the last checkpoint on the server's own connection.
      try {
        if (this.db.open) this.db.pragma('wal_checkpoint(PASSIVE)');
      } catch (err) {
        this.log.warn({ err }, 'sqlite: checkpoint failed');
      }
      return;
    }
    // Held until it has gone, or the process could end with the last checkpoint half done.
    worker.ref();
    worker.postMessage('close');
    await this.exited;
  }
}
