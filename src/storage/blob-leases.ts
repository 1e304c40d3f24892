// Blob leases: a reader leases the blob ids of the version it serves for as long as it streams them;
// removing a leased blob waits until the last lease on it is released. So an overwrite or delete can
// never pull bytes from under a response, however many blobs (parts) the version has and however
// slow the client. In memory, for one process: a lease is taken in the same tick as the metadata
// lookup, so no removal can slip in between. In a cluster worker an observer tells the supervisor which
// blobs this process starts and stops holding, and removal is the supervisor's (src/cluster/shared-leases.ts).

import type { Readable } from 'node:stream';

export interface BlobLease {
  /** Idempotent. */
  release(): void;
}

/** Told when a blob gets its first lease here and when its last one goes (a cluster worker's report). */
export interface LeaseObserver {
  held(blobIds: string[]): void;
  freed(blobIds: string[]): void;
}

export class BlobLeases {
  private readonly holders = new Map<string, number>();
  /** Leased blobs whose removal was asked for: removed when their last lease goes. */
  private readonly doomed = new Set<string>();

  /**
   * `remove` deletes the bytes (or asks the process that does); it must not throw synchronously and
   * reports its own failures. `observer` hears of each blob's first and last lease, before any removal.
   */
  constructor(
    private readonly remove: (blobId: string) => Promise<void>,
    private readonly observer?: LeaseObserver,
  ) {}

  acquire(blobIds: readonly string[]): BlobLease {
    const ids = [...new Set(blobIds)];
    const first: string[] = [];
    for (const id of ids) {
      const n = this.holders.get(id) ?? 0;
      if (n === 0) first.push(id);
      this.holders.set(id, n + 1);
    }
    if (first.length > 0) this.observer?.held(first);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const last = ids.filter((id) => this.drop(id));
        if (last.length === 0) return;
        this.observer?.freed(last);
        for (const id of last) if (this.doomed.delete(id)) void this.remove(id);
      },
    };
  }

  /**
   * A stream of `blobIds` opened by `open`, leased from this call (synchronously: call it in the tick
   * of the lookup that named them) until the stream closes, or released at once if opening fails.
   */
  async whileOpen(blobIds: readonly string[], open: () => Promise<Readable>): Promise<Readable> {
    const lease = this.acquire(blobIds);
    let stream: Readable;
    try {
      stream = await open();
    } catch (err) {
      lease.release();
      throw err;
    }
    if (stream.closed || stream.destroyed) lease.release();
    else stream.once('close', () => lease.release());
    return stream;
  }

  /** One lease fewer on `id`; true when that was the last. */
  private drop(id: string): boolean {
    const n = (this.holders.get(id) ?? 1) - 1;
    if (n > 0) {
      this.holders.set(id, n);
      return false;
    }
    this.holders.delete(id);
    return true;
  }

  /** Removes the blob now, or when its last lease is released. Resolves when done or deferred. */
  async removeWhenFree(blobId: string): Promise<void> {
    if (this.holders.has(blobId)) {
      this.doomed.add(blobId);
      return;
    }
    await this.remove(blobId);
  }

  isLeased(blobId: string): boolean {
    return this.holders.has(blobId);
  }

  /** Blobs waiting for their readers before they go (for tests and shutdown). */
  get deferred(): number {
    return this.doomed.size;
  }
}
