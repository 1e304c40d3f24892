// Answers whose bytes are all in memory (a CDN hit, a small S3 object, an S3 XML answer) are ended
// together at the end of the event loop's turn (setImmediate: after every request that turn's poll
// read was handled), not one by one as each is made: the same writes, one per answer, back to back.
//
// Why: a client on the same host (a reverse proxy in front of s3edge, a local app, the bench's wrk) is
// woken by the first answer and finds the others ready; ended one by one, each answer had to wake it
// again while the next request was being worked on, and on a virtual machine every such wake-up is an
// interrupt between processors that the writing process pays for in its socket write (docs/ARCHITECTURE.md
// "Answers ended together"). The cost: an answer waits for the rest of its turn's requests, at most
// MAX_TOGETHER answers (under load, about what it would have waited in the queue anyway; alone, one
// setImmediate).
//
// Headers are written by the caller first (writeHead's checks throw in the caller's context); only the
// end is deferred. An answer whose client left meanwhile ends as any write to a closed socket does.
import type { ServerResponse } from 'node:http';

/** Past this many answers waiting, they are ended at once: a bound on what one answer waits for. */
export const MAX_TOGETHER = 64;

let responses: ServerResponse[] = [];
let bodies: (Buffer | string | undefined)[] = [];
let scheduled = false;

function endPending(): void {
  const ending = responses;
  const endingBodies = bodies;
  responses = [];
  bodies = [];
  for (let i = 0; i < ending.length; i++) {
    const res = ending[i] as ServerResponse;
    try {
      res.end(endingBodies[i]);
    } catch (err) {
      // Nothing of it is known to have reached the client: a short read, never a short success.
      res.destroy(err as Error);
    }
  }
}

function endAtTurnEnd(): void {
  scheduled = false;
  endPending();
}

/** Ends `res` (its status and headers set) with `body` at the end of this turn of the event loop, with the others. */
export function endTogether(res: ServerResponse, body?: Buffer | string): void {
  responses.push(res);
  bodies.push(body);
  if (responses.length >= MAX_TOGETHER) endPending();
  else if (!scheduled) {
    scheduled = true;
    setImmediate(endAtTurnEnd);
  }
}
