// Usage events (SPEC.md 2.7): upload, download and delete of assets, appended, read newest first.
import type { Statement } from '../sqlite/index.js';
import { newId } from '../../auth/ids.js';
import type { Db } from '../open.js';

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

export class UsageRepo {
  private readonly insertStmt: Statement<unknown[]>;
  private readonly recentStmt: Statement<[string, number], UsageRow>;
  private readonly sinceStmt: Statement<[string, UsageEventType, number], UsageRow>;
  private readonly totalsStmt: Statement<[string], { up: number | null; down: number | null }>;

  constructor(db: Db, private readonly clock: () => number = Date.now) {
    this.insertStmt = db.prepare(`INSERT INTO usage_events (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    // Newest first by when it happened: download events are written later, with their log's flush.
    // (seq is the rowid, so usage_events_user_time serves this order without a sort.)
    this.recentStmt = db.prepare(`SELECT ${COLUMNS} FROM usage_events WHERE user_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?`);
    this.sinceStmt = db.prepare(
      `SELECT ${COLUMNS} FROM usage_events WHERE user_id = ? AND event_type = ? AND created_at >= ? ORDER BY seq`,
    );
    this.totalsStmt = db.prepare(
      `SELECT sum(CASE WHEN event_type = 'upload' THEN bytes END) AS up,
              sum(CASE WHEN event_type = 'download' THEN bytes END) AS down
       FROM usage_events WHERE user_id = ?`,
    );
  }

  /** `createdAt` defaults to now (the CDN's events carry their request's time). */
  record(input: NewUsageEvent, createdAt: number = this.clock()): UsageEvent {
    const event: UsageEvent = { country: '', clientIp: '', ...input, id: newId(), createdAt };
    this.insertStmt.run(
      event.id, event.userId, event.assetId, event.eventType, event.source, event.bytes, event.hostname,
      event.country, event.statusCode, event.clientIp, JSON.stringify(event.metadata), event.createdAt,
    );
    return event;
  }

  /** The user's latest `limit` events, newest first. */
  recent(userId: string, limit: number): UsageEvent[] {
    return this.recentStmt.all(userId, limit).map(toEvent);
  }

  /** Events of one type at or after `sinceMs`, oldest first. */
  since(userId: string, eventType: UsageEventType, sinceMs: number): UsageEvent[] {
    return this.sinceStmt.all(userId, eventType, sinceMs).map(toEvent);
  }

  totals(userId: string): UsageTotals {
    const r = this.totalsStmt.get(userId);
    return { uploadedBytes: r?.up ?? 0, downloadedBytes: r?.down ?? 0 };
  }
}
