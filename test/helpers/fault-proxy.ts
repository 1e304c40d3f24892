// A fault-injecting HTTP proxy of our own between the gateway and its upstream S3 (moto), on loopback:
// it forwards every request as it came (the gateway's SigV4 signs the Host, which stays moto's) and
// answers it with moto's answer, unless a fault the test queued matches the request: then the fault
// decides what the gateway sees. Faults of an upstream store that really happen: a slow first byte,
// a connection reset in the middle of a body, bursts of 500/503, a Content-Length its body does not
// match, and an UploadPart that is acknowledged but never stored (lost).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { request } from 'undici';
import { startMoto, type RunningMoto } from './moto.js';

export type Fault =
  /** Waits `ms` before forwarding (the first byte of the answer comes that late). */
  | { kind: 'slow-first-byte'; ms: number }
  /** Forwards, sends the answer's head and half its body, then resets the connection. */
  | { kind: 'reset-mid-body' }
  /** Answers this status with an S3 error body, without forwarding. */
  | { kind: 'status'; status: 500 | 503 }
  /** Forwards, but the answer says Content-Length `declared` more bytes than it sends, then closes. */
  | { kind: 'short-body'; missing: number }
  /** Answers 200 with an ETag as moto would, but never forwards: the part is lost. */
  | { kind: 'lose-part' };

export interface FaultRule {
  /** Which requests: method and a test on the path and query (`/<bucket>/<key>?...`). */
  method: string;
  match: (pathAndQuery: string) => boolean;
  fault: Fault;
  /** How many matching requests get the fault (then the rule is used up). */
  times: number;
}

export interface FaultProxy {
  endpoint: string;
  /** Queues a rule; matching requests get its fault, in the order rules were added. */
  inject(rule: FaultRule): void;
  /** Rules still queued (times left > 0). */
  pending(): number;
  /** Requests that got a fault, by kind. */
  injected: Record<string, number>;
  close(): Promise<void>;
}

export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const rules: FaultRule[] = [];
  const injected: Record<string, number> = {};
  const sockets = new Set<Socket>();
  const target = new URL(upstream);

  const forward = async (req: IncomingMessage, body: Buffer) => {
    const headers: Record<string, string> = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = (req.rawHeaders[i] as string).toLowerCase();
      if (name === 'connection' || name === 'keep-alive' || name === 'transfer-encoding' || name === 'expect') continue;
      headers[name] = req.rawHeaders[i + 1] as string;
    }
    const res = await request(new URL(req.url ?? '/', target), { method: req.method as 'GET', headers, body: body.length > 0 || req.method === 'PUT' || req.method === 'POST' ? body : null });
    const answer = Buffer.from(await res.body.arrayBuffer());
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string' && k !== 'connection' && k !== 'keep-alive' && k !== 'transfer-encoding') out[k] = v;
    out['content-length'] = String(answer.length);
    return { status: res.statusCode, headers: out, body: answer };
  };

  const s3Error = (res: ServerResponse, status: number): void => {
    const code = status === 503 ? 'SlowDown' : 'InternalError';
    const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>injected</Message></Error>`;
    res.writeHead(status, { 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const rule = rules.find((r) => r.times > 0 && r.method === req.method && r.match(req.url ?? '/'));
        const fault = rule?.fault;
        if (rule) {
          rule.times--;
          injected[rule.fault.kind] = (injected[rule.fault.kind] ?? 0) + 1;
        }
        try {
          if (fault?.kind === 'status') return s3Error(res, fault.status);
          if (fault?.kind === 'lose-part') {
            res.writeHead(200, { etag: `"${'0'.repeat(32)}"`, 'content-length': '0' });
            return res.end();
          }
          if (fault?.kind === 'slow-first-byte') await new Promise((resolve) => setTimeout(resolve, fault.ms));
          const answer = await forward(req, body);
          if (fault?.kind === 'reset-mid-body') {
            res.writeHead(answer.status, answer.headers);
            res.write(answer.body.subarray(0, Math.floor(answer.body.length / 2)));
            setTimeout(() => req.socket.resetAndDestroy(), 20);
            return;
          }
          if (fault?.kind === 'short-body') {
            res.writeHead(answer.status, { ...answer.headers, 'content-length': String(answer.body.length + fault.missing) });
            res.write(answer.body);
            setTimeout(() => req.socket.destroy(), 20);
            return;
          }
          res.writeHead(answer.status, answer.headers);
          res.end(answer.body);
        } catch {
          if (!res.headersSent) s3Error(res, 500);
          else res.destroy();
        }
      })();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    inject: (rule) => rules.push(rule),
    pending: () => rules.filter((r) => r.times > 0).length,
    injected,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A moto of its own behind a fault proxy, both stopped on t's teardown, and the gateway's environment
 * for blobs under `prefix` in moto, reached through the proxy.
 */
export async function startFaultyUpstream(t: { teardown(fn: () => unknown): void }, prefix: string): Promise<{ moto: RunningMoto; proxy: FaultProxy; env: Record<string, string> }> {
  const moto = await startMoto();
  t.teardown(() => moto.stop());
  const proxy = await startFaultProxy(moto.endpoint);
  t.teardown(() => proxy.close());
  return { moto, proxy, env: { ...moto.gatewayEnv(prefix), S3EDGE_STORAGE_S3_ENDPOINT: proxy.endpoint } };
}
