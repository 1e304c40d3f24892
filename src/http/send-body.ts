// Writing a response's status, headers and body (a buffer from memory, or a stream from a cache
// file, a fill in progress or storage), counting the body bytes handed to the socket: the CDN's
// answers and the API's asset downloads. A body that fails
// after the headers went out destroys the socket: the client sees a short read, never a short success.
import type { ServerResponse } from 'node:http';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';

class ByteCounter extends Transform {
  bytes = 0;

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    cb(null, chunk);
  }
}

function isClientGone(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNRESET' || code === 'EPIPE';
}

/** Resolves with the body bytes written once the response is over, however it ended; never rejects. */
export async function sendBody(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
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
    try {
      await finished(res);
      return body.length;
    } catch {
      // The client left before the end: how much of the buffer reached it is unknown.
      return 0;
    }
  }
  const counter = new ByteCounter();
  try {
    await pipeline(body, counter, res);
  } catch (err) {
    // A client that went away is routine; a storage or cache failure is not.
    if (!res.destroyed || !isClientGone(err)) log.warn({ err }, 'response body failed mid-response');
    res.destroy();
  }
  return counter.bytes;
}
