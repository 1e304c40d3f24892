// Group commit for the metadata database. The server's connection runs with synchronous = NORMAL, so a
// COMMIT only writes its frames into the WAL file (no fsync on the event loop). Before a write is
// acknowledged, its request awaits sync(): one fdatasync of the WAL in libuv's thread pool covers every
// commit made before it started, so concurrent writers share one disk flush instead of paying one each.
// That gives the durability of synchronous = FULL (a committed, acknowledged row survives power loss)
// at the cost of one flush per batch. Checkpoints keep NORMAL's own syncs (WAL before, database after).
import { close, fdatasync, openSync } from 'node:fs';

export interface Durability {
  /** Resolves once every commit made before the call is on disk; starts a flush now if none runs. */
  sync(): Promise<void>;
  /**
   * The same promise, for background work (removing replaced blobs): it joins the flush that the
   * request's own sync() starts a moment later, and starts one itself only on the next turn of the
   * event loop if nobody did. Calling sync() there would start a flush that the request's sync()
   * then has to wait out before its own.
   */
  syncSoon(): Promise<void>;
}

/** PostgreSQL's Durability: a transaction is durable when COMMIT returns (synchronous_commit on). */
export const DURABLE_AT_COMMIT: Durability & { close(): Promise<void> } = {
  sync: () => Promise.resolve(),
  syncSoon: () => Promise.resolve(),
  close: () => Promise.resolve(),
};

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

export class WalSync implements Durability {
  private readonly fd: number;
  /** Callers whose commits the flush in flight (if any) may not cover: they wait for the next one. */
  private waiting: Waiter[] = [];
  private flushing = false;
  private closed = false;
  /** fdatasync calls so far (tests and metrics: the flushes commits shared). */
  flushes = 0;

  /** `walFile` is `<database>-wal`; SQLite creates it on the connection's first read in WAL mode. */
  constructor(walFile: string) {
    this.fd = openSync(walFile, 'r');
  }

  sync(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('database closed'));
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.flush();
    });
  }

  syncSoon(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('database closed'));
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    if (this.flushing || this.waiting.length === 0) return;
    const batch = this.waiting;
    this.waiting = [];
    this.flushing = true;
    this.flushes++;
    fdatasync(this.fd, (err) => {
      this.flushing = false;
      for (const w of batch) {
        if (err) w.reject(err);
        else w.resolve();
      }
      this.flush();
    });
  }

  /** Waits for the flush in flight, then releases the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    while (this.flushing || this.waiting.length > 0) await this.sync().catch(() => undefined);
    this.closed = true;
    await new Promise<void>((resolve) => close(this.fd, () => resolve()));
  }
}
