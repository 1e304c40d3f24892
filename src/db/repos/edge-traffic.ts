// Reads of the request log for proxy logs (src/proxy): one owner's edge traffic in a window — the
// requests the edge proxy handled for their project hostnames and the CDN requests for their assets,
// optionally of one hostname. A request is blocked when a rule refused it (decision; also
// 'credits-depleted', the proxy's 402 when the owner's credits ran out), or, on the CDN, when its answer
// was a refusal (401, 402, 403, 429, 451).
import type { SqlExecutor } from '../store/types.js';
import { afterCursorSql, cursorParams, type PageCursor } from './page-cursor.js';

/** Statuses that mean the CDN refused the request (rather than the object being absent); 402: the owner's credits ran out. */
export const CDN_REFUSALS: readonly number[] = [401, 402, 403, 429, 451];

/** SQL true for a blocked request row. */
const BLOCKED = `(decision <> 'allowed' OR (surface = 'cdn' AND status IN (${CDN_REFUSALS.join(', ')})))`;

/** The window of one owner; hostname '' means all of theirs. Times are Unix ms, both ends included. */
export interface EdgeTrafficQuery {
  ownerId: string;
  fromMs: number;
  toMs: number;
  hostname: string;
}

export interface TrafficGroupRow {
  host: string;
  /** 'allowed', a rule (BlockReason), or 'refused' for a CDN refusal. */
  decision: string;
  /** 1 when the origin (or the CDN) answered 5xx to an allowed request. */
  serverError: number;
  /** ISO code, '' when unknown. */
  country: string;
  requests: number;
  bytes: number;
}

export interface SeriesRow {
  start: number;
  requests: number;
  blocked: number;
  bytes: number;
}

export interface SourceRow {
  ip: string;
  requests: number;
  bytes: number;
  blocked: number;
}

const WHERE = `owner_id = :ownerId AND time >= :fromMs AND time <= :toMs AND (:hostname = '' OR host = :hostname)`;
/** 1 for a blocked row, else 0 (a comparison is a boolean on PostgreSQL). */
const BLOCKED_01 = `CASE WHEN ${BLOCKED} THEN 1 ELSE 0 END`;
// Aliases are quoted: PostgreSQL folds bare ones to lower case.
const GROUPS = `SELECT host, CASE WHEN decision <> 'allowed' THEN decision WHEN ${BLOCKED} THEN 'refused' ELSE 'allowed' END AS decision,
    CASE WHEN status >= 500 AND NOT ${BLOCKED} THEN 1 ELSE 0 END AS "serverError", country, count(*) AS requests,
    coalesce(sum(bytes_sent), 0) AS bytes
  FROM cdn_requests WHERE ${WHERE} GROUP BY 1, 2, 3, 4`;
const SERIES = `SELECT (time / CAST(:bucketMs AS BIGINT)) * CAST(:bucketMs AS BIGINT) AS start, count(*) AS requests,
    sum(${BLOCKED_01}) AS blocked, coalesce(sum(bytes_sent), 0) AS bytes
  FROM cdn_requests WHERE ${WHERE} GROUP BY 1 ORDER BY 1`;
const sources = (order: string): string =>
  `SELECT client_ip AS ip, count(*) AS requests, coalesce(sum(bytes_sent), 0) AS bytes, sum(${BLOCKED_01}) AS blocked
   FROM cdn_requests WHERE ${WHERE} AND client_ip <> '' GROUP BY client_ip ORDER BY ${order}, client_ip LIMIT :limit`;
const BY_REQUESTS = sources('requests DESC, bytes DESC');
const BY_BYTES = sources('bytes DESC, requests DESC');

/** Which requests of the window a log listing keeps; absent fields keep every request. */
export interface RequestFilter {
  /** 'allowed', 'blocked', a rule (BlockReason) or 'refused' (a CDN refusal). */
  decision?: string;
  ip?: string;
  /** ISO code; '' for requests of no known country. */
  country?: string;
  /** Paths starting with this. */
  pathPrefix?: string;
}

export interface LoggedRequestRow {
  id: number;
  time: number;
  host: string;
  surface: 'cdn' | 'proxy';
  method: string;
  path: string;
  status: number;
  /** As the listing names it: 'allowed', a rule, or 'refused'. */
  decision: string;
  bytesSent: number;
  bytesIn: number;
  clientIp: string;
  country: string;
  userAgent: string;
  durationMs: number;
  cacheStatus: string | null;
}

export interface CountryRow {
  country: string;
  requests: number;
  blocked: number;
}

const DECISION = `CASE WHEN decision <> 'allowed' THEN decision WHEN ${BLOCKED} THEN 'refused' ELSE 'allowed' END`;
const REQUEST_COLUMNS = `id, time, host, surface, method, path, status, ${DECISION} AS decision, bytes_sent AS "bytesSent",
  bytes_in AS "bytesIn", client_ip AS "clientIp", country, user_agent AS "userAgent", duration_ms AS "durationMs", cache_status AS "cacheStatus"`;
const COUNTRIES = `SELECT country, count(*) AS requests, sum(${BLOCKED_01}) AS blocked FROM cdn_requests WHERE ${WHERE}
  GROUP BY country ORDER BY requests DESC, country LIMIT :limit`;

/** The filter's conditions and their parameters (every value a bound parameter). */
function filterSql(f: RequestFilter): { sql: string; params: Record<string, unknown> } {
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  if (f.decision === 'blocked') where.push(BLOCKED);
  else if (f.decision === 'allowed') where.push(`NOT ${BLOCKED}`);
  else if (f.decision === 'refused') where.push(`decision = 'allowed' AND ${BLOCKED}`);
  else if (f.decision !== undefined) {
    where.push('decision = :decision');
    params['decision'] = f.decision;
  }
  if (f.ip !== undefined) {
    where.push('client_ip = :ip');
    params['ip'] = f.ip;
  }
  if (f.country !== undefined) {
    where.push('country = :country');
    params['country'] = f.country;
  }
  if (f.pathPrefix !== undefined) {
    // substr/length rather than LIKE: no wildcard to escape, and the same meaning on both stores.
    where.push('substr(path, 1, length(CAST(:pathPrefix AS TEXT))) = CAST(:pathPrefix AS TEXT)');
    params['pathPrefix'] = f.pathPrefix;
  }
  return { sql: where.map((w) => ` AND ${w}`).join(''), params };
}

export class EdgeTrafficRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Requests and bytes by hostname, decision, server error and country. */
  async groups(q: EdgeTrafficQuery): Promise<TrafficGroupRow[]> {
    return this.db.all<TrafficGroupRow>(GROUPS, params(q));
  }

  /** Buckets of `bucketMs` (aligned to the epoch) that have requests, oldest first. */
  async series(q: EdgeTrafficQuery, bucketMs: number): Promise<SeriesRow[]> {
    return this.db.all<SeriesRow>(SERIES, { ...params(q), bucketMs });
  }

  /** A page of the window's requests, newest first, after `before` when given. */
  async requests(q: EdgeTrafficQuery, filter: RequestFilter, before: PageCursor | null, limit: number): Promise<LoggedRequestRow[]> {
    const f = filterSql(filter);
    const after = before === null ? '' : afterCursorSql('time', 'id');
    const sql = `SELECT ${REQUEST_COLUMNS} FROM cdn_requests WHERE ${WHERE}${f.sql}${after} ORDER BY time DESC, id DESC LIMIT :limit`;
    return this.db.all<LoggedRequestRow>(sql, { ...params(q), ...f.params, ...(before === null ? {} : cursorParams(before)), limit });
  }

  /** Requests by country ('' unknown), busiest first. */
  async countries(q: EdgeTrafficQuery, limit: number): Promise<CountryRow[]> {
    return this.db.all<CountryRow>(COUNTRIES, { ...params(q), limit });
  }

  /** The busiest client IPs by requests (then bytes), or by bytes (then requests); ties by address. */
  async topSources(q: EdgeTrafficQuery, by: 'requests' | 'bytes', limit: number): Promise<SourceRow[]> {
    return this.db.all<SourceRow>(by === 'requests' ? BY_REQUESTS : BY_BYTES, { ...params(q), limit });
  }
}

/** Only the statement's own names (a caller's query object may carry more). */
function params(q: EdgeTrafficQuery): Record<string, unknown> {
  return { ownerId: q.ownerId, fromMs: q.fromMs, toMs: q.toMs, hostname: q.hostname };
}
