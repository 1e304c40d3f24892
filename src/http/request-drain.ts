// Before an early answer (an S3 error, a refused upload), the rest of the request body is read and
// discarded, so a client still sending it can read our answer instead of a reset, and the
// connection stays usable. Past a bound (2 s, and 8 MiB or the announced size, see drainLimitsFor)
// we stop and the answer closes the connection instead.
import type { IncomingMessage } from 'node:http';

const DRAIN_LIMIT_BYTES = 8 * 1024 * 1024;
const DRAIN_LIMIT_MS = 2000;

/**
 * The limits for a body that announced `declared` bytes: all of it when we could have stored that
 * much (fetch and browsers cannot wait for 100 Continue, and a reset hides our answer from them),
 * else 8 MiB. The 2 s bound holds either way, so a slow sender still gets the connection closed.
 */
export function drainLimitsFor(declared: number | undefined, maxBytes: number): { bytes: number; ms: number } {
  const bytes = declared !== undefined && declared <= maxBytes ? Math.max(declared, DRAIN_LIMIT_BYTES) : DRAIN_LIMIT_BYTES;
  return { bytes, ms: DRAIN_LIMIT_MS };
}

/** Resolves true once the body ended, false if it was cut short (over a limit, or the client left). */
export function drainRequest(req: IncomingMessage, limits = { bytes: DRAIN_LIMIT_BYTES, ms: DRAIN_LIMIT_MS }): Promise<boolean> {
  if (req.complete || req.readableEnded) return Promise.resolve(true);
  if (req.destroyed) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    let drained = 0;
    const finish = (complete: boolean): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onClose);
      if (!complete) req.pause();
      resolve(complete);
    };
    const onData = (chunk: Buffer): void => {
      drained += chunk.length;
      if (drained > limits.bytes) finish(false);
    };
    const onEnd = (): void => finish(true);
    const onClose = (): void => finish(req.complete);
    const timer = setTimeout(() => finish(false), limits.ms);
    // Whatever was consuming the body (the multipart parser) lets go of it first.
    req.unpipe();
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.once('error', onClose);
    req.resume();
  });
}
