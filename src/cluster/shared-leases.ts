// Blob removal across a cluster's workers (docs/SCALE.md). A worker's BlobLeases still lease locally (in
// the tick of the lookup), and report each blob's first and last lease to the supervisor as notes; its
// removals are asked of the supervisor, which removes a blob (with its own storage) once no worker holds
// it and a grace has passed: a lease note another worker sent just before may still be on its way. A
// worker that exits holds nothing any more. The supervisor's own BlobLeases does the bookkeeping (each
// worker's hold is one lease on it), so its blob collector sees the workers' leases too.
import type { Logger } from 'pino';
import type { BlobLease, BlobLeases, LeaseObserver } from '../storage/blob-leases.js';
import type { WorkerChannel } from './ipc.js';
import { isInlineBlobId } from '../storage/blob-id.js';

export const LEASE_MESSAGES = { held: 'leases.held', freed: 'leases.freed', remove: 'leases.remove' } as const;

/** How long a removal waits at least: longer than a note takes to cross a busy channel. */
export const REMOVAL_GRACE_MS = 2000;

/** A worker's side: what to report and how to remove, for its BlobLeases. */
export function workerLeases(channel: WorkerChannel, log: Pick<Logger, 'warn'>): { observer: LeaseObserver; remove: (blobId: string) => Promise<void> } {
  return {
    // An inline blob (a small object's bytes, in the database) is read in the tick of its lookup and
    // dropped in the overwrite's own transaction: no other worker can remove it from under a reader, so
    // a small GET costs no message.
    observer: {
      held: (ids) => noteBackend(channel, LEASE_MESSAGES.held, ids),
      freed: (ids) => noteBackend(channel, LEASE_MESSAGES.freed, ids),
    },
    // Resolves once the supervisor has the removal (it happens later). Without an answer the blob stays:
    // unreferenced, the blob collector removes it after its grace.
    remove: (blobId) =>
      channel.request<null>(LEASE_MESSAGES.remove, blobId).then(
        () => undefined,
        (err: unknown) => log.warn({ err, blobId }, 'cluster: the supervisor did not take a blob removal; the blob collector will'),
      ),
  };
}

function noteBackend(channel: WorkerChannel, type: string, ids: readonly string[]): void {
  const backend = ids.filter((id) => !isInlineBlobId(id));
  if (backend.length > 0) channel.note(type, backend);
}

function blobIds(body: unknown): string[] {
  return Array.isArray(body) ? body.filter((id): id is string => typeof id === 'string') : [];
}

/** The supervisor's side: every worker's leases, as leases on the supervisor's BlobLeases. */
export class ClusterLeases {
  /** Per worker slot: the blobs it holds, each as one lease here. */
  private readonly bySlot = new Map<number, Map<string, BlobLease>>();
  /** Grace leases of removals asked for, released when their grace is over (or at close). */
  private readonly graces = new Set<{ lease: BlobLease; timer: { cancel(): void } }>();

  constructor(
    private readonly leases: BlobLeases,
    private readonly graceMs: number = REMOVAL_GRACE_MS,
    /** Runs `fn` after `ms` (a timer that does not keep the process alive); injectable for tests. */
    private readonly after: (ms: number, fn: () => void) => { cancel(): void } = (ms, fn) => {
      const t = setTimeout(fn, ms);
      t.unref();
      return { cancel: () => clearTimeout(t) };
    },
  ) {}

  held(slot: number, body: unknown): void {
    let held = this.bySlot.get(slot);
    if (!held) {
      held = new Map();
      this.bySlot.set(slot, held);
    }
    for (const id of blobIds(body)) if (!held.has(id)) held.set(id, this.leases.acquire([id]));
  }

  freed(slot: number, body: unknown): void {
    const held = this.bySlot.get(slot);
    if (!held) return;
    for (const id of blobIds(body)) {
      held.get(id)?.release();
      held.delete(id);
    }
  }

  /** A worker exited: whatever it was streaming, it streams no more. */
  workerExited(slot: number): void {
    const held = this.bySlot.get(slot);
    this.bySlot.delete(slot);
    for (const lease of held?.values() ?? []) lease.release();
  }

  /** Removes the blob once no worker holds it and the grace is over; resolves once that is arranged. */
  async remove(body: unknown): Promise<null> {
    if (typeof body !== 'string' || body === '') throw new Error('malformed blob removal');
    const lease = this.leases.acquire([body]);
    const grace = {
      lease,
      timer: this.after(this.graceMs, () => {
        this.graces.delete(grace);
        lease.release();
      }),
    };
    this.graces.add(grace);
    // Leased (by the grace at least): deferred until the last lease goes.
    await this.leases.removeWhenFree(body);
    return null;
  }

  /** Blobs some worker holds now. */
  heldBy(slot: number): number {
    return this.bySlot.get(slot)?.size ?? 0;
  }

  /** The workers have stopped: pending removals need no more grace. */
  close(): void {
    for (const grace of this.graces) {
      grace.timer.cancel();
      grace.lease.release();
    }
    this.graces.clear();
  }
}
