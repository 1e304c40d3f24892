// Counts an upload's file bytes as they stream, stops the stream the moment it passes a limit (the size
// limit, what the credit reservation pays for, what the storage quota reservation leaves room for), and
// keeps its first bytes for sniffing.
import { Transform, type TransformCallback } from 'node:stream';
import { SNIFF_BYTES } from './content-safety.js';

/** The file passed a limit; `size` is how many bytes had arrived by then (a lower bound). */
export class UploadLimitError extends Error {
  constructor(
    readonly limit: 'size' | 'credits' | 'quota',
    readonly size: number,
  ) {
    super(limit === 'size' ? 'file exceeds the size limit' : limit === 'credits' ? 'file exceeds the reserved credits' : 'file exceeds the storage quota');
    this.name = 'UploadLimitError';
  }
}

export class UploadMeter extends Transform {
  private seen = 0;
  private readonly headChunks: Buffer[] = [];
  private headBytes = 0;

  constructor(private readonly limits: { maxSize: number; maxPaidBytes: number; maxQuotaBytes?: number }) {
    super({ highWaterMark: 1024 * 1024 });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.seen += chunk.length;
    // Too large is answered as such even when credits would also have run out.
    if (this.seen > this.limits.maxSize) return cb(new UploadLimitError('size', this.seen));
    if (this.seen > this.limits.maxPaidBytes) return cb(new UploadLimitError('credits', this.seen));
    if (this.seen > (this.limits.maxQuotaBytes ?? Infinity)) return cb(new UploadLimitError('quota', this.seen));
    if (this.headBytes < SNIFF_BYTES) {
      const part = chunk.subarray(0, SNIFF_BYTES - this.headBytes);
      // A copy: the chunk's memory may be a pooled buffer reused after this call.
      this.headChunks.push(Buffer.from(part));
      this.headBytes += part.length;
    }
    cb(null, chunk);
  }

  /** The first (up to SNIFF_BYTES) bytes seen. */
  head(): Buffer {
    return Buffer.concat(this.headChunks, this.headBytes);
  }

  get size(): number {
    return this.seen;
  }
}
