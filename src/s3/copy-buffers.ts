// The upload budget of a copy (CopyObject, UploadPartCopy). Its source must be opened in the tick of
// the lookup that found it (openObjectBody leases its blobs synchronously), so the reservation is
// taken in that tick when it is free; when it is not, the copy waits for it and looks the source up
// again.
import { reserveUploadBuffers, uploadBufferBytes } from '../storage/upload-buffers.js';
import type { Reservation } from '../storage/upload-budget.js';
import type { S3Request } from './operation.js';

export class CopyBuffers {
  private held: Reservation | undefined;
  /** The need `held` was taken for (the budget may clamp its bytes to the cap). */
  private heldFor = 0;
  private wanted = 0;

  constructor(private readonly r: S3Request) {}

  /**
   * True when the reservation covers a copy of `size` bytes, taken now if it is free; false: call
   * wait(), then look the source up again. `objectBody`: the copy is a whole object version, kept
   * inline when small.
   */
  cover(size: number, opts: { objectBody: boolean }): boolean {
    const { ctx } = this.r;
    const inline = opts.objectBody && size <= ctx.config.inlineObjectMaxBytes;
    const need = uploadBufferBytes(ctx, size, inline ? { inline: 'streamed' } : {});
    if (this.held && this.heldFor >= need) return true;
    this.release();
    const now = ctx.uploadBudget.tryReserve(need);
    if (now) {
      this.held = now;
      this.heldFor = need;
      return true;
    }
    this.wanted = need;
    return false;
  }

  /** Waits for the reservation cover() could not take (UploadBufferFull at the deadline). */
  async wait(): Promise<void> {
    this.held = await reserveUploadBuffers(this.r.ctx, this.wanted, { signal: this.r.signal });
    this.heldFor = this.wanted;
  }

  release(): void {
    this.held?.release();
    this.held = undefined;
    this.heldFor = 0;
  }
}
