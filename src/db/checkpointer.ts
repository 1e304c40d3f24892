// Moves WAL checkpoints off the event loop. With the server's connection on synchronous = NORMAL and
// wal_autocheckpoint = 0, its commits only append to the WAL; a worker thread with its own connection
// checkpoints every `intervalMs`. The writer restarts the WAL from its beginning once a checkpoint has
// caught up, and journal_size_limit trims what a burst left behind.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Db } from './open.js';
import { resolveSqliteDriver, type SqliteDriverSetting } from './sqlite/index.js';

const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

export class Checkpointer {
  private readonly worker: Worker;
  private exited: Promise<void>;

  constructor(db: Db, file: string, log: Logger, intervalMs = 200, driver: SqliteDriverSetting = 'auto') {
    db.pragma('wal_autocheckpoint = 0');
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    this.worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), {
      workerData: { file, intervalMs, driver: resolveSqliteDriver(driver) },
    });
    // Never what keeps the process alive: close() is the orderly way out.
    this.worker.unref();
    this.worker.on('message', (msg: { error?: string }) => {
      if (msg.error) log.warn({ error: msg.error }, 'sqlite: checkpoint failed');
    });
    this.exited = new Promise((resolve) => {
      this.worker.once('exit', () => resolve());
    });
    this.worker.once('error', (err) => {
      // Without the worker the server's own connection checkpoints again, on the event loop.
      log.error({ err }, 'sqlite: checkpoint worker died; checkpointing inline');
      if (db.open) db.pragma('wal_autocheckpoint = 1000');
    });
  }

  /** A last checkpoint, then the worker goes. */
  async close(): Promise<void> {
    // Held until it has gone, or the process could end with the last checkpoint half done.
    this.worker.ref();
    this.worker.postMessage('close');
    await this.exited;
  }
}
