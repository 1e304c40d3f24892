// WebSocket passthrough: an `Upgrade: websocket` request for a project hostname is sent to the origin
// through its pool (the same guarded connector, connect and headers timeouts), with the same forwarding
// headers as any proxied request. The origin's 101 and its handshake headers (Sec-WebSocket-Accept,
// -Protocol, -Extensions) go back to the client, then the two sockets are piped until either side
// closes or both stay silent for TUNNEL_IDLE_MS. An origin that refuses the upgrade has its answer
// relayed (then the connection closes); one that cannot be reached gets the proxy's 502/504 page,
// written on the raw socket before it is closed.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Logger } from 'pino';
import { rawStrings, responseHeadersFor, type RawHeaders } from './forward-headers.js';
import { rawAnswer, reasonPhrase } from './answers.js';
import { CLIENT_CLOSED, failureCause, failureStatus, type ForwardOutcome } from './forward.js';

/** A tunnel with no byte either way for this long is closed (clients and servers ping well within it). */
export const TUNNEL_IDLE_MS = 5 * 60_000;

export interface TunnelRequest {
  dispatcher: Dispatcher;
  /** The request headers for the origin (requestHeadersFor): Connection and Upgrade are undici's to write. */
  headers: RawHeaders;
  requestId: string;
  log: Pick<Logger, 'warn' | 'debug'>;
}

export interface TunnelResult {
  /** 101 for a tunnel, the origin's status for a refused upgrade, 502/504, or 499 when the client left first. */
  status: number;
  outcome: ForwardOutcome;
  /** Bytes from the client to the origin after the handshake, and back. */
  bytesIn: number;
  bytesOut: number;
}

/** Open tunnels, so that a server stop can end them (they would hold its close forever). */
export class Tunnels {
  private readonly open = new Set<Duplex>();

  track(...sockets: Duplex[]): void {
    for (const s of sockets) {
      this.open.add(s);
      s.once('close', () => this.open.delete(s));
    }
  }

  closeAll(): void {
    for (const s of this.open) s.destroy();
    this.open.clear();
  }
}

function head(status: number, statusText: string, headers: RawHeaders): string {
  const lines: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) lines.push(`${headers[i] as string}: ${headers[i + 1] as string}`);
  return `HTTP/1.1 ${status} ${statusText}\r\n${lines.join('\r\n')}\r\n\r\n`;
}

/** Headers as a client may see them: no CR/LF or NUL can reach the raw socket (undici checks names and values; this is the last word). */
function safeHeaders(headers: RawHeaders): RawHeaders {
  const out: RawHeaders = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string;
    if (/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name) && !/[\r\n\0]/.test(value)) out.push(name, value);
  }
  return out;
}

/**
 * Proxies the upgrade request `req` (its socket and the bytes read past its head) to the origin behind
 * `opts.dispatcher`; resolves when the tunnel or the answer is over, never rejects.
 */
export function openTunnel(req: IncomingMessage, client: Duplex, early: Buffer, tunnels: Tunnels, opts: TunnelRequest): Promise<TunnelResult> {
  return new Promise<TunnelResult>((resolve) => {
    let controller: Dispatcher.DispatchController | undefined;
    let clientGone = false;
    let answered = false;
    let upgraded = false;
    /** The origin's status when it answered the upgrade with something else than 101. */
    let refusedWith = 0;
    let bytesIn = 0;
    let bytesOut = 0;
    let settled = false;
    const settle = (r: TunnelResult): void => {
      if (settled) return;
      settled = true;
      client.off('close', onClientClose);
      resolve(r);
    };
    const onClientClose = (): void => {
      clientGone = true;
      // A tunnel ends by itself (its sockets' close); anything before it is cancelled at the origin.
      if (upgraded) return;
      controller?.abort(new Error('client closed the connection'));
      settle({ status: answered ? refusedWith : CLIENT_CLOSED, outcome: 'client-gone', bytesIn, bytesOut });
    };
    client.once('close', onClientClose);
    client.on('error', () => client.destroy());
    tunnels.track(client);
    // The client's handshake is in; whatever it sends next belongs to the origin, once there is one.
    client.pause();

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(ctl) {
        controller = ctl;
        if (clientGone) ctl.abort(new Error('client closed the connection'));
      },
      onRequestUpgrade(ctl, statusCode, _headers, origin) {
        answered = true;
        upgraded = true;
        if (clientGone) {
          origin.destroy();
          return;
        }
        tunnels.track(origin);
        const raw = rawStrings((ctl.rawHeaders ?? []) as (Buffer | string)[]);
        // Connection and Upgrade are hop-by-hop: this hop's own, for the protocol undici asked for.
        client.write(head(statusCode, 'Switching Protocols', ['Connection', 'Upgrade', 'Upgrade', 'websocket', ...safeHeaders(responseHeadersFor(raw))]));
        if (early.length > 0) origin.write(early);
        bytesIn += early.length;
        const end = (): void => {
          clearTimeout(idle);
          client.destroy();
          origin.destroy();
          settle({ status: 101, outcome: 'ok', bytesIn, bytesOut });
        };
        const idle = setTimeout(end, TUNNEL_IDLE_MS).unref();
        for (const s of [client, origin]) {
          s.once('close', end);
          s.on('error', end);
        }
        client.on('data', (c: Buffer) => {
          bytesIn += c.length;
          idle.refresh();
        });
        origin.on('data', (c: Buffer) => {
          bytesOut += c.length;
          idle.refresh();
        });
        client.pipe(origin);
        origin.pipe(client);
        client.resume();
      },
      onResponseStart(ctl, statusCode, _headers, statusMessage) {
        // The origin refused the upgrade: its answer is relayed, then the connection ends.
        answered = true;
        refusedWith = statusCode;
        const raw = rawStrings((ctl.rawHeaders ?? []) as (Buffer | string)[]);
        client.write(head(statusCode, statusMessage || reasonPhrase(statusCode), [...safeHeaders(responseHeadersFor(raw)), 'connection', 'close']));
      },
      onResponseData(ctl, chunk) {
        bytesOut += chunk.length;
        if (!client.write(chunk)) {
          ctl.pause();
          client.once('drain', () => ctl.resume());
        }
      },
      onResponseEnd() {
        client.end();
        client.once('finish', () => client.destroy());
        settle({ status: refusedWith, outcome: 'ok', bytesIn, bytesOut });
      },
      onResponseError(_ctl, err) {
        fail(err);
      },
    };
    const fail = (err: unknown): void => {
      if (clientGone) return settle({ status: CLIENT_CLOSED, outcome: 'client-gone', bytesIn, bytesOut });
      if (answered) {
        client.destroy();
        opts.log.warn({ requestId: opts.requestId, cause: failureCause(err) }, 'edge: origin answer to an upgrade failed mid-body');
        return settle({ status: refusedWith, outcome: 'origin-aborted', bytesIn, bytesOut });
      }
      const status = failureStatus(err);
      opts.log.warn({ requestId: opts.requestId, cause: failureCause(err) }, `edge: origin failed before answering an upgrade (${status})`);
      opts.log.debug({ requestId: opts.requestId, err }, 'edge: origin failure detail');
      client.end(rawAnswer(status, opts.requestId));
      client.once('finish', () => client.destroy());
      settle({ status, outcome: status === 504 ? 'gateway-timeout' : 'bad-gateway', bytesIn, bytesOut });
    };
    try {
      opts.dispatcher.dispatch({ path: req.url ?? '/', method: 'GET', headers: opts.headers, upgrade: 'websocket' }, handler);
    } catch (err) {
      fail(err);
    }
  });
}
