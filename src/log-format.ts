// The server's logger: pino's JSON lines (logFormat json, for collectors), or one readable line per
// record for a terminal (logFormat pretty). Pretty is a small formatter of pino's own lines rather
// than pino-pretty: no new dependency for a convenience; it parses each line, fine for a terminal.
import { destination, pino, symbols, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config/schema.js';

const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLOURS: Readonly<Record<number, string>> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
/** Fields every line has, shown as the time, level and message, or left out. */
const HIDDEN = new Set(['time', 'level', 'msg', 'pid', 'hostname', 'v']);

function formatValue(v: unknown): string {
  if (typeof v === 'string') return v === '' || /[\s"=]/.test(v) ? JSON.stringify(v) : v;
  return JSON.stringify(v) ?? String(v);
}

function formatTime(ms: unknown): string {
  return typeof ms === 'number' ? new Date(ms).toISOString().slice(11, 23) : '';
}

/**
 * One pino JSON line as `HH:MM:SS.mmm LEVEL message key=value ...`, with an error's stack on the lines
 * below. A line that is not JSON passes through unchanged.
 */
export function prettyLine(json: string, colour = false): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = typeof rec['level'] === 'number' ? rec['level'] : 30;
  const name = (LEVELS[level] ?? String(level)).padEnd(5);
  const parts = [formatTime(rec['time']), colour ? `\x1b[${COLOURS[level] ?? '0'}m${name}\x1b[0m` : name];
  if (typeof rec['msg'] === 'string') parts.push(rec['msg']);
  let stack = '';
  for (const [k, v] of Object.entries(rec)) {
    if (HIDDEN.has(k)) continue;
    const errStack = typeof v === 'object' && v !== null ? (v as { stack?: unknown }).stack : undefined;
    if (typeof errStack === 'string') {
      stack += `\n    ${errStack.split('\n').join('\n    ')}`;
      continue;
    }
    parts.push(`${k}=${formatValue(v)}`);
  }
  return `${parts.join(' ')}${stack}\n`;
}

/** A destination that writes each of pino's lines to `out` as prettyLine does. */
export function prettyDestination(out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout): DestinationStream {
  const colour = out.isTTY === true;
  return { write: (line: string) => void out.write(prettyLine(line, colour)) };
}

/**
 * The most one write of the JSON destination hands the kernel. sonic-boom's default, 16 KiB, is one
 * write per ~40 request lines: under load the writes (each a round trip through libuv's thread pool)
 * fell behind the lines, and the backlog (16 MiB seen in a heap profile of a presigned GET load) lived
 * through every young-generation collection, which copied and promoted it: a quarter of the garbage
 * collector's time. One write now takes what piled up while the last one was out, up to this.
 */
export const LOG_WRITE_BYTES = 1024 * 1024;

/**
 * How much of the request lines (one a request: CDN, proxy, S3) is held before it goes to the
 * destination, and for how long at most, as nginx's `access_log ... buffer=64k flush=...` holds its
 * access lines. Handed on line by line, the lines kept a write through libuv's thread pool always in
 * flight under load (a task queued, a thread woken, the event loop woken when it is done): thousands a
 * second beside a CDN hit load, ~0.08 of a core in the pool's threads (docs/ARCHITECTURE.md "Request
 * logs"). Any other line is written at once, after the held ones, so the order of the lines is kept.
 * Counted in characters (a string's length, known without encoding it): an ASCII line's bytes, as
 * nearly every line is; a line with other characters holds a little more.
 */
export const REQUEST_LINES_HELD_BYTES = 64 * 1024;
export const REQUEST_LINES_HELD_MS = 250;

/**
 * The destination's front: request lines are held (hold), pino's own lines pass (write) and take the
 * held ones with them first. What is held is handed on when the process ends, with what the
 * destination still buffers, written synchronously.
 */
export class HeldLines implements DestinationStream {
  private held = '';
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly out: { write(data: string): unknown; flushSync(): void }) {}

  hold(line: string): void {
    this.held += line;
    if (this.held.length >= REQUEST_LINES_HELD_BYTES) this.release();
    else if (this.timer === undefined) this.timer = setTimeout(() => this.release(), REQUEST_LINES_HELD_MS).unref();
  }

  /** Hands what is held to the destination, which writes it off the event loop. */
  release(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.held === '') return;
    const held = this.held;
    this.held = '';
    this.out.write(held);
  }

  write(line: string): void {
    this.release();
    this.out.write(line);
  }

  flushSync(): void {
    this.release();
    this.out.flushSync();
  }
}

/** Every HeldLines of a logger of createLogger, released when the process ends. */
const FRONTS = new Set<HeldLines>();
let exitHooked = false;

function releaseAtExit(front: HeldLines): void {
  FRONTS.add(front);
  if (exitHooked) return;
  exitHooked = true;
  // beforeExit: the loop ran dry (pino ends its destination after a flush; the lines join it first).
  process.on('beforeExit', () => {
    for (const f of FRONTS) f.release();
  });
  // exit (process.exit, a crash): written now, synchronously, whether pino's own hook ran before or not.
  process.on('exit', () => {
    for (const f of FRONTS) {
      try {
        f.flushSync();
      } catch {
        // The reader is gone (EPIPE): nothing more can be said.
      }
    }
  });
}

/**
 * JSON lines go to stdout asynchronously: a line is handed to the kernel off the event loop, and
 * lines logged while a write is in flight go out together in the next one; request lines are held
 * first (HeldLines). What is still buffered is written synchronously when the process exits, a crash
 * included; only SIGKILL can lose it. Measured: 8.2 µs of CPU per request line against 11.4 µs for
 * pino's default synchronous destination (docs/ARCHITECTURE.md "Request logs").
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat'>): Logger {
  const options = { level: config.logLevel };
  if (config.logFormat === 'pretty') {
    const pretty = prettyDestination();
    const log = pino(options, pretty);
    PLAIN.set(log, pretty.write);
    return log;
  }
  const front = new HeldLines(destination({ dest: 1, sync: false, maxWrite: LOG_WRITE_BYTES }));
  releaseAtExit(front);
  const log = pino(options, front);
  PLAIN.set(log, (line) => front.hold(line));
  return log;
}

/**
 * Loggers made by createLogger (pino's defaults: level numbers, epoch time, `msg`, no serializers, hooks
 * or mixins), each with where its request lines go.
 */
const PLAIN = new WeakMap<Logger, (line: string) => void>();

/** Pino's level numbers of the request lines. */
export type LineLevel = 30 | 40;

/**
 * Writes one log line whose fields are already serialised: `fields` is a JSON object's members with a
 * leading comma (`,"surface":"cdn",...`), `msg` the message. A request line on every request was
 * pino's most expensive call on the hot paths (it walks and stringifies each field); for a logger of
 * createLogger's the line is put together here, byte for byte what pino writes
 * (`{"level":30,"time":...,"pid":...,"hostname":...,<fields>,"msg":...}`), and held for the same
 * destination (HeldLines), which keeps its place among the other lines. Any other logger (tests inject their own)
 * gets the fields through its info/warn.
 */
export interface LineWriter {
  /** Whether a line of `level` is written at all (ask first: then nothing is serialised for nothing). */
  enabled(level: LineLevel): boolean;
  write(level: LineLevel, fields: string, msg: string): void;
}

export function lineWriter(log: Logger): LineWriter {
  const enabled = (level: LineLevel): boolean => log.levelVal <= level;
  const sink = PLAIN.get(log);
  if (sink === undefined) {
    return {
      enabled,
      write(level, fields, msg) {
        const obj = JSON.parse(`{${fields.slice(1)}}`) as Record<string, unknown>;
        if (level === 40) log.warn(obj, msg);
        else log.info(obj, msg);
      },
    };
  }
  const chindings = (log as unknown as Record<symbol, unknown>)[symbols.chindingsSym] as string;
  return {
    enabled,
    write(level, fields, msg) {
      if (log.levelVal > level) return;
      sink(`{"level":${level},"time":${Date.now()}${chindings}${fields},"msg":${JSON.stringify(msg)}}\n`);
    },
  };
}

/** A string as a JSON value. */
export const jsonString = JSON.stringify as (s: string) => string;
