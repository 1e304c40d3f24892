// Every purge of cached bytes goes through here: of the CDN edge cache (an asset, a bucket's object or
// prefix, everything a user owns) and of the edge proxy's response cache (a project hostname's answers).
// Each gateway process on a data directory has its own caches (issue 21: `serve --workers N`), so a
// purge is applied here at once and appended to the invalidation feed (cache_invalidations, migration
// 017); every process tails the feed every TAIL_MS and applies the purges the others appended. The
// feed is read only when the store's change version moved (another connection or node committed), from
// where this process started: a purge from before the start is never applied again. The append is
// written after the local purge and may fail without failing the purge: it is logged, and the local
// purge stands. One read of the feed at a time. Rows older than RETENTION_MS are pruned by whoever appends, at most every
// PRUNE_EVERY_MS.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Invalidation, NewInvalidation, Repos } from '../db/repos/index.js';
import type { ProxyResponseCache } from '../edge/response-cache.js';
import type { CdnCache } from './cdn-cache.js';

/** How often the feed is looked at (SCALE.md: other processes stop serving a purged copy within a second). */
export const TAIL_MS = 250;
/** How long a row is kept: far longer than any process takes to read it. */
export const RETENTION_MS = 10 * 60_000;
const PRUNE_EVERY_MS = 60_000;
/** Rows read per query while catching up. */
const READ_BATCH = 500;

export type CachePurge =
  | { kind: 'asset'; assetId: string }
  | { kind: 'object'; bucketId: string; key: string }
  /** A bucket's objects whose keys start with `prefix` ('' = all of them). */
  | { kind: 'prefix'; bucketId: string; prefix: string }
  /** Everything cached that the user owns (assets and bucket objects). */
  | { kind: 'owner'; userId: string }
  /** A project hostname's proxied answers. */
  | { kind: 'hostname'; hostnameId: string };

export interface CachePurgesOptions {
  cdnCache: Pick<CdnCache, 'purgeAsset' | 'purgeObject' | 'purgePrefix' | 'purgeOwner'>;
  proxyCache: Pick<ProxyResponseCache, 'purgeHostname'>;
  repos: Pick<Repos, 'cacheInvalidations' | 'dataVersion'>;
  /** Unix milliseconds (rows' `at`, the pruning's cutoff). */
  now: () => number;
  /** A monotonic clock in ms for how often this process prunes; default performance.now. */
  elapsed?: () => number;
  log: Pick<Logger, 'warn'>;
  /** How often the feed is read; 0: only when poll() is called (tests). Default TAIL_MS. */
  tailMs?: number;
}

export interface CachePurgesStats {
  /** Purges appended to the feed by this process. */
  appended: number;
  /** Appends that failed (the local purge happened all the same). */
  appendFailures: number;
  /** Other processes' purges applied here. */
  applied: number;
  /** The seq of the last feed row read. */
  position: number;
}

function toRow(p: CachePurge): Pick<NewInvalidation, 'kind' | 'a' | 'b'> {
  switch (p.kind) {
    case 'asset':
      return { kind: p.kind, a: p.assetId, b: null };
    case 'object':
      return { kind: p.kind, a: p.bucketId, b: p.key };
    case 'prefix':
      return { kind: p.kind, a: p.bucketId, b: p.prefix };
    case 'owner':
      return { kind: p.kind, a: p.userId, b: null };
    case 'hostname':
      return { kind: p.kind, a: p.hostnameId, b: null };
  }
}

/** undefined for a row this version cannot read (a later version's kind). */
function fromRow(r: Invalidation): CachePurge | undefined {
  switch (r.kind) {
    case 'asset':
      return { kind: r.kind, assetId: r.a };
    case 'object':
      return r.b === null ? undefined : { kind: r.kind, bucketId: r.a, key: r.b };
    case 'prefix':
      return r.b === null ? undefined : { kind: r.kind, bucketId: r.a, prefix: r.b };
    case 'owner':
      return { kind: r.kind, userId: r.a };
    case 'hostname':
      return { kind: r.kind, hostnameId: r.a };
    default:
      return undefined;
  }
}

export class CachePurges {
  /** Tells this process's rows from the others' (a pid may be reused; this is not). */
  readonly instance = randomUUID();
  /** Undefined until the start's position is read (a failed read is tried again by the next poll). */
  private position: number | undefined;
  private version: number;
  private starting: Promise<void> | undefined;
  /** The feed read in progress: polls never overlap. */
  private polling: Promise<number> | undefined;
  private lastPruneAt = -Infinity;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly appends = new Set<Promise<void>>();
  private readonly counters = { appended: 0, appendFailures: 0, applied: 0 };
  /** A failing feed is reported once, not every tick. */
  private tailFailing = false;

  constructor(private readonly opts: CachePurgesOptions) {
    // data_version first: a row committed in between is then behind the start and is never applied.
    this.version = opts.repos.dataVersion();
    this.starting = this.start();
    const tailMs = opts.tailMs ?? TAIL_MS;
    if (tailMs > 0) {
      this.timer = setInterval(() => void this.tick(), tailMs);
      this.timer.unref();
    }
  }

  /** Purges here and tells the other processes; how many cached objects (or answers' bodies) went here. */
  purge(p: CachePurge): number {
    const dropped = this.local(p);
    this.append(p);
    return dropped;
  }

  /**
   * Purges here only: for purges every process derives by itself from the database (the edge route
   * table drops a hostname's answers when it sees the hostname gone or re-pointed).
   */
  local(p: CachePurge): number {
    const { cdnCache } = this.opts;
    switch (p.kind) {
      case 'asset':
        return cdnCache.purgeAsset(p.assetId);
      case 'object':
        return cdnCache.purgeObject(p.bucketId, p.key);
      case 'prefix':
        return cdnCache.purgePrefix(p.bucketId, p.prefix);
      case 'owner':
        return cdnCache.purgeOwner(p.userId);
      case 'hostname':
        return this.opts.proxyCache.purgeHostname(p.hostnameId);
    }
  }

  /**
   * Reads the feed if another connection committed since the last read (after the read in progress,
   * if any); how many purges were applied.
   */
  async poll(): Promise<number> {
    while (this.polling !== undefined) await this.polling.catch(() => 0);
    if (this.position !== undefined && this.opts.repos.dataVersion() === this.version) return 0;
    this.polling = this.read();
    try {
      return await this.polling;
    } finally {
      this.polling = undefined;
    }
  }

  /** Where this process starts reading; never rejects (a failure is logged, and tried again by the next poll). */
  private async start(): Promise<void> {
    try {
      this.position = await this.opts.repos.cacheInvalidations.lastSeq();
    } catch (err) {
      this.opts.log.warn({ err }, 'cache purges: the invalidation feed cannot be read; purges by other processes wait');
    } finally {
      this.starting = undefined;
    }
  }

  private async read(): Promise<number> {
    const { repos } = this.opts;
    if (this.position === undefined) await (this.starting ?? this.start());
    if (this.position === undefined) return 0;
    const version = repos.dataVersion();
    if (version === this.version) return 0;
    let applied = 0;
    for (;;) {
      const rows = await repos.cacheInvalidations.after(this.position as number, READ_BATCH);
      for (const row of rows) {
        this.position = row.seq;
        if (row.writer === this.instance) continue;
        const purge = fromRow(row);
        if (!purge) continue;
        this.local(purge);
        applied++;
      }
      if (rows.length < READ_BATCH) break;
    }
    // Moved only once every row is read: a failed read is tried again by the next poll.
    this.version = version;
    this.counters.applied += applied;
    return applied;
  }

  stats(): CachePurgesStats {
    return { ...this.counters, position: this.position ?? 0 };
  }

  /** Resolves once the appends under way are committed or have failed. */
  async idle(): Promise<void> {
    while (this.appends.size > 0) await Promise.allSettled([...this.appends]);
  }

  /** Stops the tail and waits for the appends under way (call before the database closes). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.polling?.catch(() => 0);
    await this.idle();
  }

  private async tick(): Promise<void> {
    try {
      await this.poll();
      this.tailFailing = false;
    } catch (err) {
      if (!this.tailFailing) this.opts.log.warn({ err }, 'cache purges: the invalidation feed cannot be read; purges by other processes wait');
      this.tailFailing = true;
    }
  }

  private append(p: CachePurge): void {
    const { repos, now } = this.opts;
    const row = { ...toRow(p), writer: this.instance };
    const write = async (): Promise<void> => {
      const at = now();
      await repos.cacheInvalidations.append({ ...row, at });
      // Spaced on the monotonic clock: a wall-clock step back must not stop the pruning for its length.
      const t = this.opts.elapsed ? this.opts.elapsed() : performance.now();
      if (t - this.lastPruneAt >= PRUNE_EVERY_MS) {
        this.lastPruneAt = t;
        await repos.cacheInvalidations.pruneBefore(at - RETENTION_MS);
      }
    };
    const appending = write().then(
      () => void this.counters.appended++,
      (err: unknown) => {
        this.counters.appendFailures++;
        this.opts.log.warn({ err, purge: p.kind }, 'cache purges: a purge could not be appended to the invalidation feed; other processes keep their copies');
      },
    );
    this.appends.add(appending);
    void appending.finally(() => this.appends.delete(appending));
  }
}
