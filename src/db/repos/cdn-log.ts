// The CDN request log's tables (migration 006): batched inserts, hourly roll-ups and retention.
// Invariant: requests before cdn_rollup_state.rolled_until are counted in cdn_hourly exactly once, so
// a reader takes complete hours from the roll-ups and the rest from the raw rows.
import type { CdnRequestRecord } from '../../analytics/request-log.js';
import { hoursOf, mergeHour, hourOf, HOUR_MS, type HourTraffic, type TrafficGroup } from '../../analytics/traffic.js';
import { newId } from '../../auth/ids.js';
import type { SqlDialect, SqlExecutor } from '../store/types.js';

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
 * (Aliases are quoted: PostgreSQL folds bare ones to lower case.)
 */
export const GROUP_SELECT = `SELECT coalesce(owner_id, '') AS "ownerId", (time / ${HOUR_MS}) * ${HOUR_MS} AS hour, status, country,
  cache_status AS "cacheStatus", count(*) AS requests, sum(bytes_sent) AS bytes FROM cdn_requests WHERE surface = 'cdn'`;
export const GROUP_BY = 'GROUP BY 1, 2, 3, 4, 5';

/** Chunks of the retention delete: each its own short statement, so no single one holds the database long. */
const EXPIRE_CHUNK = 5000;

export interface Expired {
  requests: number;
  hours: number;
}

const REQUEST_COLUMNS = `time, host, asset_id, bucket, object_key, owner_id, status, bytes_sent, cache_status, client_ip, country,
  user_agent, duration_ms, surface, method, path, bytes_in, decision`;
/**
 * One flush's rows as one JSON array of objects (keys below), so a batch is one statement on either
 * store; `i` is the record's place in the batch, so ids and seqs follow the batch's order.
 */
const REQUEST_KEYS: [string, string][] = [
  ['i', 'BIGINT'], ['tm', 'BIGINT'], ['host', 'TEXT'], ['asset', 'TEXT'], ['bucket', 'TEXT'], ['okey', 'TEXT'], ['owner', 'TEXT'], ['status', 'BIGINT'],
  ['sent', 'BIGINT'], ['cache', 'TEXT'], ['ip', 'TEXT'], ['country', 'TEXT'], ['ua', 'TEXT'], ['dur', 'DOUBLE PRECISION'],
  ['surface', 'TEXT'], ['method', 'TEXT'], ['path', 'TEXT'], ['bin', 'BIGINT'], ['decision', 'TEXT'],
];
const USAGE_COLUMNS = 'id, user_id, asset_id, event_type, source, bytes, hostname, country, status_code, client_ip, metadata, created_at';
const USAGE_KEYS: [string, string][] = [
  ['i', 'BIGINT'], ['id', 'TEXT'], ['owner', 'TEXT'], ['asset', 'TEXT'], ['sent', 'BIGINT'], ['host', 'TEXT'], ['country', 'TEXT'], ['status', 'BIGINT'],
  ['ip', 'TEXT'], ['meta', 'TEXT'], ['tm', 'BIGINT'],
];
/** The rows of a JSON array parameter, one column per key. Dialect-specific: json_each / jsonb_to_recordset. */
function jsonRows(dialect: SqlDialect, keys: [string, string][]): string {
  if (dialect === 'postgres') return `SELECT ${keys.map(([k]) => k).join(', ')} FROM jsonb_to_recordset(CAST(? AS jsonb)) AS x(${keys.map(([k, t]) => `${k} ${t}`).join(', ')})`;
  return `SELECT ${keys.map(([k]) => `json_extract(value, '$.${k}') AS ${k}`).join(', ')} FROM json_each(?)`;
}
const INSERT_REQUESTS = (d: SqlDialect): string =>
  `INSERT INTO cdn_requests (${REQUEST_COLUMNS})
   SELECT ${REQUEST_KEYS.slice(1).map(([k]) => k).join(', ')} FROM (${jsonRows(d, REQUEST_KEYS)}) r ORDER BY i`;
/**
 * Download usage events: a user deleted since the request has none (its rows are skipped, the batch
 * goes on), so the foreign key never fails the flush.
 */
const INSERT_DOWNLOADS = (d: SqlDialect): string =>
  `INSERT INTO usage_events (${USAGE_COLUMNS})
   SELECT id, owner, asset, 'download', 'cdn', sent, host, country, status, ip, meta, tm FROM (${jsonRows(d, USAGE_KEYS)}) e
   WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = e.owner) ORDER BY e.i`;
const SQL = {
  sqlite: { insertRequests: INSERT_REQUESTS('sqlite'), insertDownloads: INSERT_DOWNLOADS('sqlite') },
  postgres: { insertRequests: INSERT_REQUESTS('postgres'), insertDownloads: INSERT_DOWNLOADS('postgres') },
};
const ROLLED_UNTIL = 'SELECT rolled_until FROM cdn_rollup_state WHERE id = 1';
const SET_ROLLED_UNTIL = 'UPDATE cdn_rollup_state SET rolled_until = ? WHERE id = 1';
const GROUPS = `${GROUP_SELECT} AND time >= ? AND time < ? ${GROUP_BY}`;
const HOUR = `SELECT ${HOUR_COLUMNS} FROM cdn_hourly WHERE owner_id = ? AND hour = ?`;
const PUT_HOUR = `INSERT INTO cdn_hourly (${HOUR_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (owner_id, hour) DO UPDATE SET requests = excluded.requests, bytes = excluded.bytes, cached_bytes = excluded.cached_bytes,
    hits = excluded.hits, cache_lookups = excluded.cache_lookups, status_counts = excluded.status_counts, country_counts = excluded.country_counts`;
const EXPIRE_REQUESTS = 'DELETE FROM cdn_requests WHERE id IN (SELECT id FROM cdn_requests WHERE time < ? LIMIT ?)';
const EXPIRE_HOURS = 'DELETE FROM cdn_hourly WHERE hour <= ?';

export class CdnLogRepo {
  constructor(private readonly db: SqlExecutor) {}

  /**
   * Every record in one transaction (all or none): the rows in one statement, the download usage
   * events of the records that served a body (assetId '' for a public bucket object) in another.
   */
  async insertBatch(records: readonly CdnRequestRecord[]): Promise<void> {
    if (records.length === 0) return;
    const sql = SQL[this.db.dialect];
    const rows = JSON.stringify(records.map((r, i) => ({ i, ...requestRow(r) })));
    const downloads = records.filter((r) => r.downloadKey !== undefined && r.ownerId !== null);
    // Ids are made before the transaction: a PostgreSQL re-run writes the same events.
    const events = downloads.length > 0 ? JSON.stringify(downloads.map((r, i) => ({ i, ...downloadRow(r) }))) : undefined;
    await this.db.transaction(async (tx) => {
      await tx.run(sql.insertRequests, [rows]);
      if (events !== undefined) await tx.run(sql.insertDownloads, [events]);
      // A request that ended after its hour was rolled up (a long download, a flush just past the
      // hour) goes into that hour's roll-up now, in the same transaction as its row.
      const until = await rolledUntil(tx);
      const late = records.filter((r) => r.time < until && (r.surface ?? 'cdn') === 'cdn');
      if (late.length > 0) for (const h of hoursOf(late.map(groupOf))) await addToHour(tx, h);
    });
  }

  /** The hour boundary before which every request is in the roll-ups. */
  async rolledUntil(): Promise<number> {
    return rolledUntil(this.db);
  }

  /**
   * Rolls every hour that ends at or before `nowMs` and is not rolled yet into cdn_hourly, in one
   * transaction with the new watermark: running it twice adds nothing. Returns the (owner, hour) rows written.
   */
  async rollUp(nowMs: number): Promise<number> {
    const untilHour = hourOf(nowMs);
    return this.db.transaction(async (tx) => {
      const from = await rolledUntil(tx);
      if (untilHour <= from) return 0;
      const hours = hoursOf(await tx.all<TrafficGroup>(GROUPS, [from, untilHour]));
      for (const h of hours) await addToHour(tx, h);
      await tx.run(SET_ROLLED_UNTIL, [untilHour]);
      return hours.length;
    });
  }

  /** Deletes requests before `cutoffMs` and roll-ups of hours that ended by then. */
  async expire(cutoffMs: number): Promise<Expired> {
    let requests = 0;
    for (;;) {
      const n = (await this.db.run(EXPIRE_REQUESTS, [cutoffMs, EXPIRE_CHUNK])).changes;
      requests += n;
      if (n < EXPIRE_CHUNK) break;
    }
    const hours = (await this.db.run(EXPIRE_HOURS, [cutoffMs - HOUR_MS])).changes;
    return { requests, hours };
  }
}

async function rolledUntil(exec: SqlExecutor): Promise<number> {
  return (await exec.get<{ rolled_until: number }>(ROLLED_UNTIL))?.rolled_until ?? 0;
}

async function addToHour(tx: SqlExecutor, h: HourTraffic): Promise<void> {
  const row = await tx.get<HourRow>(HOUR, [h.ownerId, h.hour]);
  const merged = row ? toHour(row) : h;
  if (row) mergeHour(merged, h);
  await tx.run(PUT_HOUR, [
    merged.ownerId, merged.hour, merged.requests, merged.bytes, merged.cachedBytes, merged.hits, merged.cacheLookups,
    JSON.stringify(merged.statusCounts), JSON.stringify(merged.countryCounts),
  ]);
}

function requestRow(r: CdnRequestRecord): Record<string, unknown> {
  return {
    tm: r.time, host: r.host, asset: r.assetId, bucket: r.bucket, okey: r.key, owner: r.ownerId, status: r.status, sent: r.bytesSent,
    cache: r.cacheStatus, ip: r.clientIp, country: r.country, ua: r.userAgent, dur: r.durationMs, surface: r.surface ?? 'cdn',
    method: r.method, path: r.path, bin: r.bytesIn ?? 0, decision: r.decision ?? 'allowed',
  };
}

function downloadRow(r: CdnRequestRecord): Record<string, unknown> {
  return {
    id: newId(), owner: r.ownerId, asset: r.assetId ?? '', sent: r.bytesSent, host: r.host, country: r.country, status: r.status,
    ip: r.clientIp, meta: JSON.stringify({ key: r.downloadKey }), tm: r.time,
  };
}

function groupOf(r: CdnRequestRecord): TrafficGroup {
  return { ownerId: r.ownerId ?? '', hour: hourOf(r.time), status: r.status, country: r.country, cacheStatus: r.cacheStatus, requests: 1, bytes: r.bytesSent };
}
