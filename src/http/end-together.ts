// Answers whose bytes are all in memory (a CDN hit, a small S3 object, an S3 XML answer, the first
// bytes of a proxied answer) are written together at the end of the event loop's turn (setImmediate:
// after every request and origin answer that turn's poll read was handled), not one by one as each is
// made: the same writes, one per answer, back to back.
//
// Why: a client on the same host (a reverse proxy in front of s3edge, a local app, the bench's wrk) is
// woken by the first answer and finds the others ready; written one by one, each answer had to wake it
// again while the next request was being worked on, and on a virtual machine every such wake-up is an
// interrupt between processors that the writing process pays for in its socket write (docs/ARCHITECTURE.md
// "Answers ended together"). The cost: an answer waits for the rest of its turn's work, at most
// MAX_TOGETHER answers (under load, about what it would have waited in the queue anyway; alone, one
// setImmediate).
//
// Headers are written by the caller first (writeHead's checks throw in the caller's context); only the
// end (or the proxy's first write) is deferred. An answer whose client left meanwhile ends as any write
// to a closed socket does.
import type { ServerResponse } from 'node:http';

/** Past this many answers waiting, they are written at once: a bound on what one answer waits for. */
export const MAX_TOGETHER = 64;

/** A response to end with its body, or a write of the caller's own (the proxy's, with its backpressure). */
type Pending = ServerResponse | (() => void);

let pending: Pending[] = [];
let bodies: (Buffer | string | undefined)[] = [];
let scheduled = false;

function writePending(): void {
  const writing = pending;
  const writingBodies = bodies;
  pending = [];
  bodies = [];
  let thrown: unknown;
  for (let i = 0; i < writing.length; i++) {
    const p = writing[i] as Pending;
    if (typeof p === 'function') {
      try {
        p();
      } catch (err) {
        // A bug in a caller's write must not leave the others unwritten: thrown once they are.
        thrown ??= err;
      }
      continue;
    }
    try {
      p.end(writingBodies[i]);
    } catch (err) {
      // Nothing of it is known to have reached the client: a short read, never a short success.
      p.destroy(err as Error);
    }
  }
  if (thrown !== undefined) throw thrown;
}

function writeAtTurnEnd(): void {
  scheduled = false;
  writePending();
}

function queue(p: Pending, body: Buffer | string | undefined): void {
  pending.push(p);
  bodies.push(body);
  if (pending.length >= MAX_TOGETHER) writePending();
  else if (!scheduled) {
    scheduled = true;
    setImmediate(writeAtTurnEnd);
  }
}

/** Ends `res` (its status and headers set) with `body` at the end of this turn of the event loop, with the others. */
export function endTogether(res: ServerResponse, body?: Buffer | string): void {
  queue(res, body);
}

/** Runs `write` (a write of an answer's bytes) at the end of this turn of the event loop, with the others. */
export function writeTogether(write: () => void): void {
  queue(write, undefined);
}
