// Reads of the CDN request log for one owner: hourly traffic (complete hours from the roll-ups, the
// rest from raw rows; see cdn-log.ts for the invariant). Proxy logs read edge-traffic.ts.
import { emptyHour, hoursOf, mergeHour, type HourTraffic, type TrafficGroup } from './traffic.js';
import type { SqlExecutor } from '../store/types.js';
import { GROUP_BY, GROUP_SELECT, HOUR_COLUMNS, toHour, type HourRow } from './cdn-log.js';

const ROLLED_UNTIL = 'SELECT rolled_until FROM cdn_rollup_state WHERE id = 1';
const ROLLED = `SELECT ${HOUR_COLUMNS} FROM cdn_hourly WHERE owner_id = ? AND hour >= ? AND hour < ? AND hour <= ? ORDER BY hour`;
const RAW = `${GROUP_SELECT} AND owner_id = ? AND time >= ? AND time <= ? ${GROUP_BY}`;

export class CdnTrafficRepo {
  constructor(private readonly db: SqlExecutor) {}

  /**
   * The owner's traffic per hour from `fromHour` (an hour boundary) to `toMs` inclusive, oldest first;
   * hours without requests are left out.
   */
  async ownerHours(ownerId: string, fromHour: number, toMs: number): Promise<HourTraffic[]> {
    const until = (await this.db.get<{ rolled_until: number }>(ROLLED_UNTIL))?.rolled_until ?? 0;
    const rolled = await this.db.all<HourRow>(ROLLED, [ownerId, fromHour, until, toMs]);
    const raw = await this.db.all<TrafficGroup>(RAW, [ownerId, Math.max(fromHour, until), toMs]);
    const byHour = new Map<number, HourTraffic>();
    for (const row of rolled) byHour.set(row.hour, toHour(row));
    for (const h of hoursOf(raw)) {
      const into = byHour.get(h.hour) ?? emptyHour(ownerId, h.hour);
      mergeHour(into, h);
      byHour.set(h.hour, into);
    }
    return [...byHour.values()].sort((a, b) => a.hour - b.hour);
  }
}
