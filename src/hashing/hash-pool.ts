// The hashing worker pool: worker threads that hash large uploads in 1 MiB batches (MD5, SHA-256 and the
// requested checksum), so that work runs beside the event loop instead of on it. One thread by default
// (hashing.workerThreads): a session's batches must run in order on the thread that holds its hash
// state, so each session keeps to one lane; on the 2-core bench machine a second thread only competed
// with the event loop (bench/RESULTS-hashing.md).
// Each session fills the slots of a ring (a SharedArrayBuffer the worker reads in place); rings are
// kept for reuse, because freshly touched memory is slow on this VM. The threads (and piscina) start with
// the first large upload, not with the server: most starts never hash in a worker, and a thread is an
// isolate of its own (about 10 MB).
import type { Piscina } from 'piscina';
import { SLOT_BYTES, type HashTask, type WorkerDigests, type WorkerHashSpec } from './hash-worker.js';

type Lane = Piscina<HashTask, WorkerDigests | number | undefined>;

export { SLOT_BYTES };
/** Slots per ring: batches of one upload in the worker's queue or being filled, at most. */
export const RING_SLOTS = 4;
/** Free rings kept for reuse; a burst of uploads past this allocates and later drops the surplus. */
const KEPT_RINGS = 8;

export interface HashPoolOptions {
  /** Bodies of at least this many bytes, or of unknown length, are hashed in the worker. */
  threshold: number;
  /** Worker threads; an upload's batches all go to one of them (its session id picks which). Default 1. */
  threads?: number;
}

export class HashPool {
  readonly threshold: number;
  /**
   * One single-thread piscina per lane: a session's batches must run in order on the thread holding
   * its hash state, which one pool of N threads cannot promise.
   */
  private lanes: Lane[] | undefined;
  private starting: Promise<Lane[]> | undefined;
  private readonly threads: number;
  private readonly free: SharedArrayBuffer[] = [];
  private nextId = 1;
  private closed = false;

  constructor(opts: HashPoolOptions) {
    this.threshold = opts.threshold;
    this.threads = Math.max(1, opts.threads ?? 1);
  }

  /** The lanes, started on first use; every caller awaits the same start, so tasks keep their order. */
  private start(): Promise<Lane[]> {
    this.starting ??= import('piscina').then(({ Piscina }) => {
      this.lanes = Array.from(
        { length: this.threads },
        () =>
          new Piscina<HashTask, WorkerDigests | number | undefined>({
            // Through the folder's name: the same file from the bundle in dist/src/bundle/ (scripts/bundle.mjs).
            filename: new URL('../hashing/hash-worker.js', import.meta.url).href,
            minThreads: 1,
            maxThreads: 1,
            // The thread lives as long as the pool: starting one costs tens of milliseconds.
            idleTimeout: Number.MAX_SAFE_INTEGER,
            // By default piscina moves a task it could not hand out to the back of the queue; a session's
            // batches must stay in order (the worker checks their seq and fails the upload otherwise).
            stricterFIFO: true,
          }),
      );
      return this.lanes;
    });
    return this.starting;
  }

  /** True when a body of this declared length (undefined: unknown) should be hashed in the worker. */
  wants(expectedSize: number | undefined): boolean {
    return !this.closed && (expectedSize === undefined || expectedSize >= this.threshold);
  }

  /** A new session; nothing reaches the worker before its first batch. */
  session(spec: WorkerHashSpec): HashSession {
    return new HashSession(this, this.nextId++, spec);
  }

  takeRing(): SharedArrayBuffer {
    return this.free.pop() ?? new SharedArrayBuffer(RING_SLOTS * SLOT_BYTES);
  }

  returnRing(ring: SharedArrayBuffer): void {
    if (!this.closed && this.free.length < KEPT_RINGS) this.free.push(ring);
  }

  /** Runs a task on the thread of session `id`. */
  async run(task: HashTask, id: number): Promise<WorkerDigests | number | undefined> {
    if (this.closed) throw new Error('hash pool is closed');
    const lanes = this.lanes ?? (await this.start());
    if (this.closed) throw new Error('hash pool is closed');
    return (lanes[id % lanes.length] as Lane).run(task);
  }

  /** Hashing tasks waiting for a worker thread, over every lane (the gateway's metrics). */
  get queued(): number {
    return (this.lanes ?? []).reduce((n, lane) => n + lane.queueSize, 0);
  }

  /** Worker threads running now (none before the first large upload). */
  get started(): boolean {
    return this.lanes !== undefined;
  }

  /** Open sessions in the workers (for tests and leak checks); queued behind every lane's tasks. */
  async openSessions(): Promise<number> {
    if (!this.lanes) return 0;
    const counts = await Promise.all(this.lanes.map((_, lane) => this.run({ op: 'sessions' }, lane)));
    return counts.reduce<number>((n, c) => n + (c as number), 0);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.free.length = 0;
    const lanes = this.lanes ?? (await this.starting?.catch(() => undefined));
    await Promise.all((lanes ?? []).map((lane) => lane.close()));
  }
}

/**
 * One upload's share of the worker. Fill `slot()`, hand it over with `update(length)`, and end with
 * `finish()` or `abort()`. Batch n lives in slot n % RING_SLOTS until the worker has hashed it: the
 * caller keeps fewer than RING_SLOTS batches in flight (`inFlight`).
 */
export class HashSession {
  private seq = 0;
  private ring?: SharedArrayBuffer;
  private view?: Buffer;
  private ended = false;
  private pending = 0;

  constructor(
    private readonly pool: HashPool,
    readonly id: number,
    private readonly spec: WorkerHashSpec,
  ) {}

  /** Batches handed over and not yet hashed. */
  get inFlight(): number {
    return this.pending;
  }

  /** The slot the next batch is written to (SLOT_BYTES long). */
  slot(): Buffer {
    if (this.ended) throw new Error('hash session is over');
    if (!this.view) {
      this.ring = this.pool.takeRing();
      this.view = Buffer.from(this.ring);
    }
    const start = (this.seq % RING_SLOTS) * SLOT_BYTES;
    return this.view.subarray(start, start + SLOT_BYTES);
  }

  /** Hands the first `length` bytes of the current slot to the worker. */
  async update(length: number): Promise<void> {
    if (this.ended) throw new Error('hash session is over');
    const first = this.seq === 0;
    const task: HashTask = { op: 'update', id: this.id, seq: this.seq++, length, ...(first ? { spec: this.spec, ring: this.ring } : {}) };
    this.pending++;
    try {
      await this.pool.run(task, this.id);
    } finally {
      this.pending--;
      this.releaseRing();
    }
  }

  async finish(): Promise<WorkerDigests> {
    this.ended = true;
    try {
      return (await this.pool.run({ op: 'finish', id: this.id, seq: this.seq, spec: this.spec }, this.id)) as WorkerDigests;
    } finally {
      this.releaseRing();
    }
  }

  /** Drops the session's hash state; queued behind its batches, so nothing is left after them. */
  async abort(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.releaseRing();
    await this.pool.run({ op: 'abort', id: this.id }, this.id);
  }

  /** The ring goes back once the session is over and the worker has no batch of it left. */
  private releaseRing(): void {
    if (!this.ended || this.pending > 0 || !this.ring) return;
    this.pool.returnRing(this.ring);
    this.ring = undefined;
    this.view = undefined;
  }
}
