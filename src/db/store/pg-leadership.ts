// Which node runs the singleton jobs (multipart sweep, blob GC, scrub, request-log roll-ups and
// retention) when many nodes share one PostgreSQL: the one holding a session advisory lock on a
// connection of its own. A node that loses the connection (it died, PostgreSQL failed over) loses the
// lock with it, and another node's next attempt takes it: at most one leader at a time, a new one
// within `retryMs` of the old one's session ending. One SQLite data directory has one supervisor,
// which always leads (alwaysLeader).
import pg from 'pg';

export interface Leadership {
  /** Whether this process runs the singleton jobs now; checked before each round of a job. */
  isLeader(): boolean;
  close(): Promise<void>;
}

export const alwaysLeader: Leadership = { isLeader: () => true, close: async () => undefined };

/** pg_advisory_lock key of the jobs' leadership ('S3EDJOBS'; the migrations use another). */
const JOBS_LOCK = 0x5333_4544_4a4f;

export interface PgLeadershipOptions {
  /** How often a follower tries to take the lead, and the leader checks its session; default 5 s. */
  retryMs?: number;
  connectionTimeoutMs?: number;
  /** Told when this node takes or loses the lead. */
  onChange?: (leader: boolean) => void;
  onError?: (err: Error) => void;
}

export class PgLeadership implements Leadership {
  private client: pg.Client | undefined;
  private leader = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private attempt: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly options: PgLeadershipOptions = {},
  ) {}

  /** Makes the first attempt (a node that can lead leads before its jobs' first round), then retries on a timer. */
  async start(): Promise<void> {
    await this.tryLead();
    this.schedule();
  }

  isLeader(): boolean {
    return this.leader;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.attempt;
    this.setLeader(false);
    const client = this.client;
    this.client = undefined;
    // Ending the session releases the lock: another node takes the lead on its next attempt.
    await client?.end().catch(() => undefined);
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      void this.tryLead().finally(() => this.schedule());
    }, this.options.retryMs ?? 5000);
    this.timer.unref();
  }

  private tryLead(): Promise<void> {
    this.attempt = this.attemptOnce().catch((err: Error) => {
      this.options.onError?.(err);
      this.drop();
    });
    return this.attempt;
  }

  private async attemptOnce(): Promise<void> {
    if (this.closed) return;
    if (this.leader && this.client !== undefined) {
      // A leader checks its session is alive: a cut that sent no reset is noticed here, not only by keepalive.
      await this.client.query('SELECT 1');
      return;
    }
    if (this.client === undefined) {
      const client = new pg.Client({
        connectionString: this.url,
        application_name: 's3edge-jobs',
        connectionTimeoutMillis: this.options.connectionTimeoutMs ?? 10_000,
        keepAlive: true,
        query_timeout: 5000,
      });
      client.on('error', (err) => {
        if (client !== this.client) return;
        this.options.onError?.(err);
        this.drop();
      });
      client.on('end', () => {
        if (client === this.client) this.drop();
      });
      this.client = client;
      await client.connect();
    }
    const { rows } = await this.client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [JOBS_LOCK]);
    if (!this.closed && rows[0]?.locked === true) this.setLeader(true);
  }

  /** The session is gone, and the lock with it. */
  private drop(): void {
    const client = this.client;
    this.client = undefined;
    this.setLeader(false);
    client?.end().catch(() => undefined);
  }

  private setLeader(leader: boolean): void {
    if (leader === this.leader) return;
    this.leader = leader;
    this.options.onChange?.(leader);
  }
}
