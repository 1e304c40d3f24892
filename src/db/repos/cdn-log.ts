// The CDN request log's tables (migration 006): batched inserts, hourly roll-ups and retention.
// Invariant: requests before cdn_rollup_state.rolled_until are counted in cdn_hourly exactly once, so
// a reader takes complete hours from the roll-ups and the rest from the raw rows.
import type { CdnRequestRecord } from './request-records.js';
import { hoursOf, mergeHour, hourOf, HOUR_MS, type HourTraffic, type TrafficGroup } from './traffic.js';
import { newTimeOrderedId } from '../ids.js';
import type { SqlExecutor } from '../store/types.js';

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
 * PostgreSQL gets one flush's rows as one JSON array of objects (keys below), so a batch is one
 * statement and one round trip; `i` is the record's place in the batch, so ids and seqs follow the
 * batch's order.
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
/** The rows of a JSON array parameter, one column per key (PostgreSQL: one statement per batch, one round trip). */
function jsonRows(keys: [string, string][]): string {
  return `SELECT ${keys.map(([k]) => k).join(', ')} FROM jsonb_to_recordset(CAST(? AS jsonb)) AS x(${keys.map(([k, t]) => `${k} ${t}`).join(', ')})`;
}
const PG_INSERT_REQUESTS = `INSERT INTO cdn_requests (${REQUEST_COLUMNS})
   SELECT ${REQUEST_KEYS.slice(1).map(([k]) => k).join(', ')} FROM (${jsonRows(REQUEST_KEYS)}) r ORDER BY i`;
/**
 * Download usage events: a user deleted since the request has none (its rows are skipped, the batch
 * goes on), so the foreign key never fails the flush (SQLite: EXISTING_USERS).
 */
const PG_INSERT_DOWNLOADS = `INSERT INTO usage_events (${USAGE_COLUMNS})
   SELECT id, owner, asset, 'download', 'cdn', sent, host, country, status, ip, meta, tm FROM (${jsonRows(USAGE_KEYS)}) e
   WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = e.owner) ORDER BY e.i`;

/**
 * SQLite: plain prepared INSERT ... VALUES of up to ROWS_PER_STATEMENT rows each, in the batch's order.
 * Binding values is several times cheaper than the JSON array PostgreSQL gets (json_each and a
 * json_extract per column cost about 25 µs a row, most of a CDN hit), and many rows a statement save
 * the per-statement step. The chunk sizes are powers of two, so a batch uses at most a few statements.
 */
const ROWS_PER_STATEMENT = 32;
const REQUEST_VALUES = `(${REQUEST_KEYS.slice(1).map(() => '?').join(', ')})`;
const USAGE_VALUES = `(?, ?, ?, 'download', 'cdn', ?, ?, ?, ?, ?, ?, ?)`;
const SQLITE_INSERTS = new Map<number, { requests: string; downloads: string }>();
for (let n = ROWS_PER_STATEMENT; n >= 1; n >>= 1) {
  SQLITE_INSERTS.set(n, {
    requests: `INSERT INTO cdn_requests (${REQUEST_COLUMNS}) VALUES ${Array(n).fill(REQUEST_VALUES).join(', ')}`,
    downloads: `INSERT INTO usage_events (${USAGE_COLUMNS}) VALUES ${Array(n).fill(USAGE_VALUES).join(', ')}`,
  });
}
/** The largest statement size (a power of two) that fits `left` rows. */
function chunkSize(left: number): number {
  let n = ROWS_PER_STATEMENT;
  while (n > left) n >>= 1;
  return n;
}
/** Which of a batch's owners still exist (a user deleted since the request has no usage events). */
const EXISTING_USERS = (n: number): string => `SELECT id FROM users WHERE id IN (${Array(n).fill('?').join(', ')})`;

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
    const downloads = records.filter((r) => r.downloadKey !== undefined && r.ownerId !== null);
    // Ids are made before the transaction: a PostgreSQL re-run writes the same events. Time-ordered, so
    // the unique index on them grows at its end (newTimeOrderedId).
    const ids = downloads.map((r) => newTimeOrderedId(r.time));
    await this.db.transaction(async (tx) => {
      if (tx.dialect === 'postgres') {
        await tx.run(PG_INSERT_REQUESTS, [JSON.stringify(records.map((r, i) => ({ i, ...requestRow(r) })))]);
        if (downloads.length > 0) await tx.run(PG_INSERT_DOWNLOADS, [JSON.stringify(downloads.map((r, i) => ({ i, ...downloadRow(r, ids[i] as string) })))]);
      } else {
        await insertSqlite(tx, records, downloads, ids);
      }
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

/** SQLite's insert of a batch: the rows, then the download events of owners that still exist, in order. */
async function insertSqlite(tx: SqlExecutor, records: readonly CdnRequestRecord[], downloads: readonly CdnRequestRecord[], ids: readonly string[]): Promise<void> {
  for (let at = 0; at < records.length; ) {
    const n = chunkSize(records.length - at);
    const params: unknown[] = [];
    for (let i = at; i < at + n; i++) pushRequestValues(params, records[i] as CdnRequestRecord);
    await tx.run((SQLITE_INSERTS.get(n) as { requests: string }).requests, params);
    at += n;
  }
  if (downloads.length === 0) return;
  const owners = [...new Set(downloads.map((r) => r.ownerId as string))];
  const existing = new Set<string>();
  for (let at = 0; at < owners.length; at += ROWS_PER_STATEMENT) {
    const some = owners.slice(at, at + ROWS_PER_STATEMENT);
    for (const row of await tx.all<{ id: string }>(EXISTING_USERS(some.length), some)) existing.add(row.id);
  }
  const kept: number[] = [];
  downloads.forEach((r, i) => {
    if (existing.has(r.ownerId as string)) kept.push(i);
  });
  for (let at = 0; at < kept.length; ) {
    const n = chunkSize(kept.length - at);
    const params: unknown[] = [];
    for (let j = at; j < at + n; j++) {
      const i = kept[j] as number;
      pushDownloadValues(params, downloads[i] as CdnRequestRecord, ids[i] as string);
    }
    await tx.run((SQLITE_INSERTS.get(n) as { downloads: string }).downloads, params);
    at += n;
  }
}

/** A record's values in REQUEST_COLUMNS order. */
function pushRequestValues(out: unknown[], r: CdnRequestRecord): void {
  out.push(
    r.time, r.host, r.assetId, r.bucket, r.key, r.ownerId, r.status, r.bytesSent, r.cacheStatus, r.clientIp, r.country,
    r.userAgent, r.durationMs, r.surface ?? 'cdn', r.method, r.path, r.bytesIn ?? 0, r.decision ?? 'allowed',
  );
}

/** A download event's values in USAGE_VALUES order (event type and source are in the SQL). */
function pushDownloadValues(out: unknown[], r: CdnRequestRecord, id: string): void {
  out.push(id, r.ownerId, r.assetId ?? '', r.bytesSent, r.host, r.country, r.status, r.clientIp, downloadMeta(r), r.time);
}

function downloadMeta(r: CdnRequestRecord): string {
  return JSON.stringify({ key: r.downloadKey });
}

function requestRow(r: CdnRequestRecord): Record<string, unknown> {
  return {
    tm: r.time, host: r.host, asset: r.assetId, bucket: r.bucket, okey: r.key, owner: r.ownerId, status: r.status, sent: r.bytesSent,
    cache: r.cacheStatus, ip: r.clientIp, country: r.country, ua: r.userAgent, dur: r.durationMs, surface: r.surface ?? 'cdn',
    method: r.method, path: r.path, bin: r.bytesIn ?? 0, decision: r.decision ?? 'allowed',
  };
}

function downloadRow(r: CdnRequestRecord, id: string): Record<string, unknown> {
  return {
    id, owner: r.ownerId, asset: r.assetId ?? '', sent: r.bytesSent, host: r.host, country: r.country, status: r.status,
    ip: r.clientIp, meta: downloadMeta(r), tm: r.time,
  };
}

function groupOf(r: CdnRequestRecord): TrafficGroup {
  return { ownerId: r.ownerId ?? '', hour: hourOf(r.time), status: r.status, country: r.country, cacheStatus: r.cacheStatus, requests: 1, bytes: r.bytesSent };
}
