// One cache fill: a single read of an object from storage, written into a disk slot (bytes readable by
// followers as soon as they are written) and, for a small object, kept whole for the memory tier. The
// fill runs at storage speed whoever follows it: a slow or vanished client cannot stall it or cut it
// short. A fill that fails (storage error, short read, disk write error) caches nothing.
import type { Readable } from 'node:stream';
import type { DiskSlot, EntryIdentity } from './disk-tier.js';
import { FillProgress } from './fill-progress.js';

export interface FillOptions {
  id: EntryIdentity;
  /** The storage stream being opened (opened by the caller, in the tick of its metadata lookup). */
  body: Promise<Readable>;
  /** Keep the whole body for the memory tier. */
  keepInMemory: boolean;
  /** Where the body goes on disk; undefined when the disk tier takes no part. */
  slot: DiskSlot | undefined;
  onDiskError(err: unknown): void;
  /**
   * Called the moment the fill fails (storage error, short read, abort), before anyone waiting hears of
   * it and before its disk slot is cleaned up: the cache forgets it then, so no later request joins a
   * fill that has already failed.
   */
  onFailed(): void;
}

/**
 * The fill could not write its disk slot (a full disk: ENOSPC). Nothing is cached; the requests that
 * followed the slot read the rest of their range from storage instead (FollowReader's reopen).
 */
export class DiskWriteError extends Error {
  constructor(cause: unknown) {
    super('cdn cache: the body could not be written to disk', { cause });
    this.name = 'DiskWriteError';
  }
}

export class Fill extends FillProgress {
  readonly id: EntryIdentity;
  readonly slot: DiskSlot | undefined;
  readonly keepsInMemory: boolean;
  /** Resolves once the storage stream is open; rejects (e.g. code ENOENT) if it cannot be. */
  readonly opened: Promise<void>;
  /** Resolves when every byte was read: with the whole body if it is kept in memory. */
  readonly bytes: Promise<Buffer | undefined>;
  /** Settles when the fill is over, its file published on disk (or given up). */
  readonly done: Promise<void>;
  /** Set by a purge: the result is served to those already waiting, but not cached. */
  purged = false;
  private stream: Readable | undefined;
  private aborted: Error | undefined;
  /** The slot failed while the body is also kept in memory: the fill goes on without the disk. */
  private diskLost = false;

  constructor(private readonly opts: FillOptions) {
    super();
    this.id = opts.id;
    this.slot = opts.slot;
    this.keepsInMemory = opts.keepInMemory;
    this.opened = opts.body.then(() => undefined);
    this.bytes = this.read();
    this.done = this.bytes.then(
      () => this.finishSlot(),
      () => undefined,
    );
    // Failures are reported to whoever waits; nobody waiting is not an unhandled rejection.
    this.opened.catch(() => undefined);
    this.bytes.catch(() => undefined);
  }

  private async read(): Promise<Buffer | undefined> {
    const { id, slot } = this.opts;
    const chunks: Buffer[] | undefined = this.opts.keepInMemory ? [] : undefined;
    try {
      const body = await this.opts.body;
      this.stream = body;
      if (this.aborted) body.destroy(this.aborted);
      for await (const chunk of body as AsyncIterable<Buffer>) {
        if (this.written + chunk.length > id.size) throw new Error('storage returned more bytes than the object has');
        chunks?.push(chunk);
        if (slot && !this.diskLost) await this.writeSlot(slot, chunk);
        this.written += chunk.length;
        this.wake();
      }
      if (this.written !== id.size) throw new Error(`short read from storage: ${this.written} of ${id.size} bytes`);
      this.finished = true;
      this.wake();
      return chunks ? Buffer.concat(chunks, id.size) : undefined;
    } catch (err) {
      this.failure = err instanceof Error ? err : new Error(String(err));
      this.opts.onFailed();
      this.wake();
      if (slot) {
        await slot.discard();
        slot.release();
      }
      throw this.failure;
    }
  }

  /** A disk failure costs the cache, never the response: kept in memory, the fill goes on without it. */
  private async writeSlot(slot: DiskSlot, chunk: Buffer): Promise<void> {
    try {
      await slot.write(chunk, this.written);
    } catch (err) {
      if (!this.keepsInMemory) throw new DiskWriteError(err);
      this.opts.onDiskError(err);
      this.diskLost = true;
    }
  }

  /**
   * Published on disk unless purged meanwhile; a disk failure here costs the cache, not a response.
   * Runs after the last byte was read, so no reader waits for the file's fsync.
   */
  private async finishSlot(): Promise<void> {
    const { slot } = this.opts;
    if (!slot) return;
    try {
      if (this.purged || this.diskLost) await slot.discard();
      else await slot.publish(() => !this.purged);
    } catch (err) {
      this.opts.onDiskError(err);
      await slot.discard();
    } finally {
      slot.release();
    }
  }

  /** Stops a fill still reading (shutdown): it fails and caches nothing. One reading no more finishes. */
  abort(reason: Error): void {
    this.aborted = reason;
    if (!this.finished) this.stream?.destroy(reason);
  }
}
