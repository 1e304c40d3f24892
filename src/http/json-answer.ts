// The small JSON answers of the operations endpoints (health, readiness, metrics refusals), written
// on the raw response outside fastify: never cached, never sniffed, no body for HEAD.
import type { IncomingMessage, ServerResponse } from 'node:http';

export function sendJson(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(body) + '\n';
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...extra,
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}
