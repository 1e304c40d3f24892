// Watches the proxied traffic for anomalies. observe() runs on the request path: O(1), never throws,
// only counts into the hostname's open bucket. evaluate() (a timer, and readers before they list
// events, so an injected clock needs no timer) closes the buckets that have ended, runs the detectors
// and opens, worsens or ends events through the repository (one evaluation at a time). One open event per (hostname, kind): it
// lasts while the buckets keep showing it and ends at the start of the first closed bucket that does
// not (= the end of the last one that did). Memory: hostnames in an LRU, each with a bounded history.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { newId } from '../../db/ids.js';
import type { EdgeConfig } from '../../config/schema.js';
import type { AnomaliesRepo } from '../../db/repos/anomalies.js';
import { detect, type Finding, type Outcomes } from './detectors.js';
import { ANOMALY_KINDS, type AnomalyEvent, type AnomalyKind } from '../../db/repos/anomaly-event.js';
import { HostSeries, type BucketSummary, type ObservedRequest } from './series.js';

export type { ObservedRequest } from './series.js';

/**
 * The monitor as the proxy and the readers use it: the EdgeMonitor itself, or in a cluster worker a
 * forwarder to the supervisor's one (src/cluster/shared-monitor.ts), so that one monitor sees all traffic.
 */
export interface TrafficMonitor {
  /** Counts one proxied request; never throws. */
  observe(r: ObservedRequest): void;
  /** Closes the buckets that have ended and records events; a forwarder's resolves once the supervisor's has. */
  evaluate(): void | Promise<void>;
  close(): void;
}

export interface EdgeMonitorDeps {
  repo: AnomaliesRepo;
  config: EdgeConfig['anomalies'];
  /** The wall clock (epoch ms): buckets are aligned on it, and events dated by it. */
  now: () => number;
  /**
   * A monotonic clock (ms): a wall clock that moved a bucket or more apart from it was stepped (NTP, a VM
   * resumed, `date -s`), and the buckets move with it rather than stall or fill with empty ones.
   */
  elapsed: () => number;
  log: Pick<Logger, 'warn'>;
  /** Hostnames tracked at once (least recently seen dropped first). */
  maxHostnames?: number;
}

export interface EdgeMonitorStats {
  hostnames: number;
  openEvents: number;
  /** Requests counted since start. */
  observed: number;
  /** Requests observe() could not count (malformed). */
  dropped: number;
}

interface HostState {
  series: HostSeries;
  open: Map<AnomalyKind, AnomalyEvent>;
}

const DEFAULT_MAX_HOSTNAMES = 100_000;
/** History kept per hostname, in baselines: enough for the baseline plus room to look back. */
const HISTORY_BASELINES = 2;

const SEVERITY_RANK = { low: 0, medium: 1, high: 2 } as const;

/** Whether `f` is worse than what the open event recorded (a drop is worse when lower). */
function worse(kind: AnomalyKind, open: AnomalyEvent, f: Finding): boolean {
  if (SEVERITY_RANK[f.severity] !== SEVERITY_RANK[open.severity]) return SEVERITY_RANK[f.severity] > SEVERITY_RANK[open.severity];
  return kind === 'rate-drop' ? f.observed < open.observed : f.observed > open.observed;
}

export class EdgeMonitor implements TrafficMonitor {
  // Made with the first hostname tracked: the LRU allocates its whole index at once (maxHostnames).
  private hostsLru: LRUCache<string, HostState> | undefined;
  /** Open events of hostnames the LRU dropped: ended at the next evaluate(). */
  private readonly orphans: { event: AnomalyEvent; endedAt: number }[] = [];
  private readonly widthMs: number;
  private readonly maxHistory: number;
  private readonly timer: NodeJS.Timeout;
  private observed = 0;
  private dropped = 0;
  /** The open events restored at start, then every evaluation: each runs after the one before. */
  private chain: Promise<void>;
  /** Both clocks when last compared (followSteps). */
  private wallAt: number;
  private elapsedAt: number;

  constructor(private readonly deps: EdgeMonitorDeps) {
    this.widthMs = Math.max(1, deps.config.bucketSeconds) * 1000;
    this.maxHistory = Math.max(1, deps.config.baselineBuckets) * HISTORY_BASELINES;
    this.wallAt = deps.now();
    this.elapsedAt = deps.elapsed();
    this.chain = this.restore(this.bucketOf(deps.now()));
    this.timer = setInterval(() => void this.evaluate(), Math.min(this.widthMs / 5, 10_000));
    this.timer.unref();
  }

  private get hosts(): LRUCache<string, HostState> {
    return (this.hostsLru ??= new LRUCache<string, HostState>({
      max: Math.max(1, this.deps.maxHostnames ?? DEFAULT_MAX_HOSTNAMES),
      dispose: (state, _key, reason) => {
        if (reason !== 'evict') return;
        for (const event of state.open.values()) this.orphans.push({ event, endedAt: state.series.closedUntil });
      },
    }));
  }

  /** Counts one proxied request. Cheap and silent: it runs on the request path. */
  observe(r: ObservedRequest): void {
    try {
      if (typeof r.hostname !== 'string' || r.hostname === '' || !Number.isFinite(r.time)) {
        this.dropped += 1;
        return;
      }
      // The clocks are compared only when it is cheap to: a hostname tracked anew (a step before it is the
      // others' alone), or a time far from its open buckets (a quiet hostname, or a stepped clock).
      let state = this.hosts.get(r.hostname);
      if (state === undefined) {
        this.followSteps();
        state = this.track(r.hostname, r.ownerId, this.bucketOf(r.time));
      } else if (state.series.outOfLine(r.time)) this.followSteps();
      state.series.ownerId = r.ownerId;
      state.series.add(r);
      this.observed += 1;
    } catch {
      this.dropped += 1;
    }
  }

  /**
   * Closes every bucket that has ended by now() and records what the detectors found, after the
   * evaluation under way if any. Never rejects.
   */
  evaluate(): Promise<void> {
    const run = this.chain.then(() => this.run()).catch((err: unknown) => this.deps.log.warn({ err }, 'edge anomaly evaluation failed'));
    this.chain = run;
    return run;
  }

  private async run(): Promise<void> {
    this.followSteps();
    const before = this.bucketOf(this.deps.now());
    await this.endOrphans();
    // The detectors run as the buckets close (they read the history as it was then); the writes follow.
    const closed: { state: HostState; start: number; outcomes: Outcomes }[] = [];
    for (const state of this.hostsLru?.values() ?? []) {
      try {
        state.series.closeUntil(before, (start, bucket, history) => closed.push({ state, start, outcomes: detect(bucket, history, this.deps.config) }));
      } catch (err) {
        this.deps.log.warn({ err, hostname: state.series.hostname }, 'edge anomaly evaluation failed');
      }
    }
    for (const c of closed) await this.judge(c.state, c.start, c.outcomes);
  }

  /** The events still open from before the start, so an ongoing one is not reported twice. Never rejects. */
  private async restore(nowBucket: number): Promise<void> {
    try {
      for (const event of await this.deps.repo.open()) {
        const state = this.hosts.get(event.hostname) ?? this.track(event.hostname, event.ownerId, nowBucket);
        if (!state.open.has(event.kind)) state.open.set(event.kind, event);
      }
    } catch (err) {
      this.deps.log.warn({ err }, 'edge anomaly: the open events could not be read');
    }
  }

  stats(): EdgeMonitorStats {
    let openEvents = 0;
    for (const state of this.hostsLru?.values() ?? []) openEvents += state.open.size;
    return { hostnames: this.hostsLru?.size ?? 0, openEvents, observed: this.observed, dropped: this.dropped };
  }

  close(): void {
    clearInterval(this.timer);
  }

  private bucketOf(time: number): number {
    return Math.floor(time / this.widthMs) * this.widthMs;
  }

  /**
   * Whether the wall clock was stepped since the clocks were last compared; if so every series moves by
   * the step (whole buckets). An hour back no longer stalls every hostname's buckets for an hour (then one
   * bucket holding the hour's requests: a false spike); an hour forward no longer closes an hour of
   * empty buckets (a false drop, and a baseline of nothing). Events already recorded keep their dates.
   */
  private followSteps(): void {
    const wall = this.deps.now();
    const elapsed = this.deps.elapsed();
    const step = wall - this.wallAt - (elapsed - this.elapsedAt);
    this.wallAt = wall;
    this.elapsedAt = elapsed;
    if (!(Math.abs(step) >= this.widthMs)) return;
    const shift = Math.round(step / this.widthMs) * this.widthMs;
    for (const state of this.hostsLru?.values() ?? []) state.series.shift(shift);
    this.deps.log.warn({ stepMs: Math.round(step) }, 'edge anomalies: the wall clock was stepped; the buckets move with it');
  }

  private track(hostname: string, ownerId: string, firstStart: number): HostState {
    const state: HostState = { series: new HostSeries(hostname, ownerId, this.widthMs, this.maxHistory, firstStart), open: new Map() };
    this.hosts.set(hostname, state);
    return state;
  }

  private async endOrphans(): Promise<void> {
    while (this.orphans.length > 0) {
      const o = this.orphans[0] as { event: AnomalyEvent; endedAt: number };
      try {
        await this.deps.repo.close(o.event.id, o.endedAt);
      } catch (err) {
        this.deps.log.warn({ err, hostname: o.event.hostname, kind: o.event.kind }, 'edge anomaly could not be ended');
        return; // the database is failing: try again next time
      }
      this.orphans.shift();
    }
  }

  /** One closed bucket of one hostname: open, worsen or end its events. */
  private async judge(state: HostState, start: number, outcomes: Outcomes): Promise<void> {
    const { repo, log } = this.deps;
    const hostname = state.series.hostname;
    for (const kind of ANOMALY_KINDS) {
      const outcome = outcomes[kind];
      const open = state.open.get(kind);
      try {
        if (outcome === 'unknown') continue;
        if (outcome === 'none') {
          if (open) {
            // Not before it began, should the wall clock have been stepped back meanwhile.
            await repo.close(open.id, Math.max(start, open.startedAt));
            state.open.delete(kind);
          }
        } else if (!open) {
          const event: AnomalyEvent = { id: newId(), hostname, ownerId: state.series.ownerId, kind, startedAt: start, endedAt: null, ...outcome };
          await repo.insert(event);
          state.open.set(kind, event);
        } else if (worse(kind, open, outcome)) {
          await repo.update(open.id, outcome.severity, outcome.observed, outcome.detail);
          state.open.set(kind, { ...open, severity: outcome.severity, observed: outcome.observed, detail: outcome.detail });
        }
      } catch (err) {
        // One failed write (another process holds the open event, a busy database) loses one bucket's news, not the series.
        log.warn({ err, hostname, kind }, 'edge anomaly could not be recorded');
      }
    }
  }
}
