// One hostname's proxied traffic as a series of fixed buckets (bucketSeconds wide, aligned to the epoch):
// the bucket being filled, and a bounded history of closed ones. Adding a request is O(1) and allocates
// nothing per request beyond bounded maps: a heavy-hitter summary of sources (Misra-Gries) and per-country
// counts. A quiet stretch enters the history as empty buckets; a long one stops adding them once the whole
// history is empty (nothing more can change).
import { clientKey } from '../limiter.js';

/** A proxied request as the monitor sees it (after the decision and the origin's answer). */
export interface ObservedRequest {
  /** Unix ms. */
  time: number;
  hostname: string;
  ownerId: string;
  clientIp: string;
  /** ISO 3166 alpha-2, or '' when unknown. */
  country: string;
  status: number;
  /** 'allowed' or the BlockReason that refused it. */
  decision: string;
  bytesOut: number;
}

/** Counters of the heavy-hitter summary: any source above 1/(K+1) of a bucket is among them. */
export const HEAVY_HITTER_COUNTERS = 32;
/** Distinct countries counted per bucket (there are ~250); the rest count as unknown. */
const MAX_COUNTRIES = 256;
/** Countries a closed bucket keeps for the history (enough to tell a country's usual share). */
const HISTORY_COUNTRIES = 8;

/**
 * Misra-Gries: at most K counters; a new key when all are taken decrements every counter instead
 * (amortised O(1): each decrement pays for an earlier increment). A count is a lower bound, short of
 * the truth by at most n/(K+1).
 */
export class HeavyHitters {
  private readonly counters = new Map<string, number>();

  constructor(private readonly k: number = HEAVY_HITTER_COUNTERS) {}

  add(key: string): void {
    const c = this.counters.get(key);
    if (c !== undefined) this.counters.set(key, c + 1);
    else if (this.counters.size < this.k) this.counters.set(key, 1);
    else {
      for (const [other, n] of this.counters) {
        if (n <= 1) this.counters.delete(other);
        else this.counters.set(other, n - 1);
      }
    }
  }

  /** The largest counter, if any. */
  top(): { key: string; count: number } | undefined {
    let best: { key: string; count: number } | undefined;
    for (const [key, count] of this.counters) if (!best || count > best.count) best = { key, count };
    return best;
  }

  get size(): number {
    return this.counters.size;
  }
}

/** What the detectors and the history keep of a closed bucket. */
export interface BucketSummary {
  requests: number;
  /** Refused by a rule (decision other than 'allowed'). */
  blocked: number;
  /** Allowed requests the origin answered with a 5xx. */
  errors: number;
  bytesOut: number;
  /** The biggest source (client IPv4 or IPv6 /64) and its count (a lower bound), or null. */
  topSource: { key: string; count: number } | null;
  /** The biggest countries ('' = unknown), largest first, at most HISTORY_COUNTRIES. */
  countries: readonly (readonly [string, number])[];
}

export const EMPTY_BUCKET: BucketSummary = Object.freeze({ requests: 0, blocked: 0, errors: 0, bytesOut: 0, topSource: null, countries: Object.freeze([]) });

function countryCode(c: string): string {
  // Two upper-case ASCII letters, or unknown: the map's keys stay a small, known set.
  if (c.length !== 2) return '';
  const a = c.charCodeAt(0);
  const b = c.charCodeAt(1);
  return a >= 65 && a <= 90 && b >= 65 && b <= 90 ? c : '';
}

class OpenBucket {
  requests = 0;
  blocked = 0;
  errors = 0;
  bytesOut = 0;
  private readonly sources = new HeavyHitters();
  private readonly countries = new Map<string, number>();

  constructor(public start: number) {}

  add(r: ObservedRequest): void {
    this.requests += 1;
    if (r.decision !== 'allowed') this.blocked += 1;
    else if (r.status >= 500) this.errors += 1;
    if (Number.isFinite(r.bytesOut) && r.bytesOut > 0) this.bytesOut += r.bytesOut;
    this.sources.add(clientKey(r.clientIp));
    let code = countryCode(r.country);
    if (!this.countries.has(code) && this.countries.size >= MAX_COUNTRIES) code = '';
    this.countries.set(code, (this.countries.get(code) ?? 0) + 1);
  }

  summary(): BucketSummary {
    const countries = [...this.countries].sort((a, b) => b[1] - a[1]).slice(0, HISTORY_COUNTRIES);
    return { requests: this.requests, blocked: this.blocked, errors: this.errors, bytesOut: this.bytesOut, topSource: this.sources.top() ?? null, countries };
  }
}

/** Called for each bucket as it closes, with the history before it (oldest first). */
export type CloseVisitor = (start: number, bucket: BucketSummary, history: readonly BucketSummary[]) => void;

/** Open buckets kept while evaluation lags (a stalled timer); beyond this the oldest is dropped. */
const MAX_OPEN = 8;

export class HostSeries {
  /** Buckets before this start are closed and in the history. */
  private nextStart: number;
  /** Buckets at or after nextStart that have requests, oldest first. */
  private readonly open: OpenBucket[] = [];
  private readonly history: BucketSummary[] = [];
  /** History entries with requests: none left means a quiet stretch can be skipped. */
  private busyInHistory = 0;

  constructor(
    readonly hostname: string,
    public ownerId: string,
    private readonly widthMs: number,
    /** History kept (the baseline reads the newest part of it). */
    private readonly maxHistory: number,
    firstStart: number,
  ) {
    this.nextStart = firstStart;
  }

  /** Start of the bucket holding `time`. */
  bucketOf(time: number): number {
    return Math.floor(time / this.widthMs) * this.widthMs;
  }

  /** Start of the first bucket not closed yet (= end of the last closed one). */
  get closedUntil(): number {
    return this.nextStart;
  }

  add(r: ObservedRequest): void {
    // A request stamped before the last close (a late log) counts in the first bucket still open.
    const start = Math.max(this.bucketOf(r.time), this.nextStart);
    const newest = this.open[this.open.length - 1];
    if (newest && newest.start === start) {
      newest.add(r);
      return;
    }
    let b: OpenBucket | undefined;
    if (!newest || newest.start < start) {
      b = new OpenBucket(start);
      this.open.push(b);
    } else {
      const at = this.open.findIndex((o) => o.start >= start);
      b = this.open[at];
      if (!b || b.start !== start) {
        b = new OpenBucket(start);
        this.open.splice(at, 0, b);
      }
    }
    if (this.open.length > MAX_OPEN) this.open.shift();
    b.add(r);
  }

  /** Whether `time` is far from the buckets open: a bucket or more before them, or two past the newest. */
  outOfLine(time: number): boolean {
    const newest = this.open[this.open.length - 1]?.start ?? this.nextStart;
    return time < this.nextStart - this.widthMs || time >= newest + 2 * this.widthMs;
  }

  /** Moves the series onto a stepped wall clock: its buckets keep their order and counts, their starts move by `ms` (whole buckets). */
  shift(ms: number): void {
    this.nextStart += ms;
    for (const b of this.open) b.start += ms;
  }

  /** Closes every bucket that starts before `before` (a bucket boundary), oldest first. */
  closeUntil(before: number, visit: CloseVisitor): void {
    while (this.nextStart < before) {
      const b = this.open[0];
      if (b && b.start === this.nextStart) {
        this.open.shift();
        this.close(b.summary(), visit);
      } else if (this.busyInHistory === 0 && this.history.length >= this.maxHistory) {
        // Quiet so long that the whole history is empty: more empty buckets change nothing.
        this.nextStart = Math.min(b ? b.start : before, before);
      } else {
        this.close(EMPTY_BUCKET, visit);
      }
    }
  }

  private close(bucket: BucketSummary, visit: CloseVisitor): void {
    const start = this.nextStart;
    this.nextStart += this.widthMs;
    try {
      visit(start, bucket, this.history);
    } finally {
      this.history.push(bucket);
      if (bucket.requests > 0) this.busyInHistory += 1;
      if (this.history.length > this.maxHistory && (this.history.shift()?.requests ?? 0) > 0) this.busyInHistory -= 1;
    }
  }
}
