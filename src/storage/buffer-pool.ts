// Reusable 1 MiB I/O buffers, owned by a storage backend. Fresh large buffers are slow on this VM
// (every first touch of a page faults), and buffers held by V8 objects across scavenges get
// promoted with their external memory and push V8 into full GCs; a small free list avoids both.
export const IO_BUFFER_BYTES = 1024 * 1024;

export class BufferPool {
  private readonly free: Buffer[] = [];

  /** `kept`: idle buffers kept at most (the rest are left to the GC). */
  constructor(private readonly kept: number) {}

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(IO_BUFFER_BYTES);
  }

  /** Only once nothing (a pending write, a socket) still reads the buffer. */
  give(buf: Buffer): void {
    if (this.free.length < this.kept) this.free.push(buf);
  }

  clear(): void {
    this.free.length = 0;
  }
}
