// The risk index of proxy logs: 0 (quiet, ordinary traffic) to 100 (under attack), the weighted sum
// of named signals, each a value in 0..1 with the weight it carries, so a reader sees why the number
// is what it is. Pure: figures in, index out.
//
// | signal               | value (0..1)                                                        | weight |
// |----------------------|---------------------------------------------------------------------|--------|
// | blocked-share        | blocked requests / requests                                         | 35     |
// | source-concentration | share of the busiest source above 30%, scaled to 0..1 (>= 20 reqs)  | 20     |
// | geo-concentration    | Herfindahl index of country shares above 0.5, scaled (>= 20 reqs)   | 10     |
// | origin-errors        | 5xx answers / allowed requests, doubled, capped at 1                | 15     |
// | anomalies            | the worst anomaly in the window: high 1, medium 0.6, low 0.3;       | 20     |
// |                      | an event that has ended counts half                                 |        |
//
// Ratings: below 20 low, below 50 medium, below 75 high, else critical.

export type RiskRating = 'low' | 'medium' | 'high' | 'critical';

export interface RiskSignal {
  name: 'blocked-share' | 'source-concentration' | 'geo-concentration' | 'origin-errors' | 'anomalies';
  /** The signal's strength, 0..1 (three decimals). */
  value: number;
  weight: number;
  /** value x weight, the points it adds to the index (one decimal). */
  points: number;
}

export interface Risk {
  index: number;
  rating: RiskRating;
  signals: RiskSignal[];
}

export interface RiskFacts {
  requests: number;
  blocked: number;
  /** Allowed requests the origin answered with 5xx. */
  serverErrors: number;
  /** Requests of the busiest source. */
  topSourceRequests: number;
  /** Herfindahl-Hirschman index of the country shares (sum of squared shares), 0..1. */
  geoConcentration: number;
  anomalies: readonly { severity: 'low' | 'medium' | 'high'; ongoing: boolean }[];
}

/** Fewer requests than this say nothing about concentration. */
const CONCENTRATION_MIN_REQUESTS = 20;

const SEVERITY_VALUE = { low: 0.3, medium: 0.6, high: 1 } as const;

const round = (n: number, places: number): number => Math.round(n * 10 ** places) / 10 ** places;
const clamp = (n: number): number => Math.min(1, Math.max(0, n));

export function rating(index: number): RiskRating {
  return index < 20 ? 'low' : index < 50 ? 'medium' : index < 75 ? 'high' : 'critical';
}

export function riskOf(f: RiskFacts): Risk {
  const enough = f.requests >= CONCENTRATION_MIN_REQUESTS;
  const allowed = f.requests - f.blocked;
  const values: [RiskSignal['name'], number, number][] = [
    ['blocked-share', f.requests > 0 ? f.blocked / f.requests : 0, 35],
    ['source-concentration', enough ? (f.topSourceRequests / f.requests - 0.3) / 0.7 : 0, 20],
    ['geo-concentration', enough ? (f.geoConcentration - 0.5) / 0.5 : 0, 10],
    ['origin-errors', allowed > 0 ? (2 * f.serverErrors) / allowed : 0, 15],
    ['anomalies', Math.max(0, ...f.anomalies.map((a) => SEVERITY_VALUE[a.severity] * (a.ongoing ? 1 : 0.5))), 20],
  ];
  const signals = values.map(([name, raw, weight]) => {
    const value = round(clamp(raw), 3);
    return { name, value, weight, points: round(value * weight, 1) };
  });
  const index = Math.round(signals.reduce((sum, s) => sum + s.value * s.weight, 0));
  return { index, rating: rating(index), signals };
}

/**
 * One source's own risk: how much of what it sent was blocked (weight 70) and how much of the
 * hostname's traffic it is (weight 30, from a 10% share up).
 */
export function sourceRisk(source: { requests: number; blocked: number }, totalRequests: number): { index: number; rating: RiskRating } {
  const blockedShare = source.requests > 0 ? source.blocked / source.requests : 0;
  const share = totalRequests >= CONCENTRATION_MIN_REQUESTS ? clamp((source.requests / totalRequests - 0.1) / 0.9) : 0;
  const index = Math.round(70 * blockedShare + 30 * share);
  return { index, rating: rating(index) };
}

/** Herfindahl-Hirschman index of counts: 1 when one bucket holds everything, 1/n when n share equally. */
export function concentration(counts: Iterable<number>): number {
  let total = 0;
  let sumSq = 0;
  const all = [...counts];
  for (const n of all) total += n;
  if (total === 0) return 0;
  for (const n of all) sumSq += (n / total) ** 2;
  return round(sumSq, 3);
}
