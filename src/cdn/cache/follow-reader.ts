// A byte range of a body being filled into a disk slot, read back as the fill writes it: requests
// that miss (the first one and any that join it) stream the object while it is cached, at their own
// pace, with one storage read between them. The slot's file stays open until every reader is done.
import { Readable } from 'node:stream';
import type { DiskSlot } from './disk-tier.js';
import type { Fill } from './fill.js';

const READ_BYTES = 1024 * 1024;

export class FollowReader extends Readable {
  private pos: number;

  /** Bytes [start, end) of the body; `end` is exclusive. */
  constructor(
    private readonly fill: Fill,
    private readonly slot: DiskSlot,
    start: number,
    private readonly end: number,
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
    this.fill
      .waitFor(this.pos + 1)
      .then(() => this.slot.read(this.pos, Math.min(this.fill.written, this.end, this.pos + READ_BYTES) - this.pos))
      .then(
        (buf) => {
          if (this.destroyed) return;
          this.pos += buf.length;
          this.push(buf);
        },
        (err: Error) => this.destroy(err),
      );
  }

  override _destroy(err: Error | null, cb: (error?: Error | null) => void): void {
    this.slot.release();
    cb(err);
  }
}
