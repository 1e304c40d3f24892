// LISTEN s3edge_changes on a connection of its own (migration 002 has every watched table NOTIFY on
// commit): version() moves on each notification, so a node's caches of rarely written data (the route
// table, the TLD catalogue, the invalidation feed's tail) reload when another node changed it, as
// SQLite's data_version makes them do across processes. While the connection is down nothing would
// say so: version() then moves on every read (the caches reload at their own check interval, a second
// or less) and the feed reconnects with a growing delay.
import pg from 'pg';

export interface ChangeFeedOptions {
  /** Told when the connection drops or cannot be made (the password never appears: pg's errors carry none). */
  onError?: (err: Error) => void;
  connectionTimeoutMs?: number;
}

const MAX_RETRY_MS = 5000;

export class PgChangeFeed {
  private counter = 0;
  private client: pg.Client | undefined;
  private listening = false;
  private closed = false;
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly url: string,
    private readonly options: ChangeFeedOptions = {},
  ) {}

  /** Connects and listens; rejects when the first connection fails (the node's start fails in one line). */
  async start(): Promise<void> {
    await this.connect();
  }

  version(): number {
    // Listening: moves with notifications. Not listening: moves on every read (reload at each check).
    return this.listening ? this.counter : ++this.counter;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: 's3edge-changes',
      connectionTimeoutMillis: this.options.connectionTimeoutMs ?? 10_000,
      keepAlive: true,
    });
    client.on('notification', () => this.counter++);
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query('LISTEN s3edge_changes');
    if (this.closed) {
      await client.end();
      return;
    }
    this.client = client;
    this.listening = true;
    this.retryMs = 100;
    // Whatever changed while nobody listened: one reload for everything.
    this.counter++;
  }

  private lost(client: pg.Client, err?: Error): void {
    if (client !== this.client || this.closed) return;
    this.client = undefined;
    this.listening = false;
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
