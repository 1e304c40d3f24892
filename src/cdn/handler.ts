// The CDN surface: requests whose Host is the configured CDN hostname. Filled in by the issue-5 work
// (public assets and signed URLs straight from storage); issue 6 adds the edge cache and request log.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from '../context.js';

export type CdnHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createCdnHandler(_ctx: AppContext): CdnHandler {
  return async (_req, res) => {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
    res.end('Not Found\n');
  };
}

/** True when the Host header (port ignored) names the CDN hostname. */
export function isCdnHost(host: string | undefined, cdnHostname: string): boolean {
  if (!host) return false;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return name === cdnHostname || name === `${cdnHostname}.`;
}
