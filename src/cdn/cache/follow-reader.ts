// A byte range of a body being filled into a disk slot, read back as the fill writes it: requests
// that miss (the first one and any that join it) stream the object while it is cached, at their own
// pace, with one storage read between them. The slot's file stays open until every reader is done.
import { Readable } from 'node:stream';
import { DiskWriteError } from './fill.js';
import { RemoteFillLost } from './remote-fill.js';

/** A fill as a reader follows it: a local one (fill.ts) or another process's (remote-fill.ts). */
export interface FollowedFill {
  readonly written: number;
  waitFor(n: number): Promise<void>;
}

/** The file the fill writes: body bytes already written, open while anyone reads it. */
export interface FollowedFile {
  read(position: number, length: number): Promise<Buffer>;
  retain(): void;
  release(): void;
}

const READ_BYTES = 1024 * 1024;

export class FollowReader extends Readable {
  private pos: number;
  /** The rest of the range read from storage, once the fill could not write the disk. */
  private rest: AsyncIterator<Buffer> | undefined;

  /**
   * Bytes [start, end) of the body; `end` is exclusive. `reopen` opens bytes [from, end) in storage:
   * used when the fill fails on the disk (full) or another process's fill is lost, so the response
   * goes on uncached.
   */
  constructor(
    private readonly fill: FollowedFill,
    private readonly slot: FollowedFile,
    start: number,
    private readonly end: number,
    private readonly reopen?: (from: number) => Promise<Readable>,
  ) {
    super({ highWaterMark: READ_BYTES });
    this.pos = start;
    slot.retain();
  }

  override _read(): void {
    if (this.pos >= this.end) {
      this.push(null);
      return;
    }
    if (this.rest) {
      this.rest.next().then(({ done, value }) => {
        if (this.destroyed) return;
        if (done) {
          this.push(null);
          return;
        }
        this.pos += value.length;
        this.push(value);
      }, (err: Error) => this.destroy(err));
      return;
    }
    this.fill
      .waitFor(this.pos + 1)
      .then(() => this.slot.read(this.pos, Math.min(this.fill.written, this.end, this.pos + READ_BYTES) - this.pos))
      .then(
        (buf) => {
          if (this.destroyed) return;
          this.pos += buf.length;
          this.push(buf);
        },
        (err: Error) => this.fallBack(err),
      );
  }

  private fallBack(err: Error): void {
    if (!(err instanceof DiskWriteError || err instanceof RemoteFillLost) || !this.reopen || this.destroyed) {
      this.destroy(err);
      return;
    }
    this.reopen(this.pos).then((body) => {
      if (this.destroyed) {
        body.destroy();
        return;
      }
      this.rest = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
      this._read();
    }, (e: Error) => this.destroy(e));
  }

  override _destroy(err: Error | null, cb: (error?: Error | null) => void): void {
    void this.rest?.return?.();
    this.slot.release();
    cb(err);
  }
}
