// Host -> the verified project hostname serving it. Every route is held in memory and read
// synchronously (lookup, size). The table is reloaded, one load at a time: at once after this process's
// own writes (invalidate(), which the writer awaits), and after another process's (an admin command)
// once CHECK_MS have passed: fresh() reads the store's change version at most that often, not per
// request, and starts a load only when it moved; a request for a routed hostname waits for that load
// (edge/handler.ts), so one sent after a change of its rules or origin sees it.
import type { Repos } from '../db/repos/index.js';
import type { EdgeRoute } from '../db/repos/hostname-model.js';

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

  /**
   * The cheap synchronous check before lookups: undefined when the table is current, else the load to
   * wait for (under way, or started now because the change version moved). Its promise never rejects.
   */
  fresh(): Promise<void> | undefined {
    if (this.queued || this.running) return this.queued ?? this.running;
    const t = this.now();
    if (t - this.checkedAt < CHECK_MS) return undefined;
    this.checkedAt = t;
    if (this.version !== undefined && this.repos.dataVersion() === this.version) return undefined;
    return this.start();
  }

  /** The route of a Host header's name (lower-case, no port, no trailing dot), if it is a verified project hostname. */
  lookup(hostname: string): EdgeRoute | undefined {
    return this.byHost.get(hostname);
  }

  /** Whether any hostname is routed (lets the listener skip the lookup when there are none). */
  get size(): number {
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
