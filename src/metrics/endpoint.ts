// GET /metrics on every listener: the request metrics with prom-client's process and Node.js metrics,
// then the gateway's own figures (the same as GET /api/v3/metrics), in the Prometheus text format.
// Open unless metrics.token is set; then `Authorization: Bearer <token>`, compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from '../context.js';
import { sendJson } from '../http/json-answer.js';
import { serverMetrics } from './cluster-metrics.js';

/** Digests of equal length whatever the inputs, so the comparison leaks neither content nor length. */
function sameToken(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function authorized(req: IncomingMessage, token: string): boolean {
  if (token === '') return true;
  const header = req.headers.authorization ?? '';
  return header.startsWith('Bearer ') && sameToken(header.slice(7), token);
}

export async function answerMetrics(req: IncomingMessage, res: ServerResponse, ctx: AppContext): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(req, res, 405, { status: 'error', message: 'metrics answers GET and HEAD only' }, { allow: 'GET, HEAD' });
    return;
  }
  if (!authorized(req, ctx.config.metrics.token)) {
    sendJson(req, res, 401, { status: 'error', message: 'metrics needs Authorization: Bearer <metrics.token>' }, { 'www-authenticate': 'Bearer' });
    return;
  }
  // A cluster's worker answers for every worker (cluster-metrics.ts).
  const { text } = await serverMetrics(ctx);
  res.writeHead(200, { 'content-type': ctx.requestMetrics.contentType, 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : text);
}
