// What a fill has made readable so far, and the readers waiting for more: the part a fill from storage
// (fill.ts) and a fill followed in another process's file (remote-fill.ts) share.
export abstract class FillProgress {
  /** Body bytes readable so far. */
  written = 0;
  protected finished = false;
  protected failure: Error | undefined;
  private readonly waiters = new Set<() => void>();

  /** Every byte is readable. */
  get complete(): boolean {
    return this.finished;
  }

  /** Resolves once at least `n` body bytes are readable (or all of them are); rejects if the fill failed. */
  async waitFor(n: number): Promise<void> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.written >= n || this.finished) return;
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
  }

  /** Wakes every reader waiting, to look at the progress again. */
  protected wake(): void {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiting) wake();
  }
}
