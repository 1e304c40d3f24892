// Writing an answer of the proxy's response cache (response-cache.ts): a stored answer found by
// lookup(), or the origin's answer as store() hands it back, read from the fill. The stored headers
// are replayed with our Via and X-Cache (HIT, MISS, EXPIRED), like the CDN says where bytes came from.
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { headersFrom } from '../http/request-target.js';
import { sendBody } from '../http/send-body.js';
import { VIA } from './forward-headers.js';
import type { CachedAnswer } from './response-cache.js';

/** Resolves with the body bytes written; never rejects once the headers are out. */
export async function sendCached(res: ServerResponse, answer: CachedAnswer, log: Pick<Logger, 'warn'>): Promise<number> {
  const via = answer.headers.via;
  const headers = headersFrom(answer.headers);
  headers.via = via ? `${via}, ${VIA}` : VIA;
  headers['x-cache'] = answer.cacheStatus;
  if (answer.body === null) {
    res.writeHead(answer.status, headers);
    res.end();
    return 0;
  }
  return sendBody(res, answer.status, headers, answer.body, log);
}
