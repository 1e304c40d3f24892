// A deliberately dumb HTTP/1.1 client over a real socket (node:net / node:tls). It writes exactly
// the request line, headers and body bytes it is given — no path normalisation, no header
// validation, no automatic headers except `Connection: close` — and parses whatever comes back.
// Security tests need that: `inject()`, fetch and even node:http refuse or rewrite what we send.
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { readFileSync } from 'node:fs';

export interface Endpoint {
  /** e.g. http://127.0.0.1:9000 or https://127.0.0.1:9443 */
  url: string;
  /** PEM file trusted for https endpoints. */
  caFile?: string;
  /** Connect from this local address (e.g. 127.0.0.2: a second loopback peer). */
  localAddress?: string;
}

export type HeaderList = Array<[string, string]>;

export interface RawRequest {
  method: string;
  /** The request-target exactly as it goes on the wire (latin1: each char is one byte). */
  target: string;
  headers: HeaderList;
  body?: Buffer;
  /** Frame `body` with HTTP `Transfer-Encoding: chunked` (the header is added) in pieces of this size. */
  httpChunkSize?: number;
  /**
   * Write the body in slices of this many bytes, each after the previous one was flushed, with
   * Nagle off: the server then sees framing (chunk headers, CRLFs, trailers) split at odd places.
   */
  writeSliceSize?: number;
  /** Safety net against a server that never answers; not an assertion. Default 60 s. */
  timeoutMs?: number;
}

export interface RawResponse {
  status: number;
  statusText: string;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  text: string;
}

function openSocket(endpoint: Endpoint): Socket {
  const u = new URL(endpoint.url);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  const host = u.hostname;
  if (u.protocol === 'https:') {
    return tlsConnect({
      host,
      port,
      servername: host === '127.0.0.1' ? undefined : host,
      ca: endpoint.caFile ? readFileSync(endpoint.caFile) : undefined,
      ALPNProtocols: ['http/1.1'],
      ...(endpoint.localAddress ? { localAddress: endpoint.localAddress } : {}),
    });
  }
  return netConnect({ host, port, ...(endpoint.localAddress ? { localAddress: endpoint.localAddress } : {}) });
}

function frameHttpChunked(body: Buffer, size: number): Buffer {
  const parts: Buffer[] = [];
  for (let off = 0; off < body.length; off += size) {
    const piece = body.subarray(off, Math.min(off + size, body.length));
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`, 'latin1'), piece, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

function decodeHttpChunked(buf: Buffer): Buffer {
  const out: Buffer[] = [];
  let off = 0;
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', off, 'latin1');
    if (lineEnd < 0) throw new Error('truncated chunked response body');
    const size = parseInt(buf.subarray(off, lineEnd).toString('latin1').split(';')[0] ?? '', 16);
    if (!Number.isFinite(size)) throw new Error('bad chunk size in response');
    off = lineEnd + 2;
    if (size === 0) break;
    out.push(buf.subarray(off, off + size));
    off += size + 2;
  }
  return Buffer.concat(out);
}

export function parseRawResponse(raw: Buffer, isHead: boolean): RawResponse {
  const headEnd = raw.indexOf('\r\n\r\n', 0, 'latin1');
  if (headEnd < 0) throw new Error(`incomplete HTTP response (${raw.length} bytes): ${raw.toString('latin1').slice(0, 200)}`);
  const lines = raw.subarray(0, headEnd).toString('latin1').split('\r\n');
  const statusLine = lines.shift() ?? '';
  const m = /^HTTP\/1\.[01] (\d{3}) ?(.*)$/.exec(statusLine);
  if (!m) throw new Error(`bad status line: ${statusLine}`);
  const status = Number(m[1]);
  if (status >= 100 && status < 200 && status !== 101) {
    // An interim response (100 Continue): the real one follows.
    return parseRawResponse(raw.subarray(headEnd + 4), isHead);
  }
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const idx = line.indexOf(':');
    if (idx < 0) continue;
    const name = line.slice(0, idx).trim().toLowerCase();
    // Header bytes are UTF-8 when a server sends non-ASCII metadata; decode them as such.
    const value = Buffer.from(line.slice(idx + 1).trim(), 'latin1').toString('utf8');
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  let body = raw.subarray(headEnd + 4);
  if (isHead || status === 204 || status === 304) body = Buffer.alloc(0);
  else if ((headers['transfer-encoding'] ?? '').toLowerCase().includes('chunked')) body = decodeHttpChunked(body);
  else if (headers['content-length'] !== undefined) body = body.subarray(0, Number(headers['content-length']));
  return { status, statusText: m[2] ?? '', headers, body: Buffer.from(body), text: body.toString('utf8') };
}

/** Send one request on a fresh connection and read the whole response (the server closes it). */
export function rawRequest(endpoint: Endpoint, req: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = openSocket(endpoint);
    const chunks: Buffer[] = [];
    let settled = false;
    let writeError: Error | undefined;
    const finish = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(chunks);
      if (raw.length > 0) {
        try {
          resolve(parseRawResponse(raw, req.method.toUpperCase() === 'HEAD'));
          return;
        } catch (parseErr) {
          reject(new Error(`${req.method} ${req.target.slice(0, 200)}: ${(parseErr as Error).message}`));
          return;
        }
      }
      const cause = err ?? writeError;
      reject(new Error(`${req.method} ${req.target.slice(0, 200)}: connection closed without a response${cause ? ` (${cause.message})` : ''}`));
    };
    const timer = setTimeout(() => finish(new Error(`no response within ${req.timeoutMs ?? 60000} ms`)), req.timeoutMs ?? 60000);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('error', (err) => {
      // The server may answer early (e.g. 403 before the body) and close while we still write.
      writeError = err;
    });
    const headerLines = [...req.headers];
    let body = req.body ?? Buffer.alloc(0);
    if (req.httpChunkSize !== undefined) {
      headerLines.push(['Transfer-Encoding', 'chunked']);
      body = frameHttpChunked(body, req.httpChunkSize);
    }
    headerLines.push(['Connection', 'close']);
    const head = `${req.method} ${req.target} HTTP/1.1\r\n${headerLines.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
    socket.write(Buffer.from(head, 'latin1'));
    if (body.length === 0) return;
    const slice = req.writeSliceSize;
    if (slice === undefined) {
      socket.write(body);
      return;
    }
    socket.setNoDelay(true);
    void (async () => {
      for (let off = 0; off < body.length && !settled && !socket.destroyed; off += slice) {
        await new Promise<void>((done) => socket.write(body.subarray(off, off + slice), () => done()));
      }
    })();
  });
}
