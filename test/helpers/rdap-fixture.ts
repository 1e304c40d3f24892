// A real RDAP server on loopback (node:http, 127.0.0.1, port 0) whose answer is chosen per domain name:
// registered, available, rate limited, failing, slow, garbage or oversize. It counts the requests per
// name (single-flight and cache assertions) and writes RFC 9224 bootstrap files that point at it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';

export type RdapBehaviour =
  | { kind: 'registered' }
  /** A 200 domain object for another name. */
  | { kind: 'wrong-name' }
  | { kind: 'available' }
  | { kind: 'rate-limited'; retryAfterSeconds?: number }
  | { kind: 'server-error'; status?: number }
  /** Answers registered after `delayMs`, or never when it is absent. */
  | { kind: 'slow'; delayMs?: number }
  /** 200 whose body is not RDAP: not JSON, or JSON of another object class. */
  | { kind: 'garbage'; body?: string }
  /** 200 with a body of `bytes`, declared in Content-Length or sent chunked. */
  | { kind: 'oversize'; bytes: number; declareLength?: boolean }
  | { kind: 'redirect'; location: string; status?: number };

export interface RdapFixture {
  /** Base RDAP URL, ending with `/` (`http://127.0.0.1:<port>/rdap/`). */
  baseUrl: string;
  origin: string;
  set(name: string, behaviour: RdapBehaviour): void;
  /** Requests received for `domain/<name>`. */
  count(name: string): number;
  total(): number;
  /** Headers of the last request per name. */
  lastHeaders(name: string): IncomingMessage['headers'] | undefined;
  /** Serve any path with this status and body (a bootstrap file, say). */
  serve(path: string, status: number, body: string, contentType?: string): void;
  /** Writes an RFC 9224 DNS bootstrap file mapping `tlds` to this server; returns the path. */
  writeBootstrap(file: string, tlds: string[]): string;
  close(): Promise<void>;
}

const RDAP_JSON = 'application/rdap+json';

export function domainObject(name: string): Record<string, unknown> {
  return {
    rdapConformance: ['rdap_level_0'],
    objectClassName: 'domain',
    handle: `${name.replace(/\./g, '_').toUpperCase()}-FIXTURE`,
    // Registries answer in upper case (Verisign does): matched case-insensitively.
    ldhName: name.toUpperCase(),
    status: ['active'],
    events: [{ eventAction: 'registration', eventDate: '2020-01-01T00:00:00Z' }],
  };
}

export function bootstrapJson(tlds: string[], baseUrl: string): Record<string, unknown> {
  return {
    description: 'RDAP bootstrap file for Domain Name System registrations',
    publication: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    services: [[tlds, [baseUrl]]],
    version: '1.0',
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': RDAP_JSON, 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function answer(res: ServerResponse, name: string, b: RdapBehaviour, pending: Set<NodeJS.Timeout>): void {
  switch (b.kind) {
    case 'registered':
      return sendJson(res, 200, domainObject(name));
    case 'wrong-name':
      return sendJson(res, 200, domainObject(`other-${name}`));
    case 'available':
      return sendJson(res, 404, { errorCode: 404, title: 'Not Found', description: [`${name} is not registered`] });
    case 'rate-limited':
      return sendJson(res, 429, { errorCode: 429, title: 'Too Many Requests' }, { 'retry-after': String(b.retryAfterSeconds ?? 30) });
    case 'server-error':
      return sendJson(res, b.status ?? 500, { errorCode: b.status ?? 500, title: 'Internal Error' });
    case 'slow': {
      if (b.delayMs === undefined) return; // never: held until the fixture closes
      const timer = setTimeout(() => {
        pending.delete(timer);
        sendJson(res, 200, domainObject(name));
      }, b.delayMs);
      pending.add(timer);
      return;
    }
    case 'garbage': {
      const body = b.body ?? '<html>not rdap';
      res.writeHead(200, { 'content-type': RDAP_JSON, 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    case 'oversize': {
      res.writeHead(200, { 'content-type': RDAP_JSON, ...(b.declareLength === false ? {} : { 'content-length': String(b.bytes) }) });
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      let left = b.bytes;
      const more = (): void => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!res.write(chunk.subarray(0, n))) {
            res.once('drain', more);
            return;
          }
        }
        res.end();
      };
      res.on('error', () => undefined);
      more();
      return;
    }
    case 'redirect':
      res.writeHead(b.status ?? 302, { location: b.location, 'content-length': '0' });
      res.end();
      return;
  }
}

export async function startRdapFixture(opts: { defaultBehaviour?: RdapBehaviour } = {}): Promise<RdapFixture> {
  const behaviours = new Map<string, RdapBehaviour>();
  const counts = new Map<string, number>();
  const headers = new Map<string, IncomingMessage['headers']>();
  const statics = new Map<string, { status: number; body: string; contentType: string }>();
  const pending = new Set<NodeJS.Timeout>();
  let total = 0;

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const fixed = statics.get(path);
    if (fixed) {
      res.writeHead(fixed.status, { 'content-type': fixed.contentType, 'content-length': Buffer.byteLength(fixed.body) });
      res.end(fixed.body);
      return;
    }
    const match = /^\/rdap\/domain\/([^/]+)$/.exec(path);
    if (!match?.[1]) {
      sendJson(res, 400, { errorCode: 400, title: 'Bad Request' });
      return;
    }
    const name = decodeURIComponent(match[1]).toLowerCase();
    total++;
    counts.set(name, (counts.get(name) ?? 0) + 1);
    headers.set(name, req.headers);
    answer(res, name, behaviours.get(name) ?? opts.defaultBehaviour ?? { kind: 'available' }, pending);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  const baseUrl = `${origin}/rdap/`;

  return {
    baseUrl,
    origin,
    set: (name, behaviour) => void behaviours.set(name.toLowerCase(), behaviour),
    count: (name) => counts.get(name.toLowerCase()) ?? 0,
    total: () => total,
    lastHeaders: (name) => headers.get(name.toLowerCase()),
    serve: (path, status, body, contentType = 'application/json') => void statics.set(path, { status, body, contentType }),
    writeBootstrap(file, tlds) {
      writeFileSync(file, JSON.stringify(bootstrapJson(tlds, baseUrl)));
      return file;
    },
    async close() {
      for (const timer of pending) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
