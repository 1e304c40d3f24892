// Anomaly events on a project hostname's proxied traffic: what src/proxy/detect reports, the
// edge_anomalies table stores (migration 012) and the API lists. Plain data.

export type AnomalyKind = 'rate-spike' | 'rate-drop' | 'source-dominance' | 'country-dominance' | 'blocked-surge' | 'origin-errors';

export const ANOMALY_KINDS: readonly AnomalyKind[] = ['rate-spike', 'rate-drop', 'source-dominance', 'country-dominance', 'blocked-surge', 'origin-errors'];

export type AnomalySeverity = 'low' | 'medium' | 'high';

export interface AnomalyEvent {
  id: string;
  hostname: string;
  ownerId: string;
  kind: AnomalyKind;
  severity: AnomalySeverity;
  /** Start of the first bucket that showed it (Unix ms). */
  startedAt: number;
  /** End of the last bucket that showed it (= start of the first that did not); null while it lasts. */
  endedAt: number | null;
  /** In the kind's unit: requests per bucket (rate-spike, rate-drop, blocked-surge), else a share 0..1. */
  observed: number;
  /** The same unit: what the history made normal (see detectors.ts). */
  baseline: number;
  detail: Record<string, string | number>;
}
