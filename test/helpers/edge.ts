// Edge proxy fixtures: project hostnames written into a data directory through the repositories (as
// the projects service would), a dispatcher that dials every name on loopback (a browser's DNS for the
// test's made-up hostnames), and the few WebSocket frames a loopback echo origin needs (RFC 6455).
import { createHash } from 'node:crypto';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { mkdirSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { Agent } from 'undici';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { NO_RULES, type HostRules, type Origin } from '../../src/db/repos/hostname-model.js';
import { userRow } from './users.js';

export interface HostnameFixture {
  hostname: string;
  origin: Origin | null;
  rules?: Partial<HostRules>;
  /** Default true: only verified hostnames are served. */
  verified?: boolean;
}

/** An http(s) origin URL as the projects service stores it. */
export function urlOrigin(url: string, preserveHost = false): Origin {
  return { kind: 'url', url, preserveHost };
}

/**
 * Creates (or reuses) user `owner`, one project of it and `hosts` in the data directory `dataDir`
 * (created with its meta.db if new: call before the server starts, so it routes them from its first
 * request). Returns the owner's user id.
 */
export async function addProjectHostnames(dataDir: string, owner: string, hosts: readonly HostnameFixture[]): Promise<string> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = openDatabase(join(dataDir, 'meta.db'));
  try {
    const repos = createRepos(db);
    const user = (await repos.users.getByName(owner)) ?? (await repos.users.create(owner));
    const project = await repos.projects.createProject(user.id, `site-${(await repos.projects.routes()).length}-${Date.now()}`);
    for (const h of hosts) {
      const row = await repos.projects.addHostname(project.id, h.hostname, `token-${h.hostname}`, h.origin, { ...NO_RULES, ...h.rules });
      if (h.verified ?? true) await repos.projects.markVerified(row.id, 'operator');
    }
    return user.id;
  } finally {
    db.close();
  }
}

/** An undici dispatcher that resolves every name to 127.0.0.1: requests keep their Host, land on loopback. */
export function loopbackAgent(): Agent {
  const lookup = (_host: string, opts: LookupOptions, cb: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void => {
    if (opts.all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
    else cb(null, '127.0.0.1', 4);
  };
  return new Agent({ connect: { lookup } });
}

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** Completes a WebSocket handshake on an upgraded socket, with `extra` response headers. */
export function acceptWebSocket(req: IncomingMessage, socket: Duplex, extra: Record<string, string> = {}): void {
  const key = String(req.headers['sec-websocket-key'] ?? '');
  const accept = createHash('sha1').update(key + WS_GUID).digest('base64');
  const lines = ['HTTP/1.1 101 Switching Protocols', 'Upgrade: websocket', 'Connection: Upgrade', `Sec-WebSocket-Accept: ${accept}`];
  for (const [k, v] of Object.entries(extra)) lines.push(`${k}: ${v}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
}

export interface WsFrame {
  opcode: number;
  payload: Buffer;
}

/** Whole frames at the start of `buf` (unmasked when masked), and the bytes after them. */
export function readFrames(buf: Buffer): { frames: WsFrame[]; rest: Buffer } {
  const frames: WsFrame[] = [];
  let off = 0;
  for (;;) {
    if (buf.length - off < 2) break;
    const b0 = buf[off] as number;
    const b1 = buf[off + 1] as number;
    let len = b1 & 0x7f;
    let at = off + 2;
    if (len === 126) {
      if (buf.length < at + 2) break;
      len = buf.readUInt16BE(at);
      at += 2;
    } else if (len === 127) {
      if (buf.length < at + 8) break;
      len = Number(buf.readBigUInt64BE(at));
      at += 8;
    }
    const masked = (b1 & 0x80) !== 0;
    const mask = masked ? buf.subarray(at, at + 4) : undefined;
    if (masked) at += 4;
    if (buf.length < at + len) break;
    const payload = Buffer.from(buf.subarray(at, at + len));
    if (mask) for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (mask[i % 4] as number);
    frames.push({ opcode: b0 & 0x0f, payload });
    off = at + len;
  }
  return { frames, rest: buf.subarray(off) };
}

/** One unmasked, final frame (server to client). */
export function frame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const headLen = len < 126 ? 2 : len < 65536 ? 4 : 10;
  const head = Buffer.alloc(headLen);
  head[0] = 0x80 | opcode;
  if (len < 126) head[1] = len;
  else if (len < 65536) {
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else {
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([head, payload]);
}

/** Echoes text and binary frames, answers pings, returns a close; for an upgraded origin socket. */
export function echoWebSocket(socket: Duplex): void {
  let pending: Buffer = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => {
    const { frames, rest } = readFrames(Buffer.concat([pending, d]));
    pending = rest;
    for (const f of frames) {
      if (f.opcode === 1 || f.opcode === 2) socket.write(frame(f.opcode, f.payload));
      else if (f.opcode === 9) socket.write(frame(10, f.payload));
      else if (f.opcode === 8) {
        socket.end(frame(8, f.payload.subarray(0, 2)));
        return;
      }
    }
  });
  socket.on('error', () => socket.destroy());
}
