// `Expect: 100-continue`, recognised as node recognises it (it emits 'checkContinue' for these), so that
// every door that waits for its go-ahead and node agree on which requests wait for "100 Continue".
import type { IncomingMessage } from 'node:http';

/** `100-continue` among the expectations, in any case (aws-sdk-go sends `100-Continue`). */
export function expectsContinue(req: IncomingMessage): boolean {
  return /(?:^|\W)100-continue(?:$|\W)/i.test(req.headers.expect ?? '');
}
