// One process-wide budget of bytes that upload bodies may hold in memory at once (limits.uploadBufferBytes):
// an inline body, the hashing worker's ring, the upstream backend's part buffers, the stream pipes between
// them. A request reserves what it will hold before it reads a byte and releases it once those buffers
// are freed; when the budget is spent it waits (its socket unread, so TCP slows the client) in FIFO
// order, and past the deadline (limits.uploadBufferWaitMs) it is refused with 503 SlowDown.
//
// No deadlock: a request waits only while it holds nothing (its one primary reservation). Anything more
// (the upstream backend's second part buffer, which lets a part upload while the next one fills) is
// taken only if it is free right now (tryReserve), and the request otherwise makes do with what it has.
//
// Why not async-mutex's Semaphore (the maintained weighted semaphore on npm): a waiter cannot be taken
// out of its queue (only cancel() of every waiter), so a request whose client left, or whose deadline
// passed (withTimeout), keeps its place until it is served and then gives the bytes straight back;
// it has no try-acquire of a weight either, and no figures for the metrics.
import { S3Error } from '../errors/s3-errors.js';

/** Seconds a refused client is told to wait. */
const RETRY_AFTER_SECONDS = '1';

/** The budget stayed spent for the whole wait: S3 SlowDown, the management API's 503 slow_down. */
export class UploadBufferFull extends S3Error {
  constructor() {
    super('SlowDown', undefined, {}, { 'Retry-After': RETRY_AFTER_SECONDS });
  }
}

export function isUploadBufferFull(err: unknown): err is UploadBufferFull {
  return err instanceof UploadBufferFull;
}

export interface UploadBudgetOptions {
  /** Bytes that may be reserved at once; 0: no cap (reservations are still counted). */
  capBytes: number;
  /** How long a reservation may wait for room before it is refused. */
  waitMs: number;
}

export interface UploadBudgetStats {
  capBytes: number;
  /** Bytes reserved now. */
  reservedBytes: number;
  /** The most ever reserved at once since start. */
  peakBytes: number;
  /** Reservations waiting for room now. */
  waiting: number;
  /** Reservations that had to wait (then got their room or not). */
  waits: number;
  /** Reservations refused at their deadline (SlowDown). */
  refusals: number;
}

/** Bytes held under the budget; release() gives them back (idempotent). */
export interface Reservation {
  readonly bytes: number;
  release(): void;
}

interface Waiter {
  bytes: number;
  grant(r: Reservation): void;
  fail(err: unknown): void;
}

const NONE: Reservation = { bytes: 0, release: () => undefined };

export class UploadBudget {
  readonly capBytes: number;
  private readonly waitMs: number;
  private reserved = 0;
  private peak = 0;
  private waits = 0;
  private refusals = 0;
  private readonly queue: Waiter[] = [];

  constructor(opts: UploadBudgetOptions) {
    this.capBytes = opts.capBytes;
    this.waitMs = opts.waitMs;
  }

  stats(): UploadBudgetStats {
    return {
      capBytes: this.capBytes,
      reservedBytes: this.reserved,
      peakBytes: this.peak,
      waiting: this.queue.length,
      waits: this.waits,
      refusals: this.refusals,
    };
  }

  /** A request never needs more than the whole budget: one that asks for more gets all of it. */
  private clamp(bytes: number): number {
    const n = Math.max(0, Math.ceil(bytes));
    return this.capBytes > 0 ? Math.min(n, this.capBytes) : n;
  }

  private fits(bytes: number): boolean {
    return this.capBytes === 0 || this.reserved + bytes <= this.capBytes;
  }

  private take(bytes: number): Reservation {
    if (bytes === 0) return NONE;
    this.reserved += bytes;
    if (this.reserved > this.peak) this.peak = this.reserved;
    let held = true;
    return {
      bytes,
      release: () => {
        if (!held) return;
        held = false;
        this.reserved -= bytes;
        this.dispatch();
      },
    };
  }

  /** Serves waiters in order while the first one fits: a large request is never overtaken for good. */
  private dispatch(): void {
    for (;;) {
      const head = this.queue[0];
      if (!head || !this.fits(head.bytes)) return;
      this.queue.shift();
      head.grant(this.take(head.bytes));
    }
  }

  /** The bytes now if they are free and nobody is waiting before us; undefined otherwise. Never waits. */
  tryReserve(bytes: number): Reservation | undefined {
    const n = this.clamp(bytes);
    // Nothing to hold (an empty body): never in line behind others.
    if (n === 0) return NONE;
    if (this.queue.length > 0 || !this.fits(n)) return undefined;
    return this.take(n);
  }

  /**
   * The bytes, waiting in line for them when they are not free. Rejects with UploadBufferFull when the
   * wait reaches its deadline, or with the signal's reason when it aborts; either way nothing stays
   * reserved and the line moves on.
   */
  reserve(bytes: number, opts: { signal?: AbortSignal } = {}): Promise<Reservation> {
    const fast = this.tryReserve(bytes);
    if (fast) return Promise.resolve(fast);
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    this.waits++;
    return new Promise<Reservation>((resolve, reject) => {
      const leave = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        // A large waiter at the head may have held back smaller ones that fit now.
        if (i === 0) this.dispatch();
      };
      const waiter: Waiter = {
        bytes: this.clamp(bytes),
        grant: (r) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(r);
        },
        fail: (err) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      const onAbort = (): void => {
        leave();
        reject(signal?.reason as Error);
      };
      const timer = setTimeout(() => {
        leave();
        this.refusals++;
        reject(new UploadBufferFull());
      }, this.waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  /** Refuses every waiter (the server is closing). */
  close(): void {
    for (const w of this.queue.splice(0)) w.fail(new UploadBufferFull());
  }
}
