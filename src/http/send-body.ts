// Writing a response's status, headers and body (a buffer from memory, or a stream from a cache
// file, a fill in progress or storage), counting the body bytes handed to the socket: the CDN's
// answers and the API's asset downloads. A body that fails
// after the headers went out destroys the socket: the client sees a short read, never a short success.
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';

/** How a relayed body ended: every byte out, or the body failed (its error), or the client left first. */
export interface Relayed {
  bytes: number;
  failure?: unknown;
}

/** The `failure` of a relay whose client left before the end. */
export const CLIENT_GONE = 'client-gone';

/**
 * Pipes `body` into `res` (whose headers are written), counting it. Plain pipe() rather than
 * pipeline() through a counting Transform: that made an AbortController and error objects per
 * response, which showed at small answers (bench --proxy). The two ends pipe() does not handle, a
 * failing body and a client that leaves, are reported; the caller then destroys both.
 */
export function relay(body: Readable, res: ServerResponse): Promise<Relayed> {
  return new Promise((resolve) => {
    let bytes = 0;
    body.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    body.once('error', (err) => resolve({ bytes, failure: err }));
    res.once('finish', () => resolve({ bytes }));
    res.once('close', () => {
      if (!res.writableFinished) resolve({ bytes, failure: CLIENT_GONE });
    });
    body.pipe(res);
  });
}

function isClientGone(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNRESET' || code === 'EPIPE';
}

/**
 * Once the response is over: `length` when it finished, else 0 (the client left before the end: how
 * much of the buffer reached it is unknown). A response emits 'close' either way, once; one listener
 * costs less than stream.finished's (eos registers seven, on a small CDN hit).
 */
function bufferSent(res: ServerResponse, length: number): Promise<number> {
  if (res.closed) return Promise.resolve(res.writableFinished ? length : 0);
  return new Promise((resolve) => res.once('close', () => resolve(res.writableFinished ? length : 0)));
}

/** Resolves with the body bytes written once the response is over, however it ended; never rejects. */
export async function sendBody(
  res: ServerResponse,
  status: number,
  /** An object, or flat `[name, value, ...]` (node's writeHead takes either). */
  headers: Record<string, string> | string[],
  body: Buffer | Readable,
  log: Pick<Logger, 'warn'>,
): Promise<number> {
  try {
    res.writeHead(status, headers);
  } catch (err) {
    // Never sent: the stream (a cache file, a fill's follower, storage) must still be let go.
    if (!Buffer.isBuffer(body)) body.destroy();
    throw err;
  }
  if (Buffer.isBuffer(body)) {
    res.end(body);
    return bufferSent(res, body.length);
  }
  const relayed = await relay(body, res);
  if (relayed.failure !== undefined) {
    // A client that went away is routine; a storage or cache failure is not.
    if (relayed.failure !== CLIENT_GONE && !isClientGone(relayed.failure)) log.warn({ err: relayed.failure }, 'response body failed mid-response');
    body.destroy();
    res.destroy();
  }
  return relayed.bytes;
}
