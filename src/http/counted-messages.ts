// Request and response classes for our http(s) servers (`createServer({ IncomingMessage, ServerResponse })`)
// that count body bytes into a counter a handler attaches: the bytes node reads from the client
// (whoever consumes them: a handler, a drain) and the body bytes handed to the response. Methods on
// the prototype, not overrides on each instance: a request that attaches nothing pays one branch.
import { IncomingMessage, ServerResponse } from 'node:http';

export interface BodyCounter {
  bytesIn: number;
  bytesOut: number;
}

function bodyBytes(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}

export class CountedRequest extends IncomingMessage {
  counter: BodyCounter | undefined = undefined;

  override push(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (this.counter !== undefined) this.counter.bytesIn += bodyBytes(chunk, encoding);
    return super.push(chunk, encoding);
  }
}

export class CountedResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  counter: BodyCounter | undefined = undefined;

  override write(chunk: unknown, encoding?: unknown, cb?: unknown): boolean {
    if (this.counter !== undefined) this.counter.bytesOut += bodyBytes(chunk, encoding);
    return (super.write as (...args: unknown[]) => boolean)(chunk, encoding, cb);
  }

  override end(chunk?: unknown, encoding?: unknown, cb?: unknown): this {
    if (this.counter !== undefined) this.counter.bytesOut += bodyBytes(chunk, encoding);
    return (super.end as (...args: unknown[]) => this)(chunk, encoding, cb);
  }
}

/** The classes to give node's createServer (http and https alike). */
export const COUNTED_MESSAGES = { IncomingMessage: CountedRequest, ServerResponse: CountedResponse } as const;

/** Counts `req`'s and `res`'s body bytes into `counter` from now on; false when they are not ours (nothing counted). */
export function countBodies(req: IncomingMessage, res: ServerResponse, counter: BodyCounter): boolean {
  if (!(req instanceof CountedRequest) || !(res instanceof CountedResponse)) return false;
  req.counter = counter;
  res.counter = counter;
  return true;
}

/** What counts `res`'s body, if anything. */
export function counterOf(res: ServerResponse): BodyCounter | undefined {
  return res instanceof CountedResponse ? res.counter : undefined;
}
