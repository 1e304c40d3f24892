// Usage events (SPEC.md 2.7): upload, download and delete of assets, appended, read newest first.
import { newId } from '../ids.js';
import { afterCursorSql, cursorParams, type PageCursor } from './page-cursor.js';
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

/** A page of one user's events: a window (Unix ms, both ends included), a type, after a cursor. */
export interface UsagePageQuery {
  fromMs: number;
  toMs: number;
  eventType?: UsageEventType;
  after: PageCursor | null;
  limit: number;
}

/** Events of one type on one UTC day (`day`: Unix ms of its start). */
export interface UsageDayRow {
  day: number;
  eventType: UsageEventType;
  events: number;
  bytes: number;
}

const DAY_MS = 86_400_000;
const DAILY = `SELECT (created_at / CAST(:dayMs AS BIGINT)) * CAST(:dayMs AS BIGINT) AS day, event_type AS "eventType", count(*) AS events,
    coalesce(sum(bytes), 0) AS bytes
  FROM usage_events WHERE user_id = :userId AND created_at >= :fromMs AND created_at <= :toMs GROUP BY 1, 2 ORDER BY 1, 2`;

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

  /** A page of the user's events in a window, newest first (by time, then as stored); each with its position. */
  async page(userId: string, q: UsagePageQuery): Promise<{ event: UsageEvent; position: PageCursor }[]> {
    const type = q.eventType === undefined ? '' : ' AND event_type = :eventType';
    const after = q.after === null ? '' : afterCursorSql('created_at', 'seq');
    const sql = `SELECT seq, ${COLUMNS} FROM usage_events WHERE user_id = :userId AND created_at >= :fromMs AND created_at <= :toMs${type}${after}
      ORDER BY created_at DESC, seq DESC LIMIT :limit`;
    const params = {
      userId, fromMs: q.fromMs, toMs: q.toMs, limit: q.limit,
      ...(q.eventType === undefined ? {} : { eventType: q.eventType }),
      ...(q.after === null ? {} : cursorParams(q.after)),
    };
    return (await this.db.all<UsageRow & { seq: number }>(sql, params)).map((r) => ({ event: toEvent(r), position: { time: r.created_at, id: r.seq } }));
  }

  /** Events and bytes by UTC day and type in a window, oldest first; days without events are absent. */
  async daily(userId: string, fromMs: number, toMs: number): Promise<UsageDayRow[]> {
    return this.db.all<UsageDayRow>(DAILY, { dayMs: DAY_MS, userId, fromMs, toMs });
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
