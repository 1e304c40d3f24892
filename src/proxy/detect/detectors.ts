// The detectors: a closed bucket against the hostname's history -> per kind, a finding, 'none' (the
// bucket shows no such anomaly: an open event of the kind ends) or 'unknown' (too little history to
// tell: an open event stays open, no new one opens). Pure.
//
// Rates are judged with a robust z-score against the last baselineBuckets buckets:
//   z = (x - median) / max(MAD * 1.4826, sqrt(median), 1)
// MAD * 1.4826 is the standard deviation of normal data; sqrt(median) is Poisson noise, the floor for
// a flat history (5, 5, 5 has MAD 0); 1 keeps an all-zero history finite. n = minRequests (at least 1).
//
// | kind              | fires when (the bucket has >= n requests unless said)             | observed / baseline          | severity: low / medium / high   |
// |-------------------|--------------------------------------------------------------------|------------------------------|---------------------------------|
// | rate-spike        | z >= 6 and requests >= 2 x median                                  | requests / median            | z < 12 / z < 30 / z >= 30       |
// | rate-drop         | any bucket, even empty: median >= n, z <= -6, requests <= median/2 | requests / median            | ratio > 0.25 / > 0.05 / <= 0.05 |
// | source-dominance  | one source (IPv4, IPv6 /64) sent > 50% of the bucket               | its share / 0.5              | < 0.75 / < 0.9 / >= 0.9         |
// | country-dominance | one known country > 80% of the bucket, < 50% of the history       | its share / its history share| history share >= 0.25 / >= 0.1 / < 0.1 |
// | blocked-surge     | blocked >= n and >= 50% of the bucket; or blocked >= n/5 with a    | blocked / median blocked     | the higher of: share < 0.7 / < 0.9 / >= 0.9, z < 12 / < 30 / >= 30 |
// |                   | blocked z >= 6 and blocked >= 2 x median blocked                   |                              |                                 |
// | origin-errors     | 5xx >= max(1, n/5) and >= 20% of the allowed requests              | 5xx share / median share     | < 0.5 / < 0.8 / >= 0.8          |
//
// Spikes, drops and the blocked z-score need baselineBuckets of history ('unknown' before); country
// dominance needs n requests in the history. The ratio conditions keep a big, steady hostname (where
// sqrt(median) is small next to the median) from reporting a few percent as a spike or a drop.
import type { AnomalyKind, AnomalySeverity } from '../../db/repos/anomaly-event.js';
import type { BucketSummary } from './series.js';

export interface DetectorConfig {
  /** Buckets of history a baseline needs. */
  baselineBuckets: number;
  /** Requests in a bucket below which no event opens. */
  minRequests: number;
}

export interface Finding {
  severity: AnomalySeverity;
  observed: number;
  baseline: number;
  detail: Record<string, string | number>;
}

export type Outcome = Finding | 'none' | 'unknown';

export type Outcomes = Record<AnomalyKind, Outcome>;

const Z_EVENT = 6;
const Z_MEDIUM = 12;
const Z_HIGH = 30;
const SOURCE_SHARE = 0.5;
const COUNTRY_SHARE = 0.8;
const COUNTRY_USUAL_BELOW = 0.5;
const BLOCKED_SHARE = 0.5;
const ERROR_SHARE = 0.2;

export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The robust z-score of x against `values` (see the header), with the median it was measured from. */
export function robustZ(x: number, values: readonly number[]): { z: number; median: number } {
  const m = median(values);
  const mad = median(values.map((v) => Math.abs(v - m)));
  const scale = Math.max(mad * 1.4826, Math.sqrt(m), 1);
  return { z: (x - m) / scale, median: m };
}

function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function byZ(z: number): AnomalySeverity {
  return z >= Z_HIGH ? 'high' : z >= Z_MEDIUM ? 'medium' : 'low';
}

function higher(a: AnomalySeverity, b: AnomalySeverity): AnomalySeverity {
  const rank = { low: 0, medium: 1, high: 2 };
  return rank[a] >= rank[b] ? a : b;
}

function rateSpike(b: BucketSummary, base: readonly BucketSummary[] | null, n: number): Outcome {
  if (b.requests < n) return 'none';
  if (!base) return 'unknown';
  const { z, median: m } = robustZ(b.requests, base.map((h) => h.requests));
  if (z < Z_EVENT || b.requests < 2 * m) return 'none';
  return { severity: byZ(z), observed: b.requests, baseline: m, detail: { z: round(z, 1) } };
}

function rateDrop(b: BucketSummary, base: readonly BucketSummary[] | null, n: number): Outcome {
  if (!base) return 'unknown';
  const { z, median: m } = robustZ(b.requests, base.map((h) => h.requests));
  if (m < n || z > -Z_EVENT || b.requests > m / 2) return 'none';
  const ratio = b.requests / m;
  const severity: AnomalySeverity = ratio <= 0.05 ? 'high' : ratio <= 0.25 ? 'medium' : 'low';
  return { severity, observed: b.requests, baseline: m, detail: { z: round(z, 1) } };
}

function sourceDominance(b: BucketSummary, n: number): Outcome {
  if (b.requests < n || !b.topSource) return 'none';
  const share = b.topSource.count / b.requests;
  if (share <= SOURCE_SHARE) return 'none';
  const severity: AnomalySeverity = share >= 0.9 ? 'high' : share >= 0.75 ? 'medium' : 'low';
  return { severity, observed: round(share), baseline: SOURCE_SHARE, detail: { source: b.topSource.key, requests: b.topSource.count, share: round(share) } };
}

function countryDominance(b: BucketSummary, history: readonly BucketSummary[], n: number): Outcome {
  if (b.requests < n) return 'none';
  const top = b.countries.find(([code]) => code !== '');
  if (!top || top[1] / b.requests <= COUNTRY_SHARE) return 'none';
  const [country, count] = top;
  let total = 0;
  let theirs = 0;
  for (const h of history) {
    total += h.requests;
    theirs += h.countries.find(([code]) => code === country)?.[1] ?? 0;
  }
  if (total < n) return 'unknown';
  const usual = theirs / total;
  if (usual >= COUNTRY_USUAL_BELOW) return 'none';
  const share = count / b.requests;
  const severity: AnomalySeverity = usual < 0.1 ? 'high' : usual < 0.25 ? 'medium' : 'low';
  return { severity, observed: round(share), baseline: round(usual), detail: { country, requests: count, share: round(share) } };
}

function blockedSurge(b: BucketSummary, base: readonly BucketSummary[] | null, n: number): Outcome {
  if (b.requests < n) return 'none';
  const share = b.blocked / b.requests;
  const bySurge = base && robustZ(b.blocked, base.map((h) => h.blocked));
  const m = bySurge ? bySurge.median : 0;
  const zFires = bySurge !== null && b.blocked >= Math.max(1, Math.ceil(n / 5)) && bySurge.z >= Z_EVENT && b.blocked >= 2 * m;
  const shareFires = b.blocked >= n && share >= BLOCKED_SHARE;
  if (!zFires && !shareFires) return !bySurge && b.blocked >= Math.max(1, Math.ceil(n / 5)) ? 'unknown' : 'none';
  const byShare: AnomalySeverity = share >= 0.9 ? 'high' : share >= 0.7 ? 'medium' : 'low';
  const severity = bySurge && zFires ? higher(byShare, byZ(bySurge.z)) : byShare;
  const detail: Record<string, number> = { share: round(share) };
  if (bySurge) detail.z = round(bySurge.z, 1);
  return { severity, observed: b.blocked, baseline: m, detail };
}

function originErrors(b: BucketSummary, history: readonly BucketSummary[], n: number): Outcome {
  if (b.requests < n) return 'none';
  const allowed = b.requests - b.blocked;
  if (allowed === 0 || b.errors < Math.max(1, Math.ceil(n / 5))) return 'none';
  const share = b.errors / allowed;
  if (share < ERROR_SHARE) return 'none';
  const usual = median(history.filter((h) => h.requests > h.blocked).map((h) => h.errors / (h.requests - h.blocked)));
  const severity: AnomalySeverity = share >= 0.8 ? 'high' : share >= 0.5 ? 'medium' : 'low';
  return { severity, observed: round(share), baseline: round(usual), detail: { errors: b.errors, share: round(share) } };
}

/** Every detector on one closed bucket; `history` is the hostname's closed buckets before it, oldest first. */
export function detect(bucket: BucketSummary, history: readonly BucketSummary[], cfg: DetectorConfig): Outcomes {
  const n = Math.max(1, cfg.minRequests);
  const want = Math.max(1, cfg.baselineBuckets);
  const base = history.length >= want ? history.slice(-want) : null;
  const recent = history.slice(-want);
  return {
    'rate-spike': rateSpike(bucket, base, n),
    'rate-drop': rateDrop(bucket, base, n),
    'source-dominance': sourceDominance(bucket, n),
    'country-dominance': countryDominance(bucket, recent, n),
    'blocked-surge': blockedSurge(bucket, base, n),
    'origin-errors': originErrors(bucket, recent, n),
  };
}
