// What a process has built, closed in the reverse order of its building: each part pushes its closer as
// it is made (a part may use what was made before it, never what comes after), and close() pops them, the
// last made first. One stack serves the orderly stop and a start that fails half way alike.

export type Closer = () => unknown;

export class Closers {
  private readonly stack: Closer[] = [];

  /** `close` runs before every closer pushed earlier, after every one pushed later. */
  push(close: Closer): void {
    this.stack.push(close);
  }

  /**
   * Pops and awaits every closer, the last pushed first. One that fails does not keep the others from
   * running; the first failure is thrown once all have run. A second call finds nothing left to close.
   */
  async close(): Promise<void> {
    let failed: { err: unknown } | undefined;
    for (let close = this.stack.pop(); close; close = this.stack.pop()) {
      try {
        await close();
      } catch (err) {
        failed ??= { err };
      }
    }
    if (failed) throw failed.err;
  }
}
