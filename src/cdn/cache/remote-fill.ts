// Following another process's fill: a worker that misses while another worker of the data directory
// fills the same version (the shared index says so) reads that fill's temp file as it grows instead of
// reading storage again. Progress is the file's size (fstat, polled: 1 ms doubling to 20 ms while
// nothing new arrives, halving while bytes come); the fill is over when every byte is there (published or not). It is lost when
// the file is unlinked short (the writer failed, was purged or superseded), its process died, or no
// byte arrived for stallMs: then whoever followed it reads storage themselves (RemoteFillLost).
// (Polling rather than watching the file: nothing to set up or tear down per follower, and a dead
// writer shows in the file and the process table, where a message from it would never come.)
import { open, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { IndexFill } from './disk-index.js';
import type { DiskEntry, EntryIdentity } from './disk-tier.js';
import { FillProgress } from './fill-progress.js';

const FIRST_POLL_MS = 1;
const MAX_POLL_MS = 20;

/** The other process's fill is gone: what is still missing must come from storage. */
export class RemoteFillLost extends Error {
  constructor(why: string) {
    super(`cdn cache: the fill of another process was lost (${why})`);
    this.name = 'RemoteFillLost';
  }
}

export interface RemoteFillOptions {
  fill: IndexFill;
  /** The temp file's absolute path. */
  path: string;
  /** Keep the whole body for the memory tier. */
  keepInMemory: boolean;
  stallMs: number;
  /** Whether the fill's process still runs. */
  alive(fill: IndexFill): boolean;
  /** Whether the fill is still registered in the index (not published, failed or taken over). */
  running(): boolean;
  /** The entry the fill was published as, if it was. */
  published(): DiskEntry | undefined;
  /** Called the moment the fill is known lost, before anyone waiting hears of it. */
  onFailed(): void;
}

/** The file being followed: reads of body bytes already there, open while anyone reads. */
class FollowedFile {
  private users = 1;

  constructor(
    private readonly fh: FileHandle,
    private readonly offset: number,
  ) {}

  async read(position: number, length: number): Promise<Buffer> {
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await this.fh.read(buf, got, length - got, this.offset + position + got);
      if (bytesRead === 0) throw new Error('cache file shorter than written');
      got += bytesRead;
    }
    return buf;
  }

  stat(): Promise<{ size: number; nlink: number }> {
    return this.fh.stat();
  }

  retain(): void {
    this.users++;
  }

  release(): void {
    if (--this.users === 0) void this.fh.close().catch(() => undefined);
  }
}

export class RemoteFill extends FillProgress {
  readonly id: EntryIdentity;
  readonly keepsInMemory: boolean;
  /** Resolves once the file is open (rejects RemoteFillLost if it never could be). */
  readonly opened: Promise<void>;
  /** Resolves when every byte is there: with the whole body if it is kept in memory. */
  readonly bytes: Promise<Buffer | undefined>;
  readonly done: Promise<void>;
  /** Set by a purge: the bytes go to those already waiting, but not into the memory tier. */
  purged = false;
  /** Every byte was already there when this process first looked: its requests are served from cache. */
  completeAtOpen = false;
  private file: FollowedFile | undefined;
  private aborted: Error | undefined;

  constructor(private readonly opts: RemoteFillOptions) {
    super();
    const f = opts.fill;
    this.id = { key: f.key, etag: f.etag, owner: f.owner, size: f.size, cachedAt: f.cachedAt };
    this.keepsInMemory = opts.keepInMemory;
    this.opened = this.openFile();
    this.bytes = this.opened.then(() => this.follow()).catch((err: unknown) => this.fail(err));
    this.done = this.bytes.then(
      () => undefined,
      () => undefined,
    );
    this.opened.catch(() => undefined);
    this.bytes.catch(() => undefined);
  }

  /** The file, for FollowReader (which retains it while it reads). */
  get slot(): FollowedFile {
    if (!this.file) throw new Error('the followed file is not open');
    return this.file;
  }

  private async openFile(): Promise<void> {
    const { fill } = this.opts;
    const since = performance.now();
    let wait = FIRST_POLL_MS;
    for (;;) {
      this.check();
      try {
        this.file = new FollowedFile(await open(this.opts.path, 'r'), fill.offset);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new RemoteFillLost((err as Error).message);
      }
      // Renamed into place already: read the published file.
      const published = this.opts.published();
      if (published) {
        try {
          this.file = new FollowedFile(await open(published.file, 'r'), published.offset);
          break;
        } catch {
          throw new RemoteFillLost('evicted as soon as published');
        }
      }
      // Registered but not created yet (the writer creates it with the first bytes).
      if (!this.opts.running()) throw new RemoteFillLost('given up before it started');
      if (!this.opts.alive(fill)) throw new RemoteFillLost('its process is gone');
      if (performance.now() - since > this.opts.stallMs) throw new RemoteFillLost('it never started');
      await sleep(wait);
      wait = Math.min(wait * 2, MAX_POLL_MS);
    }
    try {
      await this.progress();
    } catch (err) {
      this.file.release();
      throw new RemoteFillLost((err as Error).message);
    }
    this.completeAtOpen = this.finished;
  }

  /** One look at the file; true when something new arrived. */
  private async progress(): Promise<{ grew: boolean; unlinked: boolean }> {
    const { size, nlink } = await this.slot.stat();
    const have = Math.min(this.id.size, Math.max(0, size - this.opts.fill.offset));
    const grew = have > this.written;
    if (grew) this.written = have;
    if (this.written >= this.id.size) this.finished = true;
    if (grew || this.finished) this.wake();
    return { grew, unlinked: nlink === 0 };
  }

  private async follow(): Promise<Buffer | undefined> {
    const file = this.slot;
    try {
      let last = performance.now();
      let wait = FIRST_POLL_MS;
      while (!this.finished) {
        this.check();
        await sleep(wait);
        const { grew, unlinked } = await this.progress();
        if (this.finished) break;
        if (grew) {
          // Bytes keep coming: look a little more often, not at once every millisecond (an fstat each).
          last = performance.now();
          wait = Math.max(FIRST_POLL_MS, wait / 2);
          continue;
        }
        if (unlinked) throw new RemoteFillLost('its writer gave it up');
        if (!this.opts.alive(this.opts.fill)) throw new RemoteFillLost('its process is gone');
        if (performance.now() - last > this.opts.stallMs) throw new RemoteFillLost('stalled');
        wait = Math.min(wait * 2, MAX_POLL_MS);
      }
      return this.keepsInMemory ? await file.read(0, this.id.size) : undefined;
    } finally {
      // After the requests that joined in this turn have taken their own hold (FollowReader retains
      // the file right after `opened`), so the file is not closed under them.
      setImmediate(() => file.release());
    }
  }

  private check(): void {
    if (this.aborted) throw this.aborted;
  }

  private fail(err: unknown): never {
    this.failure = err instanceof Error ? err : new Error(String(err));
    this.opts.onFailed();
    this.wake();
    throw this.failure;
  }

  /** Stops following (shutdown). */
  abort(reason: Error): void {
    this.aborted = reason;
  }
}
