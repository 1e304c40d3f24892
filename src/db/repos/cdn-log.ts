// The CDN request log's tables (migration 006): batched inserts, hourly roll-ups and retention.
// Invariant: requests before cdn_rollup_state.rolled_until are counted in cdn_hourly exactly once, so
// a reader takes complete hours from the roll-ups and the rest from the raw rows.
import type { Statement, Transaction } from '../sqlite/index.js';
import type { CdnRequestRecord } from '../../analytics/request-log.js';
import { hoursOf, mergeHour, hourOf, HOUR_MS, type HourTraffic, type TrafficGroup } from '../../analytics/traffic.js';
import type { Db } from '../open.js';
import { isForeignKeyViolation } from './errors.js';
import { INSERT_USAGE_EVENT, newUsageEvent } from './usage.js';

export interface HourRow {
  owner_id: string;
  hour: number;
  requests: number;
  bytes: number;
  cached_bytes: number;
  hits: number;
  cache_lookups: number;
  status_counts: string;
  country_counts: string;
}

function parseCounts(json: string): Record<string, number> {
  const parsed: unknown = JSON.parse(json);
  const out: Record<string, number> = {};
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
    for (const [k, v] of Object.entries(parsed)) if (typeof v === 'number') out[k] = v;
  }
  return out;
}

export function toHour(r: HourRow): HourTraffic {
  return {
    ownerId: r.owner_id,
    hour: r.hour,
    requests: r.requests,
    bytes: r.bytes,
    cachedBytes: r.cached_bytes,
    hits: r.hits,
    cacheLookups: r.cache_lookups,
    statusCounts: parseCounts(r.status_counts),
    countryCounts: parseCounts(r.country_counts),
  };
}

export const HOUR_COLUMNS = 'owner_id, hour, requests, bytes, cached_bytes, hits, cache_lookups, status_counts, country_counts';

/**
 * Raw CDN rows grouped as TrafficGroup; `time` bounds and any owner filter are appended by the caller
 * (`AND ...`). Proxied requests are not CDN traffic: the roll-ups and the summary leave them out.
 */
export const GROUP_SELECT = `SELECT coalesce(owner_id, '') AS ownerId, (time / ${HOUR_MS}) * ${HOUR_MS} AS hour, status, country,
  cache_status AS cacheStatus, count(*) AS requests, sum(bytes_sent) AS bytes FROM cdn_requests WHERE surface = 'cdn'`;
export const GROUP_BY = 'GROUP BY 1, 2, 3, 4, 5';

/** Chunks of the retention delete: each its own short statement, so no single one holds the database long. */
const EXPIRE_CHUNK = 5000;

export interface Expired {
  requests: number;
  hours: number;
}

export class CdnLogRepo {
  private readonly insertStmt: Statement<unknown[]>;
  private readonly rolledUntilStmt: Statement<[], { rolled_until: number }>;
  private readonly setRolledUntilStmt: Statement<[number]>;
  private readonly groupsStmt: Statement<[number, number], TrafficGroup>;
  private readonly hourStmt: Statement<[string, number], HourRow>;
  private readonly putHourStmt: Statement<unknown[]>;
  private readonly expireRequestsStmt: Statement<[number, number]>;
  private readonly expireHoursStmt: Statement<[number]>;
  private readonly insertBatchTx: Transaction<(records: readonly CdnRequestRecord[]) => void>;
  private readonly rollUpTx: Transaction<(untilHour: number) => number>;

  /** The downloads among the logged requests become usage events, in the same transaction. */
  private readonly usageInsertStmt: Statement<unknown[]>;

  constructor(db: Db) {
    this.usageInsertStmt = db.prepare(INSERT_USAGE_EVENT);
    this.insertStmt = db.prepare(
      `INSERT INTO cdn_requests (time, host, asset_id, bucket, object_key, owner_id, status, bytes_sent, cache_status, client_ip, country, user_agent, duration_ms,
         surface, method, path, bytes_in, decision)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.rolledUntilStmt = db.prepare('SELECT rolled_until FROM cdn_rollup_state WHERE id = 1');
    this.setRolledUntilStmt = db.prepare('UPDATE cdn_rollup_state SET rolled_until = ? WHERE id = 1');
    this.groupsStmt = db.prepare(`${GROUP_SELECT} AND time >= ? AND time < ? ${GROUP_BY}`);
    this.hourStmt = db.prepare(`SELECT ${HOUR_COLUMNS} FROM cdn_hourly WHERE owner_id = ? AND hour = ?`);
    this.putHourStmt = db.prepare(`INSERT OR REPLACE INTO cdn_hourly (${HOUR_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.expireRequestsStmt = db.prepare('DELETE FROM cdn_requests WHERE id IN (SELECT id FROM cdn_requests WHERE time < ? LIMIT ?)');
    this.expireHoursStmt = db.prepare('DELETE FROM cdn_hourly WHERE hour <= ?');

    this.insertBatchTx = db.transaction((records: readonly CdnRequestRecord[]) => {
      for (const r of records) {
        this.insertStmt.run(
          r.time, r.host, r.assetId, r.bucket, r.key, r.ownerId, r.status, r.bytesSent, r.cacheStatus, r.clientIp, r.country,
          r.userAgent, r.durationMs, r.surface ?? 'cdn', r.method, r.path, r.bytesIn ?? 0, r.decision ?? 'allowed',
        );
        if (r.downloadKey !== undefined && r.ownerId !== null) this.recordDownload(r, r.downloadKey, r.assetId ?? '', r.ownerId);
      }
      // A request that ended after its hour was rolled up (a long download, a flush just past the
      // hour) goes into that hour's roll-up now, in the same transaction as its row.
      const until = this.rolledUntil();
      const late = records.filter((r) => r.time < until && (r.surface ?? 'cdn') === 'cdn');
      if (late.length > 0) for (const h of hoursOf(late.map(groupOf))) this.addToHour(h);
    });

    this.rollUpTx = db.transaction((untilHour: number) => {
      const from = this.rolledUntil();
      if (untilHour <= from) return 0;
      const hours = hoursOf(this.groupsStmt.all(from, untilHour));
      for (const h of hours) this.addToHour(h);
      this.setRolledUntilStmt.run(untilHour);
      return hours.length;
    });
  }

  /**
   * The download usage event of a request that served a body (assetId '' for a public bucket object). A
   * user deleted since the request has
   * no events: that one insert fails alone (SQLite undoes just the statement) and the batch goes on.
   */
  private recordDownload(r: CdnRequestRecord, key: string, assetId: string, ownerId: string): void {
    try {
      const { params } = newUsageEvent(
        {
          userId: ownerId, assetId, eventType: 'download', source: 'cdn', bytes: r.bytesSent, hostname: r.host,
          country: r.country, statusCode: r.status, clientIp: r.clientIp, metadata: { key },
        },
        r.time,
      );
      this.usageInsertStmt.run(...params);
    } catch (err) {
      if (!isForeignKeyViolation(err)) throw err;
    }
  }

  /** Every record in one transaction (all or none). */
  insertBatch(records: readonly CdnRequestRecord[]): void {
    if (records.length > 0) this.insertBatchTx.immediate(records);
  }

  /** The hour boundary before which every request is in the roll-ups. */
  rolledUntil(): number {
    return this.rolledUntilStmt.get()?.rolled_until ?? 0;
  }

  /**
   * Rolls every hour that ends at or before `nowMs` and is not rolled yet into cdn_hourly, in one
   * transaction with the new watermark: running it twice adds nothing. Returns the (owner, hour) rows written.
   */
  rollUp(nowMs: number): number {
    return this.rollUpTx.immediate(hourOf(nowMs));
  }

  /** Deletes requests before `cutoffMs` and roll-ups of hours that ended by then. */
  expire(cutoffMs: number): Expired {
    let requests = 0;
    for (;;) {
      const n = this.expireRequestsStmt.run(cutoffMs, EXPIRE_CHUNK).changes;
      requests += n;
      if (n < EXPIRE_CHUNK) break;
    }
    const hours = this.expireHoursStmt.run(cutoffMs - HOUR_MS).changes;
    return { requests, hours };
  }

  private addToHour(h: HourTraffic): void {
    const row = this.hourStmt.get(h.ownerId, h.hour);
    const merged = row ? toHour(row) : h;
    if (row) mergeHour(merged, h);
    this.putHourStmt.run(
      merged.ownerId, merged.hour, merged.requests, merged.bytes, merged.cachedBytes, merged.hits, merged.cacheLookups,
      JSON.stringify(merged.statusCounts), JSON.stringify(merged.countryCounts),
    );
  }
}

function groupOf(r: CdnRequestRecord): TrafficGroup {
  return { ownerId: r.ownerId ?? '', hour: hourOf(r.time), status: r.status, country: r.country, cacheStatus: r.cacheStatus, requests: 1, bytes: r.bytesSent };
}
