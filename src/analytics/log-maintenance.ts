// Upkeep of the CDN request log: complete hours are rolled up (idempotent: the watermark moves in the
// roll-up's own transaction), then rows and roll-ups older than the retention are deleted. Rolling up
// first means nothing is deleted before it was counted.
import type { CdnLogRepo } from '../db/repos/cdn-log.js';

const DAY_MS = 86_400_000;

export interface MaintenanceResult {
  /** (owner, hour) roll-up rows written. */
  rolledHours: number;
  expiredRequests: number;
  expiredHours: number;
}

export async function maintainLog(repo: CdnLogRepo, nowMs: number, retentionDays: number): Promise<MaintenanceResult> {
  const rolledHours = await repo.rollUp(nowMs);
  const expired = await repo.expire(nowMs - retentionDays * DAY_MS);
  return { rolledHours, expiredRequests: expired.requests, expiredHours: expired.hours };
}
