// Host -> the verified project hostname serving it. Every route is held in memory and reloaded when the
// projects change: at once after this process's own writes (invalidate()), and within CHECK_MS after
// another process's (an admin command): SQLite's data_version is read at most that often, not per request.
import type { Repos } from '../db/repos/index.js';
import type { EdgeRoute } from './model.js';

/** How stale the table may be after another process commits. */
const CHECK_MS = 250;

export interface EdgeRoutesOptions {
  /** Monotonic milliseconds (tests). */
  now?: () => number;
  /** Called on a reload for each hostname that is gone or now has another origin (its cached answers are stale). */
  onStale?: (hostnameId: string) => void;
}

export class EdgeRoutes {
  private byHost = new Map<string, EdgeRoute>();
  private version: number | undefined;
  private checkedAt = -Infinity;
  private readonly now: () => number;

  constructor(
    private readonly repos: Pick<Repos, 'projects' | 'dataVersion'>,
    private readonly opts: EdgeRoutesOptions = {},
  ) {
    this.now = opts.now ?? (() => performance.now());
  }

  /** The route of a Host header's name (lower-case, no port, no trailing dot), if it is a verified project hostname. */
  lookup(hostname: string): EdgeRoute | undefined {
    this.refresh();
    return this.byHost.get(hostname);
  }

  /** Whether any hostname is routed (lets the listener skip the lookup when there are none). */
  get size(): number {
    this.refresh();
    return this.byHost.size;
  }

  /** Reload on the next lookup: this process changed a project, hostname, origin or rule. */
  invalidate(): void {
    this.version = undefined;
    this.checkedAt = -Infinity;
  }

  private refresh(): void {
    const t = this.now();
    if (this.version !== undefined && t - this.checkedAt < CHECK_MS) return;
    this.checkedAt = t;
    const version = this.repos.dataVersion();
    if (version === this.version) return;
    const previous = this.byHost;
    this.byHost = new Map(this.repos.projects.routes().map((r) => [r.hostname, r]));
    this.version = version;
    if (this.opts.onStale) this.reportStale(previous);
  }

  private reportStale(previous: ReadonlyMap<string, EdgeRoute>): void {
    const origins = new Map([...this.byHost.values()].map((r) => [r.hostnameId, JSON.stringify(r.origin)]));
    for (const old of previous.values()) {
      if (origins.get(old.hostnameId) !== JSON.stringify(old.origin)) this.opts.onStale?.(old.hostnameId);
    }
  }
}
