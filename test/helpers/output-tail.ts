// The last `limit` characters of a child process's output, kept for error messages and for tests that
// read a server's log. Appending a line is O(line): the chunks are joined and cut only when they hold
// twice the limit. (Cutting a flat string on every line once it was full copied the whole limit per
// line: with a server's log line per request, 170 µs of the test process's CPU per request.)
export class OutputTail {
  private chunks: string[] = [];
  private length = 0;

  constructor(private readonly limit: number) {}

  add(s: string): void {
    this.chunks.push(s);
    this.length += s.length;
    if (this.length > 2 * this.limit) this.compact();
  }

  /** At most the last `limit` characters. */
  text(): string {
    this.compact();
    return this.chunks[0] ?? '';
  }

  private compact(): void {
    let all = this.chunks.join('');
    if (all.length > this.limit) all = all.slice(-this.limit);
    this.chunks = [all];
    this.length = all.length;
  }
}
