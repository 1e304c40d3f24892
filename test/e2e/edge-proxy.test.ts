// The edge reverse proxy end to end: the compiled server routes verified project hostnames (written
// into its data directory before it starts, as the projects service would) to loopback origins of this
// test (node:http, with a WebSocket echo), on the main and the CDN listener. Covered: streaming both
// ways (a 5 MiB upload hashed by the origin; a chunked echo whose every chunk reaches the origin and
// comes back before the next is sent; a response whose first bytes arrive before the origin writes the
// rest), the forwarding headers exactly (hop-by-hop ones gone, forged ones from an untrusted client
// ignored, a trusted proxy's chain kept), WebSocket echo, 502/504 pages that name nothing internal,
// the body limit while streaming, rules refusing before the origin, the response cache, a bucket
// origin, keep-alive reuse towards the origin, an unverified hostname not served, the default address
// policy (loopback, link-local, a name resolving to loopback: refused, the origin never reached), and
// the request log's rows.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket, type MessageEvent as WsMessageEvent } from 'undici';
import { eventually, query } from '../helpers/api.js';
import { addProjectHostnames, acceptWebSocket, echoWebSocket, loopbackAgent, urlOrigin } from '../helpers/edge.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer, type RunningServer } from '../helpers/server.js';

const MiB = 1024 * 1024;

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  remotePort: number;
  bytes: number;
  sha256?: string;
  complete: boolean;
}

/** A loopback origin that records every request (and every connection) it gets. */
class Origin {
  readonly seen: Seen[] = [];
  connections = 0;
  /** Body bytes the /echo route has received so far. */
  echoReceived = 0;
  /** Responses whose connection closed before they ended (the proxy let go of them). */
  closedEarly = 0;
  private releaseHold: (() => void) | undefined;
  private readonly server: Server;
  private readonly held = new Set<ServerResponse>();

  constructor() {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on('connection', () => this.connections++);
    this.server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
      this.seen.push(this.record(req));
      if ((req.url ?? '').startsWith('/refuse')) {
        socket.end('HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nX-Why: policy\r\n\r\nno\n');
        return;
      }
      acceptWebSocket(req, socket, { 'X-Seen-Forwarded-For': String(req.headers['x-forwarded-for'] ?? ''), 'X-Seen-Host': String(req.headers.host ?? '') });
      echoWebSocket(socket);
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  release(): void {
    this.releaseHold?.();
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private record(req: IncomingMessage): Seen {
    return { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, remotePort: req.socket.remotePort ?? 0, bytes: 0, complete: false };
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const seen = this.record(req);
    this.seen.push(seen);
    const hash = createHash('sha256');
    req.on('data', (c: Buffer) => {
      seen.bytes += c.length;
      hash.update(c);
    });
    req.on('end', () => {
      seen.complete = true;
      seen.sha256 = hash.digest('hex');
    });
    const path = (req.url ?? '').split('?')[0];
    res.on('close', () => {
      if (!res.writableFinished) this.closedEarly++;
    });
    switch (path) {
      case '/headers':
        req.resume();
        res.writeHead(200, [
          'Content-Type', 'application/json',
          'Connection', 'X-Origin-Hop',
          'X-Origin-Hop', 'dropped',
          'Keep-Alive', 'timeout=5',
          'X-Origin', 'kept',
          'Set-Cookie', 'a=1',
          'Set-Cookie', 'b=2',
          'Via', '1.1 upstream',
        ]);
        res.end(JSON.stringify({ rawHeaders: req.rawHeaders }));
        return;
      case '/sha':
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ bytes: seen.bytes, sha256: seen.sha256 }));
        });
        return;
      case '/echo':
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.flushHeaders();
        req.on('data', (c: Buffer) => {
          this.echoReceived += c.length;
          res.write(c);
        });
        req.on('end', () => res.end());
        return;
      case '/hold':
        this.held.add(res);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first\n');
        this.releaseHold = () => {
          this.held.delete(res);
          res.end('second\n');
        };
        return;
      case '/abort-length':
      case '/abort-chunked':
        // A body cut short: headers and a few bytes, then the connection is gone.
        req.resume();
        res.writeHead(200, path === '/abort-length' ? { 'content-length': '100000' } : {});
        res.write('partial');
        setTimeout(() => req.socket.destroy(), 50);
        return;
      case '/cacheable-big':
        // Storable, but bigger than the test server's disk tier (S3EDGE_CDN_CACHE_DISK_BYTES below).
        req.resume();
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'public, max-age=60', 'content-length': String(BIG.length) });
        res.end(BIG);
        return;
      case '/cacheable-cut':
        // Storable, then cut short: headers and a few bytes, then the connection is gone.
        req.resume();
        res.writeHead(200, { 'cache-control': 'public, max-age=60', 'content-length': '100000' });
        res.write('partial');
        setTimeout(() => req.socket.destroy(), 50);
        return;
      case '/cacheable':
        req.resume();
        res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=60', 'content-length': '7' });
        res.end('cached\n');
        return;
      case '/slow':
        // Never answers: the proxy's headers timeout must.
        this.held.add(res);
        return;
      default:
        req.resume();
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`ok ${req.method ?? ''} ${req.url ?? ''}\n`);
    }
  }
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A storable answer too big for the test server's cache tiers. */
const BIG = randomBytes(6 * MiB);
const origin = await new Origin().listen();
const kaOrigin = await new Origin().listen();
const refused = await closedPort();
const root = mkdtempSync(join(tmpdir(), 's3edge-edge-'));
const dataDir = join(root, 'data');
const ownerId = await addProjectHostnames(dataDir, 'edge-owner', [
  { hostname: 'app.test', origin: urlOrigin(origin.url) },
  { hostname: 'preserve.test', origin: urlOrigin(origin.url, true) },
  { hostname: 'ka.test', origin: urlOrigin(kaOrigin.url) },
  { hostname: 'limited.test', origin: urlOrigin(origin.url), rules: { maxBodyBytes: MiB } },
  { hostname: 'down.test', origin: urlOrigin(`http://127.0.0.1:${refused}`) },
  { hostname: 'unset.test', origin: null },
  { hostname: 'blocked.test', origin: urlOrigin(origin.url), rules: { blockIps: ['127.0.0.0/8'] } },
  { hostname: 'methods.test', origin: urlOrigin(origin.url), rules: { allowedMethods: ['GET', 'HEAD'] } },
  {
    hostname: 'rated.test',
    origin: urlOrigin(origin.url),
    rules: { rateLimit: { requestsPerSecond: 0.01, burst: 1, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 60 } },
  },
  { hostname: 'unverified.test', origin: urlOrigin(origin.url), verified: false },
]);
const server = await startServer({
  dataDir,
  env: {
    S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true',
    S3EDGE_EDGE_HEADERS_TIMEOUT_MS: '1000',
    S3EDGE_CDN_TRUSTED_PROXIES: '127.0.0.2',
    S3EDGE_CDN_LOG_FLUSH_INTERVAL_MS: '50',
    // Small tiers: a storable answer can be too big for them (/cacheable-big).
    S3EDGE_CDN_CACHE_DISK_BYTES: String(4 * MiB),
    S3EDGE_CDN_CACHE_MEMORY_ENTRY_MAX_BYTES: String(64 * 1024),
  },
});
t.teardown(async () => {
  await server.stop();
  await origin.close();
  await kaOrigin.close();
  rmSync(root, { recursive: true, force: true });
});
const mainPort = Number(new URL(server.url).port);

function get(host: string, target: string, opts: { headers?: [string, string][]; url?: string; from?: string; method?: string; body?: Buffer; chunked?: number } = {}): Promise<RawResponse> {
  return rawRequest(
    { url: opts.url ?? server.url, ...(opts.from ? { localAddress: opts.from } : {}) },
    {
      method: opts.method ?? 'GET',
      target,
      headers: [['Host', host], ...(opts.body && !opts.chunked ? ([['Content-Length', String(opts.body.length)]] as [string, string][]) : []), ...(opts.headers ?? [])],
      ...(opts.body ? { body: opts.body } : {}),
      ...(opts.chunked ? { httpChunkSize: opts.chunked } : {}),
    },
  );
}

/** The header values `name` (lower-case) in a raw header list. */
/** A raw WebSocket handshake to 127.0.0.1:`port` for `host`; resolves with all the server wrote once it closes. */
function upgradeRequest(port: number, host: string, path: string): Promise<string> {
  return new Promise<string>((resolve) => {
    const s = connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('close', () => resolve(got));
    s.on('error', () => undefined);
    s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
  });
}

function rawValues(raw: string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === name) out.push(raw[i + 1] as string);
  return out;
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

t.test('GET and HEAD are proxied on both listeners, path and query unchanged', async (t) => {
  const a = await get('app.test', '/some/path?x=1&y=%2F');
  t.equal(a.status, 200);
  t.equal(a.text, 'ok GET /some/path?x=1&y=%2F\n');
  t.equal(a.headers.via, '1.1 s3edge');
  const b = await get('APP.test:8080', '/a//b/../c', { url: server.cdnUrl });
  t.equal(b.status, 200, 'the CDN listener proxies project hostnames too (Host case and port aside)');
  t.equal(b.text, 'ok GET /a//b/../c\n', 'the request target is passed on byte for byte');
  const h = await get('app.test', '/head', { method: 'HEAD' });
  t.equal(h.status, 200);
  t.equal(h.body.length, 0);
});

t.test('a 5 MiB upload reaches the origin whole (content-length and chunked)', async (t) => {
  const body = randomBytes(5 * MiB);
  for (const [what, chunked] of [['content-length', undefined], ['chunked', 64 * 1024]] as const) {
    const res = await get('app.test', '/sha?check=1', { method: 'POST', body, ...(chunked ? { chunked } : {}), headers: [['Content-Type', 'application/octet-stream']] });
    t.equal(res.status, 200, what);
    t.same(JSON.parse(res.text), { bytes: body.length, sha256: sha(body) }, `${what}: the origin hashed exactly what was sent`);
  }
});

t.test('bodies stream both ways: each chunk reaches the origin and comes back before the next is sent', async (t) => {
  const chunks = Array.from({ length: 5 }, () => randomBytes(MiB));
  const before = origin.echoReceived;
  const req = httpRequest({ host: '127.0.0.1', port: mainPort, method: 'POST', path: '/echo', headers: { host: 'app.test', 'content-type': 'application/octet-stream' } });
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  const echoed: Buffer[] = [];
  let echoedBytes = 0;
  let sent = 0;
  let ended: Promise<void> | undefined;
  for (const chunk of chunks) {
    req.write(chunk);
    sent += chunk.length;
    if (!ended) {
      // The request goes to the origin with its first chunk; the origin answers at once.
      const res = await response;
      t.equal(res.statusCode, 200, 'the answer started before the body was sent');
      res.on('data', (c: Buffer) => {
        echoed.push(c);
        echoedBytes += c.length;
      });
      ended = new Promise<void>((resolve) => res.once('end', resolve));
    }
    // Nothing buffered whole: the origin has this chunk, and it is back, while the rest is unsent.
    await eventually(() => origin.echoReceived - before >= sent && echoedBytes >= sent, `chunk ending at ${sent} through both ways`);
  }
  req.end();
  await ended;
  t.equal(sha(Buffer.concat(echoed)), sha(Buffer.concat(chunks)), 'the echo is the upload, byte for byte');
  t.equal(origin.echoReceived - before, 5 * MiB);
});

t.test("the origin's first bytes reach the client before it writes the rest", async (t) => {
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: mainPort, path: '/hold', headers: { host: 'app.test' } }, resolve);
    req.once('error', reject);
    req.end();
  });
  res.setEncoding('utf8');
  let text = '';
  const ended = new Promise<void>((resolve) => res.once('end', resolve));
  res.on('data', (d: string) => {
    text += d;
    if (text === 'first\n') origin.release();
  });
  await ended;
  t.equal(text, 'first\nsecond\n');
});

t.test('forwarding headers: exact values, hop-by-hop removed both ways, forged ones ignored', async (t) => {
  const res = await get('app.test', '/headers', {
    headers: [
      ['Connection', 'X-Hop, keep-alive'],
      ['X-Hop', 'secret'],
      ['Keep-Alive', 'timeout=5'],
      ['TE', 'trailers'],
      ['Proxy-Authorization', 'Basic Zm9vOmJhcg=='],
      ['Trailer', 'X-Checksum'],
      ['Upgrade', 'h2c'],
      ['X-Forwarded-For', '6.6.6.6'],
      ['X-Forwarded-Proto', 'https'],
      ['X-Forwarded-Host', 'evil.example'],
      ['Forwarded', 'for=6.6.6.6;host=evil.example'],
      ['Via', '1.0 corp-proxy'],
      ['X-Custom', 'kept'],
      ['User-Agent', 'edge-e2e'],
    ],
  });
  t.equal(res.status, 200);
  const raw = (JSON.parse(res.text) as { rawHeaders: string[] }).rawHeaders;
  const one = (name: string): string | undefined => {
    const v = rawValues(raw, name);
    t.ok(v.length <= 1, `${name} at most once`);
    return v[0];
  };
  t.equal(one('host'), `127.0.0.1:${origin.port}`, "Host: the origin's");
  t.equal(one('x-forwarded-for'), '127.0.0.1', 'X-Forwarded-For: the peer only; the forged hop is gone');
  t.equal(one('x-forwarded-proto'), 'http', 'X-Forwarded-Proto: our listener');
  t.equal(one('x-forwarded-host'), 'app.test', "X-Forwarded-Host: the client's Host");
  t.equal(one('forwarded'), 'for=127.0.0.1;proto=http;host=app.test', 'Forwarded replaced');
  t.equal(one('via'), '1.0 corp-proxy, 1.1 s3edge', 'Via appended');
  t.equal(one('x-custom'), 'kept');
  t.equal(one('user-agent'), 'edge-e2e');
  for (const hop of ['x-hop', 'keep-alive', 'te', 'proxy-authorization', 'trailer', 'upgrade', 'transfer-encoding']) t.same(rawValues(raw, hop), [], `${hop} not forwarded`);
  t.not(one('connection'), 'X-Hop, keep-alive', "the client's Connection is not forwarded");

  t.equal(res.headers['x-origin'], 'kept');
  t.equal(res.headers['set-cookie'], 'a=1, b=2', 'both Set-Cookie headers');
  t.equal(res.headers.via, '1.1 upstream, 1.1 s3edge');
  t.equal(res.headers['x-origin-hop'], undefined, 'a header the origin named in Connection stops here');
  t.equal(res.headers['keep-alive'], undefined);
});

t.test('a trusted proxy in front: its chain is kept and the peer appended', async (t) => {
  const res = await get('app.test', '/headers', {
    from: '127.0.0.2',
    headers: [
      ['X-Forwarded-For', '6.6.6.6, 203.0.113.7'],
      ['X-Forwarded-Proto', 'https'],
      ['Forwarded', 'for=203.0.113.7;proto=https'],
    ],
  });
  const raw = (JSON.parse(res.text) as { rawHeaders: string[] }).rawHeaders;
  t.same(rawValues(raw, 'x-forwarded-for'), ['203.0.113.7, 127.0.0.2'], 'the client (right-most untrusted hop) onwards, then the peer');
  t.same(rawValues(raw, 'x-forwarded-proto'), ['https'], "the trusted proxy's scheme");
  t.same(rawValues(raw, 'forwarded'), ['for=203.0.113.7;proto=https, for=127.0.0.2;proto=http;host=app.test'], 'our element appended');
});

t.test("preserveHost sends the client's Host", async (t) => {
  const res = await get('preserve.test:9443', '/headers');
  const raw = (JSON.parse(res.text) as { rawHeaders: string[] }).rawHeaders;
  t.same(rawValues(raw, 'host'), ['preserve.test:9443']);
  t.same(rawValues(raw, 'forwarded'), ['for=127.0.0.1;proto=http;host="preserve.test:9443"'], 'a host with a port is quoted');
});

t.test('WebSocket: handshake forwarded, messages echoed through the proxy', async (t) => {
  const agent = loopbackAgent();
  t.teardown(() => agent.close());
  const seenBefore = origin.seen.length;
  const ws = new WebSocket(`ws://app.test:${mainPort}/chat?room=1`, { dispatcher: agent });
  ws.binaryType = 'arraybuffer';
  const messages: (string | Buffer)[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => {
      ws.send('hello');
      ws.send(Buffer.from([1, 2, 3, 250]));
    };
    ws.onmessage = (e: WsMessageEvent) => {
      messages.push(typeof e.data === 'string' ? e.data : Buffer.from(e.data as ArrayBuffer));
      if (messages.length === 2) ws.close(1000, 'done');
    };
    ws.onclose = () => resolve();
    ws.onerror = () => reject(new Error('websocket error'));
  });
  t.same(messages, ['hello', Buffer.from([1, 2, 3, 250])]);
  const up = origin.seen.slice(seenBefore).find((s) => s.url === '/chat?room=1');
  t.ok(up, 'the origin got the upgrade request, path and query unchanged');
  t.equal(up?.headers.host, `127.0.0.1:${origin.port}`);
  t.equal(up?.headers['x-forwarded-for'], '127.0.0.1');
  t.equal(up?.headers.forwarded, `for=127.0.0.1;proto=http;host="app.test:${mainPort}"`);
  t.equal(up?.headers.upgrade, 'websocket');
});

t.test('upgrades for anything but a project hostname are closed, as before', async (t) => {
  const answer = await new Promise<string>((resolve) => {
    const s = connect(Number(new URL(server.cdnUrl).port), '127.0.0.1');
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('close', () => resolve(got));
    s.on('error', () => undefined);
    s.write('GET / HTTP/1.1\r\nHost: cdn.localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
  });
  t.equal(answer, '', 'closed without an answer');
});

t.test('origin failures are small pages with a request id and nothing internal', async (t) => {
  const checkPage = (res: RawResponse, status: number): void => {
    t.equal(res.status, status);
    t.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    const id = res.headers['x-request-id'] ?? '';
    t.match(id, /^[0-9a-f-]{36}$/);
    t.ok(res.text.includes(id), 'the page names the request id');
    for (const secret of ['127.0.0.1', String(refused), String(origin.port), 'ECONNREFUSED', 'UND_ERR', 'HeadersTimeout', 'Headers Timeout']) t.notOk(res.text.includes(secret), `no ${secret}`);
  };
  checkPage(await get('down.test', '/'), 502);
  checkPage(await get('unset.test', '/'), 502);
  const before = origin.seen.length;
  checkPage(await get('app.test', '/slow'), 504);
  t.equal(origin.seen.length, before + 1, 'the origin got the request and did not answer in time');
});

t.test('the body limit: a declared length over it never reaches the origin; a chunked one is cut', async (t) => {
  const before = origin.seen.length;
  const declared = await get('limited.test', '/sha', { method: 'POST', body: randomBytes(MiB + 1) });
  t.equal(declared.status, 413);
  t.equal(declared.text, 'Payload Too Large\n');
  t.equal(origin.seen.length, before, 'refused before the origin');
  const small = await get('limited.test', '/sha', { method: 'POST', body: randomBytes(MiB), chunked: 64 * 1024 });
  t.equal(small.status, 200, 'a chunked body at the limit passes');
  const big = await get('limited.test', '/sha', { method: 'POST', body: randomBytes(3 * MiB), chunked: 64 * 1024 });
  t.equal(big.status, 413, 'a chunked body past the limit is cut with 413');
  const cut = origin.seen.at(-1);
  t.equal(cut?.complete, false, 'the origin never got a complete body');
  t.ok((cut?.bytes ?? Infinity) <= MiB, 'nor more than the limit');
});

t.test('a refusal before the body: a Connection: close client still sending reads the 413, and the connection closes only after its body', async (t) => {
  // Closing while the client still sends resets the connection, and a reset can take the answer with
  // it: the server must read the rest of the body first. The body goes in pieces, after the answer.
  const socket = connect(mainPort, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.setNoDelay(true);
  const pieces = 8;
  const piece = randomBytes(256 * 1024);
  let received = '';
  let endedAfterPieces = -1;
  let writeError: Error | undefined;
  let sent = 0;
  socket.on('error', (err) => (writeError = err));
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.once('end', () => (endedAfterPieces = sent));
  socket.write(`POST /sha HTTP/1.1\r\nHost: limited.test\r\nContent-Length: ${pieces * piece.length}\r\nConnection: close\r\n\r\n`);
  await eventually(() => received.includes('\r\n\r\n'), 'the answer, before the body');
  while (sent < pieces && !socket.destroyed) {
    // Counted as it is handed over: the server cannot have all of it before this.
    sent++;
    await new Promise<void>((resolve) => socket.write(piece, () => resolve()));
    await new Promise((r) => setTimeout(r, 20));
  }
  socket.end();
  await ended;
  t.match(received, /^HTTP\/1\.1 413 Payload Too Large\r\n/, 'the 413');
  t.ok(received.endsWith('\r\n\r\nPayload Too Large\n'), 'with its whole body');
  t.equal(writeError, undefined, 'every piece of the body was accepted (no reset, no EPIPE)');
  t.equal(endedAfterPieces, pieces, 'the server closed only once the whole body was in');
});

t.test('keep-alive: sequential requests share one connection to the origin', async (t) => {
  for (let i = 0; i < 4; i++) t.equal((await get('ka.test', `/ka/${i}`)).status, 200);
  t.equal(kaOrigin.seen.length, 4);
  t.equal(new Set(kaOrigin.seen.map((s) => s.remotePort)).size, 1, 'one socket');
  t.equal(kaOrigin.connections, 1);
});

/** How a response through the proxy ended: a clean end, or a cut connection. */
function readToEnd(path: string): Promise<{ status: number; ending: 'end' | 'cut'; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: mainPort, path, headers: { host: 'app.test' } }, (res) => {
      let bytes = 0;
      let done = false;
      const finish = (ending: 'end' | 'cut'): void => {
        if (done) return;
        done = true;
        resolve({ status: res.statusCode ?? 0, ending, bytes });
      };
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => finish('end'));
      res.on('error', () => finish('cut'));
      res.on('aborted', () => finish('cut'));
      res.on('close', () => finish(res.complete ? 'end' : 'cut'));
    });
    req.once('error', reject);
    req.end();
  });
}

t.test('an origin that fails mid-body: the client connection is cut, never a clean end', async (t) => {
  for (const path of ['/abort-length', '/abort-chunked']) {
    const r = await readToEnd(path);
    t.equal(r.status, 200, `${path}: the headers had gone out`);
    t.equal(r.ending, 'cut', `${path}: the client sees a cut, not a complete response`);
    t.equal(r.bytes, 'partial'.length);
  }
});

t.test('a client that leaves: the origin request is let go', async (t) => {
  const before = origin.closedEarly;
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: mainPort, path: '/hold', headers: { host: 'app.test' } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.once('error', () => undefined);
    req.on('close', () => resolve());
    req.once('socket', (s) => s.once('error', reject));
    req.end();
  });
  await eventually(() => origin.closedEarly > before, 'the origin connection closed');
  t.pass('the origin saw its connection go before its answer ended');
});

t.test('WebSocket: a refused upgrade is relayed; an unreachable origin is a 502 page', async (t) => {
  const upgrade = (host: string, path: string): Promise<string> => upgradeRequest(mainPort, host, path);
  const refusedAnswer = await upgrade('app.test', '/refuse');
  t.match(refusedAnswer, /^HTTP\/1\.1 403 Forbidden\r\n/);
  t.match(refusedAnswer, /\r\nX-Why: policy\r\n/i);
  t.match(refusedAnswer, /\r\nconnection: close\r\n/i);
  t.ok(refusedAnswer.endsWith('\r\n\r\nno\n'), "the origin's body");
  const down = await upgrade('down.test', '/ws');
  t.match(down, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
  t.match(down, /content-type: text\/html; charset=utf-8/);
  t.notOk(down.includes(String(refused)), 'no origin address');
});

t.test('rules refuse before the origin: 403, 405 with Allow, 429 with Retry-After; 413 before 100 Continue', async (t) => {
  const before = origin.seen.length;
  const blocked = await get('blocked.test', '/');
  t.equal(blocked.status, 403);
  t.equal(blocked.text, 'Forbidden\n');
  t.equal(blocked.headers['content-type'], 'text/plain; charset=utf-8');
  const method = await get('methods.test', '/', { method: 'DELETE' });
  t.equal(method.status, 405);
  t.equal(method.headers.allow, 'GET, HEAD');
  t.equal((await get('methods.test', '/')).status, 200, 'an allowed method passes');
  t.equal((await get('rated.test', '/')).status, 200, 'the burst');
  const limited = await get('rated.test', '/');
  t.equal(limited.status, 429);
  t.match(limited.headers['retry-after'], /^[1-9]\d*$/);
  t.equal(origin.seen.length, before + 2, 'only the two allowed requests reached the origin');

  // A client that waits for 100 Continue: refused without it, or let through with it.
  const expect = (host: string, length: number): Promise<{ status: number; continued: boolean; text: string }> =>
    new Promise((resolve, reject) => {
      let continued = false;
      const req = httpRequest({ host: '127.0.0.1', port: mainPort, method: 'PUT', path: '/sha', headers: { host, expect: '100-continue', 'content-length': String(length) } });
      req.on('continue', () => {
        continued = true;
        req.end(Buffer.alloc(length, 7));
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, continued, text }));
      });
      req.on('error', reject);
      req.flushHeaders();
    });
  const refusedPut = await expect('limited.test', MiB + 1);
  t.same([refusedPut.status, refusedPut.continued], [413, false], 'refused before the body was sent');
  const allowedPut = await expect('limited.test', 1000);
  t.same([allowedPut.status, allowedPut.continued], [200, true], 'continued, then forwarded');
  t.same(JSON.parse(allowedPut.text), { bytes: 1000, sha256: sha(Buffer.alloc(1000, 7)) });
});

t.test('the request guard runs first: two Host headers are refused in plain text', async (t) => {
  const res = await get('app.test', '/', { headers: [['Host', 'other.test']] });
  t.equal(res.status, 400);
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
});

t.test('a cacheable answer is kept: the second GET is a HIT the origin never sees', async (t) => {
  const count = (): number => origin.seen.filter((s) => s.url === '/cacheable').length;
  const first = await get('app.test', '/cacheable');
  t.same([first.status, first.text, first.headers['x-cache'], first.headers.via], [200, 'cached\n', 'MISS', '1.1 s3edge']);
  const second = await get('app.test', '/cacheable');
  t.same([second.status, second.text, second.headers['x-cache'], second.headers.via], [200, 'cached\n', 'HIT', '1.1 s3edge']);
  t.equal(count(), 1, 'one origin request');
  const uncacheable = await get('app.test', '/plain');
  t.equal(uncacheable.headers['x-cache'], undefined, 'an answer the cache does not take says nothing about it');
});

t.test('a storable answer the tiers cannot take is relayed whole; one cut short is cut for the client too; neither is kept', async (t) => {
  const count = (url: string): number => origin.seen.filter((s) => s.url === url).length;
  for (let i = 1; i <= 2; i++) {
    const big = await get('app.test', '/cacheable-big');
    t.equal(big.status, 200);
    t.equal(big.body.length, BIG.length, `big ${i}: every byte`);
    t.equal(sha(big.body), sha(BIG), `big ${i}: the origin's bytes`);
    t.equal(big.headers['x-cache'], undefined, `big ${i}: not from the cache`);
    t.equal(count('/cacheable-big'), i, `big ${i}: the origin answered`);
    const cut = await readToEnd('/cacheable-cut');
    t.same([cut.status, cut.ending, cut.bytes], [200, 'cut', 'partial'.length], `cut ${i}: the headers had gone out, then the connection was cut`);
    t.equal(count('/cacheable-cut'), i, `cut ${i}: the origin answered, nothing was kept`);
  }
});

t.test("a bucket origin is served as a static site of the owner's bucket", async (t) => {
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  t.equal((await s3.createBucket('edge-site')).status, 200);
  t.equal((await s3.putObject('edge-site', 'index.html', Buffer.from('<h1>home</h1>'), { 'content-type': 'text/html' })).status, 200);
  const [bucket] = query<{ id: string }>(server, "SELECT id FROM buckets WHERE name = 'edge-site'");
  if (!bucket) throw new Error('no bucket row');
  // Added while the server runs (the root user exists only now): it routes it within 250 ms.
  await addProjectHostnames(dataDir, 'root', [{ hostname: 'site.test', origin: { kind: 'bucket', bucketId: bucket.id, indexDocument: 'index.html', errorDocument: null } }]);
  let res: RawResponse | undefined;
  await eventually(async () => {
    res = await get('site.test', '/');
    return res.status === 200;
  }, 'site.test routed');
  t.equal(res?.text, '<h1>home</h1>');
  t.equal(res?.headers['content-type'], 'text/html');
  t.equal((await get('site.test', '/', { method: 'POST', body: Buffer.from('x') })).status, 405, 'GET and HEAD only');
});

t.test('an unverified hostname is not served', async (t) => {
  const before = origin.seen.length;
  const res = await get('unverified.test', '/', { url: server.cdnUrl });
  t.equal(res.status, 404);
  t.equal(res.text, 'Not Found\n', "the CDN listener's bare 404");
  t.equal(origin.seen.length, before, 'the origin was not asked');
});

interface LogRow {
  surface: string;
  host: string;
  method: string;
  path: string;
  status: number;
  bytes_in: number;
  bytes_sent: number;
  decision: string;
  owner_id: string;
  cache_status: string | null;
  client_ip: string;
}

t.test('every proxied request is one log row with what became of it', async (t) => {
  const rows = (): LogRow[] => query<LogRow>(server, "SELECT surface, host, method, path, status, bytes_in, bytes_sent, decision, owner_id, cache_status, client_ip FROM cdn_requests WHERE surface = 'proxy' ORDER BY id");
  // The WebSocket's row is written when its tunnel closes; the log flushes every 50 ms.
  await eventually(() => {
    const now = rows();
    return now.some((r) => r.status === 101) && now.some((r) => r.status === 429) && now.some((r) => r.path === '/refuse') && now.some((r) => r.host === 'site.test' && r.status === 405);
  }, 'the log rows');
  const all = rows();
  const find = (what: string, pred: (r: LogRow) => boolean): LogRow | undefined => {
    const r = all.find(pred);
    t.ok(r, what);
    return r;
  };
  const upload = find('the 5 MiB upload', (r) => r.path === '/sha' && r.host === 'app.test' && r.bytes_in === 5 * MiB);
  t.match(upload, { surface: 'proxy', method: 'POST', status: 200, decision: 'allowed', owner_id: ownerId, cache_status: null, client_ip: '127.0.0.1' });
  t.ok((upload?.bytes_sent ?? 0) > 64, 'bytes sent: the JSON answer');
  const echo = find('the echo', (r) => r.path === '/echo');
  t.match(echo, { method: 'POST', status: 200, bytes_in: 5 * MiB, bytes_sent: 5 * MiB });
  find('the declared 413', (r) => r.host === 'limited.test' && r.decision === 'body-too-large' && r.status === 413 && r.bytes_in === 0);
  find('the cut 413', (r) => r.host === 'limited.test' && r.decision === 'body-too-large' && r.status === 413 && r.bytes_in > MiB);
  find('the 502', (r) => r.host === 'down.test' && r.status === 502);
  find('the 504', (r) => r.path === '/slow' && r.status === 504);
  find('the WebSocket', (r) => r.path === '/chat' && r.status === 101 && r.method === 'GET');
  find('the trusted proxy client', (r) => r.client_ip === '203.0.113.7');
  find('the IP block', (r) => r.host === 'blocked.test' && r.status === 403 && r.decision === 'ip-blocked');
  find('the method refusal', (r) => r.host === 'methods.test' && r.status === 405 && r.decision === 'method-not-allowed' && r.method === 'DELETE');
  find('the rate limit', (r) => r.host === 'rated.test' && r.status === 429 && r.decision === 'rate-limited');
  find('the refused upgrade', (r) => r.path === '/refuse' && r.status === 403 && r.decision === 'allowed');
  find('the cache miss', (r) => r.path === '/cacheable' && r.cache_status === 'MISS');
  find('the cache hit', (r) => r.path === '/cacheable' && r.cache_status === 'HIT' && r.bytes_sent === 7);
  find('the bucket site', (r) => r.host === 'site.test' && r.status === 200 && r.bytes_sent === '<h1>home</h1>'.length);
  t.notOk(all.some((r) => r.host === 'unverified.test'), 'no row for the unverified hostname');
  t.ok(all.filter((r) => r.host !== 'site.test').every((r) => r.surface === 'proxy' && r.owner_id === ownerId), "each row names its hostname's owner");
});

t.test('every proxied request is also one JSON log line, under the request id its 502 page shows', async (t) => {
  type Line = Record<string, unknown>;
  const lines = (): Line[] =>
    server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{"level"'))
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l['msg'] === 'proxy request');
  const page = await get('down.test', '/page?token=hidden-query');
  t.equal(page.status, 502);
  const id = page.headers['x-request-id'] ?? '';
  await eventually(() => lines().some((l) => l['requestId'] === id), 'the 502 line');
  const mine = lines().filter((l) => l['requestId'] === id);
  t.equal(mine.length, 1, 'one line for the request');
  t.match(mine[0], { level: 40, surface: 'proxy', method: 'GET', host: 'down.test', path: '/page', status: 502, decision: 'allowed', clientIp: '127.0.0.1' });
  t.notOk(server.output().includes('hidden-query'), 'no query string in the log');
  // Rows are flushed every 50 ms after their lines are written.
  const rows = (): number => query<{ n: number }>(server, "SELECT count(*) AS n FROM cdn_requests WHERE surface = 'proxy'")[0]?.n ?? -1;
  await eventually(() => rows() === lines().length, 'as many proxy lines as proxy log rows');
  t.ok(lines().length > 20, 'every request of this file has its line');
  const blocked = lines().find((l) => l['host'] === 'blocked.test');
  t.match(blocked, { level: 30, status: 403, decision: 'ip-blocked' }, 'a refusal names its rule');
  const hit = lines().find((l) => l['path'] === '/cacheable' && l['cacheStatus'] === 'HIT');
  t.match(hit, { status: 200, bytesOut: 7 }, 'a cache hit');
});

t.test('the default address policy: loopback, link-local, private and names resolving to them are refused, WebSocket too', async (t) => {
  const guarded = await new Origin().listen();
  const dir = mkdtempSync(join(tmpdir(), 's3edge-edge-strict-'));
  await addProjectHostnames(join(dir, 'data'), 'edge-owner', [
    { hostname: 'loop.test', origin: urlOrigin(guarded.url) },
    { hostname: 'named.test', origin: urlOrigin(`http://localhost:${guarded.port}`) },
    { hostname: 'v6.test', origin: urlOrigin(`http://[::1]:${guarded.port}`) },
    { hostname: 'metadata.test', origin: urlOrigin('http://169.254.169.254') },
    { hostname: 'private.test', origin: urlOrigin('http://10.0.0.1') },
    { hostname: 'ula.test', origin: urlOrigin('http://[fd00::1]') },
    { hostname: 'mapped.test', origin: urlOrigin(`http://[::ffff:127.0.0.1]:${guarded.port}`) },
  ]);
  let strict: RunningServer | undefined;
  t.teardown(async () => {
    await strict?.stop();
    await guarded.close();
    rmSync(dir, { recursive: true, force: true });
  });
  strict = await startServer({ dataDir: join(dir, 'data') });
  for (const host of ['loop.test', 'named.test', 'v6.test', 'metadata.test', 'private.test', 'ula.test', 'mapped.test']) {
    const res = await rawRequest({ url: strict.url }, { method: 'GET', target: '/latest/meta-data/', headers: [['Host', host]] });
    t.equal(res.status, 502, `${host}: 502`);
    t.notOk(res.text.includes(String(guarded.port)), `${host}: the page names no address`);
  }
  // A WebSocket upgrade goes through the same pools, so the same policy.
  const strictPort = Number(new URL(strict.url).port);
  for (const host of ['loop.test', 'named.test']) {
    t.match(await upgradeRequest(strictPort, host, '/ws'), /^HTTP\/1\.1 502 Bad Gateway\r\n/, `${host}: an upgrade is refused too`);
  }
  t.equal(guarded.connections, 0, 'the loopback origin was never connected to');
  t.equal(guarded.seen.length, 0);
});
