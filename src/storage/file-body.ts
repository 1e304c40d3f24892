// A file's bytes [start, end) as a Readable, which can also send itself straight to a Writable
// (`sendTo`): pread into a small ring of pooled 1 MiB buffers, each written to the destination and
// reused once that write has completed. That skips the stream layers between the file and the
// socket and the fresh buffer per read (page faults, GC) that fs.createReadStream costs.
// With a digest check, every byte goes through it and the last read is held back until it passes.
import type { FileHandle } from 'node:fs/promises';
import { Readable, type Writable } from 'node:stream';
import type { DigestCheck } from './blob-digest.js';
import type { BufferPool } from './buffer-pool.js';

/** Reads of the ring in flight or queued on the socket, at most: 4 MiB per response. */
const RING = 4;

/** A body that can write itself to a destination faster than a pipe would. */
export interface DirectBody {
  /** Writes every byte to `dest` (which it does not end), then destroys itself; rejects on failure. */
  sendTo(dest: Writable): Promise<void>;
}

export function isDirectBody(body: unknown): body is Readable & DirectBody {
  return body instanceof FileBody;
}

export interface FileBodyOptions {
  signal?: AbortSignal | undefined;
  /** Fed every byte; its finish() runs before the last bytes are handed out, and a throw fails the body. */
  check?: DigestCheck | undefined;
}

export class FileBody extends Readable implements DirectBody {
  private pos: number;
  private sending = false;
  private readonly signal: AbortSignal | undefined;
  private readonly check: DigestCheck | undefined;

  constructor(
    private readonly fh: FileHandle,
    start: number,
    private readonly end: number,
    private readonly buffers: BufferPool,
    opts: FileBodyOptions = {},
  ) {
    super({ highWaterMark: 1024 * 1024 });
    this.pos = start;
    this.signal = opts.signal;
    this.check = opts.check;
    this.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Feeds the check with bytes just read; at the end of the range, throws if the whole read did not match. */
  private checked(buf: Buffer): Buffer {
    if (this.check) {
      this.check.update(buf);
      if (this.pos >= this.end) this.check.finish();
    }
    return buf;
  }

  // While sending, failures are reported by sendTo's promise: an 'error' event nobody listens to
  // would crash the process.
  private readonly onAbort = (): void => {
    this.destroy(this.sending ? undefined : this.signal?.reason instanceof Error ? this.signal.reason : new Error('aborted'));
  };

  /** The plain stream path (copies, multipart concatenation): a fresh buffer per read, since the consumer keeps it. */
  override _read(size: number): void {
    const want = Math.min(Math.max(size, 64 * 1024), 1024 * 1024, this.end - this.pos);
    if (want <= 0) {
      this.push(null);
      return;
    }
    const buf = Buffer.allocUnsafe(want);
    this.fh.read(buf, 0, want, this.pos).then(
      ({ bytesRead }) => {
        if (bytesRead === 0) {
          this.destroy(new Error('file shrank while being read'));
          return;
        }
        this.pos += bytesRead;
        let out: Buffer;
        try {
          out = this.checked(bytesRead === want ? buf : buf.subarray(0, bytesRead));
        } catch (err) {
          this.destroy(err as Error);
          return;
        }
        this.push(out);
      },
      (err: Error) => this.destroy(err),
    );
  }

  async sendTo(dest: Writable): Promise<void> {
    if (this.sending || this.readableDidRead) throw new Error('FileBody: already being read');
    this.sending = true;
    const ring: Buffer[] = [];
    const written: (Promise<void> | undefined)[] = [];
    let gone: Error | undefined;
    const onClose = (): void => {
      gone ??= new Error('destination closed before the body was sent');
    };
    dest.once('close', onClose);
    try {
      for (let i = 0; this.pos < this.end; i++) {
        const slot = i % RING;
        // A buffer is reused only once the destination is done with it (its write callback ran).
        await written[slot];
        if (gone) throw gone;
        if (this.destroyed) throw new Error('body destroyed while being sent');
        const buf = (ring[slot] ??= this.buffers.take());
        const want = Math.min(buf.length, this.end - this.pos);
        const { bytesRead } = await this.fh.read(buf, 0, want, this.pos);
        if (bytesRead === 0) throw new Error('file shrank while being read');
        this.pos += bytesRead;
        const out = this.checked(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead));
        written[slot] = new Promise<void>((resolve, reject) => {
          dest.write(out, (err) => (err ? reject(err) : resolve()));
        });
        // Rejections are taken when the slot comes round again or at the end.
        written[slot].catch(() => undefined);
      }
      await Promise.all(written);
    } catch (err) {
      this.destroy();
      throw err;
    } finally {
      dest.off('close', onClose);
      // Buffers a failed socket may still hold are dropped, not reused.
      const settled = await Promise.allSettled(written);
      ring.forEach((buf, slot) => {
        if (settled[slot]?.status !== 'rejected') this.buffers.give(buf);
      });
    }
    this.destroy();
  }

  override _destroy(err: Error | null, cb: (error?: Error | null) => void): void {
    this.signal?.removeEventListener('abort', this.onAbort);
    this.fh.close().then(
      () => cb(err),
      (closeErr: Error) => cb(err ?? closeErr),
    );
  }
}
