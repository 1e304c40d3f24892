// LISTEN on a connection of its own, for two channels:
// - s3edge_changes (migration 002): version() moves on each notification, so a node's caches of
//   rarely written data (the route table, the TLD catalogue, the invalidation feed's tail) reload when
//   another node changed it, as SQLite's data_version makes them do across processes. While the
//   connection is down nothing would say so: version() then moves on every read (the caches reload at
//   their own check interval, a second or less).
// - s3edge_rows (migration 005): each note names the object or bucket rows a commit changed, handed to
//   the subscribers (db/metadata-cache.ts) as it arrives. `live` says whether they are heard: false
//   while the connection is down and until it has been made again, and subscribers are reset both
//   when it is lost and when it is regained.
//
// Confirmations. A note is sent to every listener at commit, but a listening backend that the database
// host does not schedule at once delivers it late (tens of ms were seen on a loaded machine). What is
// certain: PostgreSQL signals every listening backend before the committing client hears COMMIT's
// answer, and a signalled backend sends its pending notes before it answers the next statement it
// reads. So a round trip on this connection (SELECT 1) that was sent after a commit ends after that
// commit's notes arrived (and were applied: pg emits them as it reads them, in order).
// confirmedAfter(t) says whether a round trip sent after t has ended; confirmAfter(t) waits for one.
// The row cache serves an entry only under such a confirmation (db/metadata-cache.ts), which is what
// makes a write acknowledged on one node read at once on every other (docs/SCALE.md, "Coherence").
//
// The connection is made again with a growing delay. A round trip not answered within
// LIVENESS_TIMEOUT_MS loses the connection (a partition, a stopped host say nothing), and an idle
// connection is checked every second.
import pg from 'pg';
import { COHERENCE_LEASE_MS, type RowChange, type RowChangeListener, type RowChangeSource } from '../metadata-cache.js';

export interface ChangeFeedOptions {
  /** Told when the connection drops or cannot be made (the password never appears: pg's errors carry none). */
  onError?: (err: Error) => void;
  connectionTimeoutMs?: number;
  /** A round trip on the connection not answered within this loses it; default 3 s. */
  livenessTimeoutMs?: number;
  /** How often an idle connection is checked; default 1 s. */
  livenessIntervalMs?: number;
}

const MAX_RETRY_MS = 5000;
const CHANGES = 's3edge_changes';
const ROWS = 's3edge_rows';

/** Why a connection was given up although it did not report an error. */
export class FeedTimeoutError extends Error {
  constructor(ms: number) {
    super(`the change feed's connection did not answer within ${ms} ms (made again; cached rows are not served meanwhile)`);
    this.name = 'FeedTimeoutError';
  }
}

interface RoundTrip {
  /** performance.now() just before it was sent (no later than it left). */
  sentAt: number;
  waiters: Array<() => void>;
}

export class PgChangeFeed implements RowChangeSource {
  readonly leaseMs = COHERENCE_LEASE_MS;
  private counter = 0;
  private client: pg.Client | undefined;
  private listening = false;
  private closed = false;
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | undefined;
  private livenessTimer: NodeJS.Timeout | undefined;
  private readonly listeners: RowChangeListener[] = [];
  /** When the last round trip that ended was sent: every note committed before then has been applied. */
  private confirmedAt = Number.NEGATIVE_INFINITY;
  private inFlight: RoundTrip | undefined;
  /** Waiting for a round trip sent after the one in flight. */
  private next: Array<() => void> = [];
  private readonly livenessTimeoutMs: number;
  private readonly livenessIntervalMs: number;

  constructor(
    private readonly url: string,
    private readonly options: ChangeFeedOptions = {},
  ) {
    this.livenessTimeoutMs = options.livenessTimeoutMs ?? 3000;
    this.livenessIntervalMs = options.livenessIntervalMs ?? 1000;
  }

  /** Connects and listens; rejects when the first connection fails (the node's start fails in one line). */
  async start(): Promise<void> {
    await this.connect();
  }

  version(): number {
    // Listening: moves with notifications. Not listening: moves on every read (reload at each check).
    return this.listening ? this.counter : ++this.counter;
  }

  get live(): boolean {
    return this.listening;
  }

  subscribe(listener: RowChangeListener): void {
    this.listeners.push(listener);
  }

  /**
   * Whether a round trip sent after `time` (performance.now()) has ended. While confirmations are asked
   * for, one is started whenever the last is half a lease old, so that under traffic they stay fresh
   * without anyone waiting.
   */
  confirmedAfter(time: number): boolean {
    if (!this.listening) return false;
    if (this.inFlight === undefined && performance.now() - this.confirmedAt > COHERENCE_LEASE_MS / 2) this.roundTrip();
    return this.confirmedAt > time;
  }

  /** Resolves once a round trip sent after `time` has ended, or the feed is lost (then nothing is served). */
  confirmAfter(time: number): Promise<void> {
    if (!this.listening || this.confirmedAt > time) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.inFlight !== undefined && this.inFlight.sentAt > time) this.inFlight.waiters.push(resolve);
      else {
        this.next.push(resolve);
        if (this.inFlight === undefined) this.roundTrip();
      }
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.livenessTimer);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    this.release();
    await client?.end().catch(() => undefined);
  }

  private roundTrip(): void {
    const client = this.client;
    if (client === undefined || !this.listening) {
      this.release();
      return;
    }
    const trip: RoundTrip = { sentAt: performance.now(), waiters: this.next };
    this.next = [];
    this.inFlight = trip;
    let ended = false;
    const end = (confirmed: boolean): void => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      if (this.inFlight === trip) this.inFlight = undefined;
      if (confirmed && client === this.client) this.confirmedAt = Math.max(this.confirmedAt, trip.sentAt);
      for (const resolve of trip.waiters) resolve();
      // Those who came while it was in flight want one sent after their time.
      if (this.inFlight === undefined && this.next.length > 0) this.roundTrip();
    };
    const timer = setTimeout(() => {
      this.lost(client, new FeedTimeoutError(this.livenessTimeoutMs));
      end(false);
    }, this.livenessTimeoutMs);
    timer.unref();
    // Its notes come before its answer. A failed round trip loses the connection (the caches reset)
    // before anyone waiting is let go.
    client.query('SELECT 1').then(
      () => end(true),
      (err: Error) => {
        this.lost(client, err);
        end(false);
      },
    );
  }

  /** Everyone waiting is let go: the feed is down, and the caches were reset. */
  private release(): void {
    const waiting = [...(this.inFlight?.waiters ?? []), ...this.next];
    this.inFlight = undefined;
    this.next = [];
    for (const resolve of waiting) resolve();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: 's3edge-changes',
      connectionTimeoutMillis: this.options.connectionTimeoutMs ?? 10_000,
      keepAlive: true,
    });
    client.on('notification', (msg) => this.notified(msg));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query(`LISTEN ${CHANGES}; LISTEN ${ROWS}`);
    if (this.closed) {
      await client.end();
      return;
    }
    this.client = client;
    // Whatever changed while nobody listened: one reload for everything, and the row caches start
    // empty (a load begun before this is not kept). Only then are they served.
    this.counter++;
    this.confirmedAt = Number.NEGATIVE_INFINITY;
    this.resetListeners();
    this.listening = true;
    this.retryMs = 100;
    clearInterval(this.livenessTimer);
    this.livenessTimer = setInterval(() => this.checkLiveness(), this.livenessIntervalMs);
    this.livenessTimer.unref();
  }

  private checkLiveness(): void {
    if (!this.listening || this.inFlight !== undefined) return;
    if (performance.now() - this.confirmedAt < this.livenessIntervalMs) return;
    this.roundTrip();
  }

  private notified(msg: pg.Notification): void {
    // From any connection of ours, even one being replaced: dropping an entry is always safe.
    if (msg.channel !== ROWS) {
      this.counter++;
      return;
    }
    const change = parseRowNote(msg.payload);
    for (const listener of this.listeners) listener.changed(change);
  }

  private resetListeners(): void {
    for (const listener of this.listeners) listener.reset();
  }

  private lost(client: pg.Client, err?: Error): void {
    if (client !== this.client || this.closed) return;
    this.client = undefined;
    this.listening = false;
    this.confirmedAt = Number.NEGATIVE_INFINITY;
    clearInterval(this.livenessTimer);
    this.resetListeners();
    this.release();
    if (err) this.options.onError?.(err);
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.connect().catch((err: Error) => {
        this.options.onError?.(err);
        this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
        this.scheduleReconnect();
      });
    }, this.retryMs);
    this.retryTimer.unref();
  }
}

/** A note of migration 005; one this version cannot read drops everything (the safe answer). */
export function parseRowNote(payload: string | undefined): RowChange {
  let note: unknown;
  try {
    note = JSON.parse(payload ?? '');
  } catch {
    return { kind: 'all' };
  }
  if (!Array.isArray(note)) return { kind: 'all' };
  const [kind, a, b] = note as unknown[];
  if (kind === 'o' && typeof a === 'string') {
    if (typeof b === 'string') return { kind: 'object', bucketId: a, key: b };
    if (note.length === 2) return { kind: 'bucket-objects', bucketId: a };
  }
  if (kind === 'b' && typeof a === 'string' && note.length === 2) return { kind: 'bucket', name: a };
  return { kind: 'all' };
}
