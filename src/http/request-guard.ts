// Checks every request of every door before its handler runs, and watches its body while it arrives:
//  - two Authorization or two Host headers are refused: Node keeps the first copy, a proxy in front of
//    us may have acted on the other, so the request means different things to each;
//  - a body must keep coming: fewer than `minBytesPerSecond` x `windowMs` bytes in the last window (a
//    stall, or a drip of a byte a second) ends the request with a 400 and a closed connection. Time in
//    which we were not reading (backpressure while storage is slow) is not counted against the client.
//  - the rule still holds once the door has answered (an early 401, a CDN 200 to a GET that carries
//    a body): Node then reads and discards the rest of the body so the connection can carry the next
//    request, and it would do so for as long as a drip lasts. We keep that keep-alive (an honest
//    client whose upload was refused early finishes sending and reuses the connection, and reads our
//    answer instead of a reset), but a body that falls below the rate is then cut by destroying the
//    socket: no second answer can be sent. Closing every connection whose answer ended before its
//    body would cost every such client its connection, and a client still sending could see a reset
//    in place of the answer it was sent.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The first of Authorization and Host that the raw headers repeat (lower-case name), if any. */
export function repeatedHeader(rawHeaders: readonly string[]): string | undefined {
  // On every request: names are compared by length first, lower-cased only when they may match.
  let host = false;
  let authorization = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') {
      if (host) return 'host';
      host = true;
    } else if (name.length === 13 && name.toLowerCase() === 'authorization') {
      if (authorization) return 'authorization';
      authorization = true;
    }
  }
  return undefined;
}

export interface BodyRateOptions {
  /** The window over which the rate is judged; also how long a stalled body may stall. */
  windowMs: number;
  minBytesPerSecond: number;
}

/** Whether the request declares a body (a non-zero length, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * Calls `onTimeout` once if the body of `req` arrives too slowly, with `answered` true when the
 * response had already ended (the caller can then only close the connection); stops by itself when
 * the body is complete or the connection is gone. Judged on the socket's byte count, sampled a few
 * times a window.
 */
export function watchBodyRate(
  req: IncomingMessage,
  res: ServerResponse,
  opts: BodyRateOptions,
  onTimeout: (answered: boolean) => void,
): void {
  if (!hasBody(req) || opts.windowMs <= 0) return;
  const socket = req.socket;
  const tick = Math.max(50, Math.min(1000, opts.windowMs / 4));
  const needed = (opts.minBytesPerSecond * opts.windowMs) / 1000;
  const over = (): boolean => req.complete || req.destroyed || socket.destroyed;
  // Samples of (time, bytes read so far) within the current window of active reading.
  // A monotonic clock: a wall-clock jump must neither cut every upload nor excuse a slow one.
  let samples: { at: number; bytes: number }[] = [{ at: performance.now(), bytes: socket.bytesRead }];
  const stop = (): void => clearInterval(timer);
  const timer = setInterval(() => {
    if (over()) return stop();
    const now = performance.now();
    // After the answer the rest of the body is only discarded: nothing of ours holds it back, so a
    // pause (a reader that let go of it without draining) no longer excuses the client.
    const answered = res.writableEnded;
    if (!answered && (req.isPaused() || socket.isPaused())) {
      // We are not reading: the client is not to blame for what does not arrive meanwhile.
      samples = [{ at: now, bytes: socket.bytesRead }];
      return;
    }
    samples.push({ at: now, bytes: socket.bytesRead });
    while (samples.length > 1 && now - (samples[1] as { at: number }).at >= opts.windowMs) samples.shift();
    const first = samples[0] as { at: number; bytes: number };
    if (now - first.at >= opts.windowMs && socket.bytesRead - first.bytes < needed) {
      stop();
      onTimeout(answered);
    }
  }, tick);
  timer.unref();
  // The response ending is not the end of the watch while the body still arrives (see the top).
  res.once('close', () => {
    if (over()) stop();
  });
}

/**
 * Writes a small early answer with `Connection: close`, then closes the socket once it is flushed (or
 * after a second): the rest of the body is never read.
 */
export function answerAndClose(res: ServerResponse, status: number, contentType: string, body: string): void {
  const socket = res.socket;
  if (!res.headersSent) {
    res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  }
  const close = (): void => {
    socket?.destroy();
  };
  res.once('finish', close);
  setTimeout(close, 1000).unref();
}
