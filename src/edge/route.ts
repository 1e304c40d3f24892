// Host -> the verified project hostname serving it. Every route is held in memory; lookups are
// synchronous (the listener routes every request with one) and never wait for the database. The table
// is reloaded, one load at a time: at once after this process's own writes (invalidate(), which the
// writer awaits), and within CHECK_MS (plus one load) after another process's (an admin command): the
// store's change version is read at most that often, not per request, and a move starts a load in the
// background while lookups go on with the table they have.
import type { Repos } from '../db/repos/index.js';
import type { EdgeRoute } from './model.js';

/** How stale the table may be after another process commits. */
const CHECK_MS = 250;

export interface EdgeRoutesOptions {
  /** Monotonic milliseconds (tests). */
  now?: () => number;
  /** Called on a reload for each hostname that is gone or now has another origin (its cached answers are stale). */
  onStale?: (hostnameId: string) => void;
  /** A load that failed (tried again at the next check). */
  onError?: (err: unknown) => void;
}

export class EdgeRoutes {
  private byHost = new Map<string, EdgeRoute>();
  /** The change version the table was loaded at; undefined: none loaded, or the last load failed. */
  private version: number | undefined;
  private checkedAt = -Infinity;
  private readonly now: () => number;
  /** The load under way, and the one that runs after it (asked for while it ran). */
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(
    private readonly repos: Pick<Repos, 'projects' | 'dataVersion'>,
    private readonly opts: EdgeRoutesOptions = {},
  ) {
    this.now = opts.now ?? (() => performance.now());
  }

  /** The route of a Host header's name (lower-case, no port, no trailing dot), if it is a verified project hostname. */
  lookup(hostname: string): EdgeRoute | undefined {
    this.check();
    return this.byHost.get(hostname);
  }

  /** Whether any hostname is routed (lets the listener skip the lookup when there are none). */
  get size(): number {
    this.check();
    return this.byHost.size;
  }

  /** This process changed a project, hostname, origin or rule: resolves once a table loaded after the change is in use. */
  invalidate(): Promise<void> {
    return this.reload();
  }

  /** Loads the table (after the load under way, which may have read before the caller's change). Never rejects. */
  reload(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    const queued = this.running.then(() => {
      this.queued = undefined;
      return this.start();
    });
    this.queued = queued;
    return queued;
  }

  /** Resolves when no load is under way or waiting (tests). */
  async settled(): Promise<void> {
    while (this.running || this.queued) await (this.queued ?? this.running);
  }

  /** The cheap synchronous check: at most every CHECK_MS, a load in the background when the version moved. */
  private check(): void {
    if (this.running || this.queued) return;
    const t = this.now();
    if (t - this.checkedAt < CHECK_MS) return;
    this.checkedAt = t;
    if (this.version !== undefined && this.repos.dataVersion() === this.version) return;
    void this.start();
  }

  private start(): Promise<void> {
    const load = this.load().finally(() => {
      if (this.running === load) this.running = undefined;
    });
    this.running = load;
    return load;
  }

  private async load(): Promise<void> {
    try {
      // The version first: a change committed while loading moves it again, so the next check reloads.
      const version = this.repos.dataVersion();
      const routes = await this.repos.projects.routes();
      const previous = this.byHost;
      this.byHost = new Map(routes.map((r) => [r.hostname, r]));
      this.version = version;
      this.checkedAt = this.now();
      if (this.opts.onStale) this.reportStale(previous);
    } catch (err) {
      this.version = undefined;
      this.opts.onError?.(err);
    }
  }

  private reportStale(previous: ReadonlyMap<string, EdgeRoute>): void {
    const origins = new Map([...this.byHost.values()].map((r) => [r.hostnameId, JSON.stringify(r.origin)]));
    for (const old of previous.values()) {
      if (origins.get(old.hostnameId) !== JSON.stringify(old.origin)) this.opts.onStale?.(old.hostnameId);
    }
  }
}
