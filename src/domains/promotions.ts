// Which promotion a TLD shows: active through its ending date (UTC, inclusive) unless ended early, and
// absent from the day after. Of several active ones the best is shown: the largest bonus valued in US
// cents (a naira bonus converted at today's rate), then the one that lasts longer, then the older one.
import type { Promotion } from '../db/repos/tlds.js';

/** `YYYY-MM-DD` of an instant, in UTC. */
export function utcDate(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function isActive(p: Promotion, today: string): boolean {
  return p.endedAt === null && p.endsOn >= today;
}

/** A bonus's worth in cents, for comparing promotions: USD as is, else naira at the rate (rounded down). */
function worthInCents(p: Promotion, koboPerDollar: number): number {
  if (p.bonusUsd !== null) return p.bonusUsd;
  return Math.floor(((p.bonusNgn ?? 0) * 100) / koboPerDollar);
}

/** The best active promotion among `promotions` (of one TLD), or undefined. */
export function bestActive(promotions: readonly Promotion[], today: string, koboPerDollar: number): Promotion | undefined {
  let best: Promotion | undefined;
  for (const p of promotions) {
    if (!isActive(p, today)) continue;
    if (!best) {
      best = p;
      continue;
    }
    const a = worthInCents(p, koboPerDollar);
    const b = worthInCents(best, koboPerDollar);
    if (a > b || (a === b && (p.endsOn > best.endsOn || (p.endsOn === best.endsOn && p.id < best.id)))) best = p;
  }
  return best;
}
