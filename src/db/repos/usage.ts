// Usage events (SPEC.md 2.7): upload, download and delete of assets, appended, read newest first.
import { newId } from '../ids.js';
import type { SqlExecutor } from '../store/types.js';

export type UsageEventType = 'upload' | 'download' | 'delete';
/** Where the event happened: the management API or the CDN edge. */
export type UsageSource = 'api' | 'cdn';

export interface UsageEvent {
  id: string;
  userId: string;
  assetId: string;
  eventType: UsageEventType;
  source: UsageSource;
  bytes: number;
  hostname: string;
  country: string;
  statusCode: number;
  /** Internal only (proxy logs aggregate it); never part of an event response. */
  clientIp: string;
  metadata: { key: string };
  /** Unix milliseconds. */
  createdAt: number;
}

export type NewUsageEvent = Omit<UsageEvent, 'id' | 'createdAt' | 'country' | 'clientIp'> & { country?: string; clientIp?: string };

interface UsageRow {
  id: string;
  user_id: string;
  asset_id: string;
  event_type: UsageEventType;
  source: UsageSource;
  bytes: number;
  hostname: string;
  country: string;
  status_code: number;
  client_ip: string;
  metadata: string;
  created_at: number;
}

function toEvent(r: UsageRow): UsageEvent {
  return {
    id: r.id,
    userId: r.user_id,
    assetId: r.asset_id,
    eventType: r.event_type,
    source: r.source,
    bytes: r.bytes,
    hostname: r.hostname,
    country: r.country,
    statusCode: r.status_code,
    clientIp: r.client_ip,
    metadata: JSON.parse(r.metadata) as { key: string },
    createdAt: r.created_at,
  };
}

const COLUMNS = 'id, user_id, asset_id, event_type, source, bytes, hostname, country, status_code, client_ip, metadata, created_at';

export interface UsageTotals {
  uploadedBytes: number;
  downloadedBytes: number;
}

/** One event's INSERT, with usageEventParams: CdnLogRepo writes download events with it in its own (synchronous) transaction. */
export const INSERT_USAGE_EVENT = `INSERT INTO usage_events (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** A new event (a fresh id, `createdAt` its time) and the parameters of INSERT_USAGE_EVENT for it. */
export function newUsageEvent(input: NewUsageEvent, createdAt: number): { event: UsageEvent; params: unknown[] } {
  const event: UsageEvent = { country: '', clientIp: '', ...input, id: newId(), createdAt };
  const params = [
    event.id, event.userId, event.assetId, event.eventType, event.source, event.bytes, event.hostname,
    event.country, event.statusCode, event.clientIp, JSON.stringify(event.metadata), event.createdAt,
  ];
  return { event, params };
}
// Newest first by when it happened: download events are written later, with their log's flush.
// (usage_events_user_time serves this order.)
const RECENT = `SELECT ${COLUMNS} FROM usage_events WHERE user_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?`;
const SINCE = `SELECT ${COLUMNS} FROM usage_events WHERE user_id = ? AND event_type = ? AND created_at >= ? ORDER BY seq`;
const TOTALS = `SELECT sum(CASE WHEN event_type = 'upload' THEN bytes END) AS up,
       sum(CASE WHEN event_type = 'download' THEN bytes END) AS down
  FROM usage_events WHERE user_id = ?`;

export class UsageRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** `createdAt` defaults to now (the CDN's events carry their request's time). */
  async record(input: NewUsageEvent, createdAt: number = this.clock()): Promise<UsageEvent> {
    const { event, params } = newUsageEvent(input, createdAt);
    await this.db.run(INSERT_USAGE_EVENT, params);
    return event;
  }

  /** The user's latest `limit` events, newest first. */
  async recent(userId: string, limit: number): Promise<UsageEvent[]> {
    return (await this.db.all<UsageRow>(RECENT, [userId, limit])).map(toEvent);
  }

  /** Events of one type at or after `sinceMs`, oldest first. */
  async since(userId: string, eventType: UsageEventType, sinceMs: number): Promise<UsageEvent[]> {
    return (await this.db.all<UsageRow>(SINCE, [userId, eventType, sinceMs])).map(toEvent);
  }

  async totals(userId: string): Promise<UsageTotals> {
    const r = await this.db.get<{ up: number | null; down: number | null }>(TOTALS, [userId]);
    return { uploadedBytes: r?.up ?? 0, downloadedBytes: r?.down ?? 0 };
  }
}
