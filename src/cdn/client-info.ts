// Who a CDN request comes from (issue 6): the client IP (X-Forwarded-For only from trusted proxies)
// and its country (a trusted proxy's country header, else GeoIP). To be implemented.
import type { IncomingMessage } from 'node:http';

export interface ClientInfo {
  ip: string;
  /** ISO 3166 alpha-2 code, or '' when unknown. */
  country: string;
}

export class ClientResolver {
  resolve(req: IncomingMessage): ClientInfo {
    return { ip: req.socket.remoteAddress ?? '', country: '' };
  }

  async close(): Promise<void> {}
}
