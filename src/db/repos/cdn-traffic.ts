// Reads of the CDN request log for one owner: hourly traffic (complete hours from the roll-ups, the
// rest from raw rows; see cdn-log.ts for the invariant). Proxy logs read edge-traffic.ts.
import type { Statement } from '../sqlite/index.js';
import { emptyHour, hoursOf, mergeHour, type HourTraffic, type TrafficGroup } from '../../analytics/traffic.js';
import type { Db } from '../open.js';
import { GROUP_BY, GROUP_SELECT, HOUR_COLUMNS, toHour, type HourRow } from './cdn-log.js';

export class CdnTrafficRepo {
  private readonly rolledUntilStmt: Statement<[], { rolled_until: number }>;
  private readonly rolledStmt: Statement<[string, number, number, number], HourRow>;
  private readonly rawStmt: Statement<[string, number, number], TrafficGroup>;

  constructor(db: Db) {
    this.rolledUntilStmt = db.prepare('SELECT rolled_until FROM cdn_rollup_state WHERE id = 1');
    this.rolledStmt = db.prepare(`SELECT ${HOUR_COLUMNS} FROM cdn_hourly WHERE owner_id = ? AND hour >= ? AND hour < ? AND hour <= ? ORDER BY hour`);
    this.rawStmt = db.prepare(`${GROUP_SELECT} AND owner_id = ? AND time >= ? AND time <= ? ${GROUP_BY}`);
  }

  /**
   * The owner's traffic per hour from `fromHour` (an hour boundary) to `toMs` inclusive, oldest first;
   * hours without requests are left out.
   */
  ownerHours(ownerId: string, fromHour: number, toMs: number): HourTraffic[] {
    const until = this.rolledUntilStmt.get()?.rolled_until ?? 0;
    const byHour = new Map<number, HourTraffic>();
    for (const row of this.rolledStmt.all(ownerId, fromHour, until, toMs)) byHour.set(row.hour, toHour(row));
    for (const h of hoursOf(this.rawStmt.all(ownerId, Math.max(fromHour, until), toMs))) {
      const into = byHour.get(h.hour) ?? emptyHour(ownerId, h.hour);
      mergeHour(into, h);
      byHour.set(h.hour, into);
    }
    return [...byHour.values()].sort((a, b) => a.hour - b.hour);
  }
}
