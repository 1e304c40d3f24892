// Request bodies: `Expect: 100-continue` (the client waits for our go-ahead, so a request refused by
// its headers never uploads its body) and piping the body into transforms without tying req's fate
// to theirs.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { S3Error } from '../errors/s3-errors.js';
import { expectsContinue } from '../http/expect-continue.js';

const waiting = new WeakMap<IncomingMessage, ServerResponse>();

/** Called for every request: remembers who must be told "100 Continue" before we read the body. */
export function trackContinue(req: IncomingMessage, res: ServerResponse): void {
  if (expectsContinue(req)) waiting.set(req, res);
}

/** Sends "100 Continue" if the client is waiting for it; call right before reading the body. */
export function acceptBody(req: IncomingMessage): void {
  const res = waiting.get(req);
  if (!res) return;
  waiting.delete(req);
  if (!res.headersSent) res.writeContinue();
}

/** True when the client was never told to send its body: nothing is coming, there is nothing to drain. */
export function bodyWithheld(req: IncomingMessage): boolean {
  return waiting.has(req);
}

/**
 * req -> stages, where a failing stage never destroys req itself: the socket must survive so that the
 * error response (SignatureDoesNotMatch, BadDigest...) reaches the client.
 */
export function requestBody(req: IncomingMessage, stages: [Transform, ...Transform[]]): Readable {
  const [first] = stages;
  const last = stages.length === 1 ? first : (pipeline(stages as unknown as [Transform, Transform], () => undefined) as Transform);
  req.on('error', (err) => first.destroy(err));
  req.on('aborted', () => first.destroy(new S3Error('IncompleteBody')));
  acceptBody(req);
  req.pipe(first);
  return last;
}

/**
 * Reads a small body (at most `limit` bytes by its declared length) into one buffer, without stream
 * stages. A body longer than `limit` contradicts its length: IncompleteBody, as is a client that goes away.
 */
export function readSmallBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onAborted);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        done();
        req.pause();
        reject(new S3Error('IncompleteBody', 'The request body is longer than its declared length.'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onAborted = (): void => {
      done();
      reject(new S3Error('IncompleteBody'));
    };
    const onError = (err: Error): void => {
      done();
      reject(err);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('aborted', onAborted);
    req.on('error', onError);
    acceptBody(req);
    // A request paused while it waited for the upload budget (storage/upload-buffers.ts) flows again.
    req.resume();
  });
}
