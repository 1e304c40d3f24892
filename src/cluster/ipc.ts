// The cluster channel: messages between the supervisor (the cluster primary) and its workers over
// node:cluster's IPC. Requests get one reply (or a rejection when the supervisor does not answer in
// time or the worker loses its channel); notes are one-way, either direction. Every message carries
// `s3edge: 1`, so node's own cluster messages and anything else are left alone.
import type { Worker as ClusterWorker } from 'node:cluster';

interface Envelope {
  s3edge: 1;
  kind: 'request' | 'reply' | 'note';
  type: string;
  id?: number;
  body?: unknown;
  /** A reply's failure: the handler threw (its message, never a stack). */
  error?: string;
}

function isEnvelope(msg: unknown): msg is Envelope {
  return typeof msg === 'object' && msg !== null && (msg as Envelope).s3edge === 1 && typeof (msg as Envelope).type === 'string';
}

/** The supervisor did not answer, or the channel is gone: callers decide what a missing answer means. */
export class ChannelError extends Error {
  override name = 'ChannelError';
}

type NoteHandler = (body: unknown) => void;

/** What a process needs to talk over a cluster channel (process in a worker, a cluster Worker in the primary). */
interface Endpoint {
  send(msg: Envelope): boolean;
  connected?: boolean;
  isConnected?(): boolean;
  on(event: 'message', fn: (msg: unknown) => void): unknown;
}

function connected(e: Endpoint): boolean {
  return typeof e.isConnected === 'function' ? e.isConnected() : e.connected !== false;
}

/** Sends unless the channel is closed (the other side exited between the check and the send). */
function trySend(endpoint: Endpoint, msg: Envelope): void {
  if (!connected(endpoint)) return;
  try {
    endpoint.send(msg);
  } catch {
    // ERR_IPC_CHANNEL_CLOSED: gone meanwhile.
  }
}

/** Runs the handler of a request and sends its reply (or its failure's message). */
async function answer(endpoint: Endpoint, handler: ((body: unknown) => unknown) | undefined, msg: Envelope, body: unknown): Promise<void> {
  let reply: Envelope;
  try {
    if (!handler) throw new Error(`no handler for ${msg.type}`);
    reply = { s3edge: 1, kind: 'reply', type: msg.type, id: msg.id as number, body: await handler(body) };
  } catch (err) {
    reply = { s3edge: 1, kind: 'reply', type: msg.type, id: msg.id as number, error: (err as Error).message };
  }
  trySend(endpoint, reply);
}

/** A worker's side: ask the supervisor, tell it things, hear its broadcasts. */
export class WorkerChannel {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly notes = new Map<string, NoteHandler>();
  private readonly handlers = new Map<string, (body: unknown) => unknown>();

  constructor(
    private readonly endpoint: Endpoint = process as unknown as Endpoint,
    private readonly timeoutMs = 5000,
  ) {
    endpoint.on('message', (msg) => this.receive(msg));
    // The supervisor gone: nobody will answer what is pending (another endpoint, a test's, is not the process's).
    if (endpoint === (process as unknown)) (process as NodeJS.EventEmitter).once('disconnect', () => this.failAll(new ChannelError('the supervisor is gone')));
  }

  /**
   * One request, one answer. Rejects with ChannelError on timeout or without a channel, with Error when
   * the handler failed. `timeoutMs` 0: no timeout (only the channel's loss ends the wait).
   */
  request<T>(type: string, body: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    if (!connected(this.endpoint)) return Promise.reject(new ChannelError('no channel to the supervisor'));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.pending.delete(id);
          reject(new ChannelError(`the supervisor did not answer ${type} within ${timeoutMs} ms`));
        },
        timeoutMs > 0 ? timeoutMs : 2 ** 31 - 1,
      );
      timer.unref();
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.sendOrFail(id, { s3edge: 1, kind: 'request', type, id, body });
    });
  }

  /** Fire and forget; dropped without a channel. */
  note(type: string, body: unknown): void {
    trySend(this.endpoint, { s3edge: 1, kind: 'note', type, body });
  }

  /** Notes of `type` from the supervisor (its broadcasts). One handler a type. */
  onNote(type: string, fn: NoteHandler): void {
    this.notes.set(type, fn);
  }

  /** Answers the supervisor's requests of `type` (SupervisorChannel.requestAll); the handler may return a promise. */
  handle(type: string, fn: (body: unknown) => unknown): void {
    this.handlers.set(type, fn);
  }

  private sendOrFail(id: number, msg: Envelope): void {
    try {
      this.endpoint.send(msg);
    } catch (err) {
      this.settle(id, undefined, new ChannelError((err as Error).message));
    }
  }

  private receive(msg: unknown): void {
    if (!isEnvelope(msg)) return;
    if (msg.kind === 'reply' && msg.id !== undefined) this.settle(msg.id, msg.body, msg.error === undefined ? undefined : new Error(msg.error));
    else if (msg.kind === 'note') this.notes.get(msg.type)?.(msg.body);
    else if (msg.kind === 'request' && msg.id !== undefined) void answer(this.endpoint, this.handlers.get(msg.type), msg, msg.body);
  }

  private settle(id: number, body: unknown, err: Error | undefined): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (err) p.reject(err);
    else p.resolve(body);
  }

  private failAll(err: Error): void {
    for (const id of [...this.pending.keys()]) this.settle(id, undefined, err);
  }
}

/** Notes a worker sends its supervisor. */
export const WORKER_NOTES = { listening: 'worker.listening', failed: 'worker.failed' } as const;
/** The supervisor's broadcast that starts every worker's drain. */
export const STOP_NOTE = 'supervisor.stop';
/**
 * A worker's first request: answered once the supervisor has opened the data directory (migrations, the
 * root user, the TLD seed), which no worker opens before. A worker forked later is answered at once.
 */
export const DATA_DIR_READY = 'supervisor.dataDirReady';
/** The metrics requests (metrics/cluster-metrics.ts): a worker asks the supervisor, which asks every worker. */
export const CLUSTER_METRICS = 'metrics.cluster';
export const WORKER_METRICS = 'metrics.worker';

/** Who sent a request or note to the supervisor. */
export interface Sender {
  /** The worker's slot, 1..N. */
  slot: number;
}

type RequestHandler = (body: unknown, from: Sender) => unknown;
type SupervisorNoteHandler = (body: unknown, from: Sender) => void;

/** The supervisor's side: answer workers' requests, take their notes, broadcast to all of them. */
export class SupervisorChannel {
  private readonly handlers = new Map<string, RequestHandler>();
  private readonly notes = new Map<string, SupervisorNoteHandler>();
  private readonly workers = new Map<Endpoint, Sender>();
  private readonly replies = new Map<number, (r: { ok: boolean; body?: unknown }) => void>();
  private nextId = 1;
  private readonly exits: ((from: Sender) => void)[] = [];

  /** Answers requests of `type`; the handler may return a promise. */
  handle(type: string, fn: RequestHandler): void {
    this.handlers.set(type, fn);
  }

  onNote(type: string, fn: SupervisorNoteHandler): void {
    this.notes.set(type, fn);
  }

  /** Starts listening to a (newly forked) worker. */
  attach(worker: ClusterWorker, slot: number): void {
    const endpoint = worker as unknown as Endpoint;
    const from: Sender = { slot };
    this.workers.set(endpoint, from);
    // A message read after the worker's exit is void: what the worker held was dropped at its exit.
    worker.on('message', (msg: unknown) => {
      if (this.workers.has(endpoint)) void this.receive(endpoint, from, msg);
    });
    // A send to a worker that is dying fails with EPIPE: it is leaving, nothing to report.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      this.workers.delete(endpoint);
      for (const fn of this.exits) fn(from);
    });
  }

  /** Called once per worker that exits (its slot may be taken by a new worker afterwards). */
  onWorkerExit(fn: (from: Sender) => void): void {
    this.exits.push(fn);
  }

  /** A note to every connected worker. */
  broadcast(type: string, body: unknown): void {
    for (const endpoint of this.workers.keys()) trySend(endpoint, { s3edge: 1, kind: 'note', type, body });
  }

  private async receive(endpoint: Endpoint, from: Sender, msg: unknown): Promise<void> {
    if (!isEnvelope(msg)) return;
    if (msg.kind === 'note') {
      try {
        this.notes.get(msg.type)?.(msg.body, from);
      } catch {
        // A bad note from one worker must not take the supervisor down.
      }
      return;
    }
    if (msg.kind === 'reply' && msg.id !== undefined) {
      this.replies.get(msg.id)?.(msg.error === undefined ? { ok: true, body: msg.body } : { ok: false });
      return;
    }
    if (msg.kind !== 'request' || msg.id === undefined) return;
    const handler = this.handlers.get(msg.type);
    await answer(endpoint, handler && ((body) => handler(body, from)), msg, msg.body);
  }

  /**
   * Asks every connected worker (WorkerChannel.handle) and resolves with the answers that came within
   * `timeoutMs`: a worker that is starting, stopping or stuck is left out rather than waited for.
   */
  requestAll(type: string, body: unknown, timeoutMs = 2000): Promise<unknown[]> {
    const asks = [...this.workers.keys()].filter(connected).map(
      (endpoint) =>
        new Promise<{ ok: boolean; body?: unknown }>((resolve) => {
          const id = this.nextId++;
          const timer = setTimeout(() => done({ ok: false }), timeoutMs);
          const done = (r: { ok: boolean; body?: unknown }): void => {
            clearTimeout(timer);
            this.replies.delete(id);
            resolve(r);
          };
          this.replies.set(id, done);
          trySend(endpoint, { s3edge: 1, kind: 'request', type, id, body });
        }),
    );
    return Promise.all(asks).then((rs) => rs.filter((r) => r.ok).map((r) => r.body));
  }
}
