// Reads of the request log for proxy logs (src/proxy): one owner's edge traffic in a window — the
// requests the edge proxy handled for their project hostnames and the CDN requests for their assets,
// optionally of one hostname. A request is blocked when a rule refused it (decision), or, on the CDN,
// when its answer was a refusal (401, 403, 429, 451).
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';

/** Statuses that mean the CDN refused the request (rather than the object being absent). */
export const CDN_REFUSALS: readonly number[] = [401, 403, 429, 451];

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

export class EdgeTrafficRepo {
  private readonly groupsStmt: Statement<[EdgeTrafficQuery], TrafficGroupRow>;
  private readonly seriesStmt: Statement<[EdgeTrafficQuery & { bucketMs: number }], SeriesRow>;
  private readonly byRequestsStmt: Statement<[EdgeTrafficQuery & { limit: number }], SourceRow>;
  private readonly byBytesStmt: Statement<[EdgeTrafficQuery & { limit: number }], SourceRow>;

  constructor(db: Db) {
    this.groupsStmt = db.prepare(
      `SELECT host, CASE WHEN decision <> 'allowed' THEN decision WHEN ${BLOCKED} THEN 'refused' ELSE 'allowed' END AS decision,
         (status >= 500 AND NOT ${BLOCKED}) AS serverError, country, count(*) AS requests, coalesce(sum(bytes_sent), 0) AS bytes
       FROM cdn_requests WHERE ${WHERE} GROUP BY 1, 2, 3, 4`,
    );
    this.seriesStmt = db.prepare(
      `SELECT (time / CAST(:bucketMs AS INTEGER)) * CAST(:bucketMs AS INTEGER) AS start, count(*) AS requests, sum(${BLOCKED}) AS blocked, coalesce(sum(bytes_sent), 0) AS bytes
       FROM cdn_requests WHERE ${WHERE} GROUP BY 1 ORDER BY 1`,
    );
    const sources = (order: string): string =>
      `SELECT client_ip AS ip, count(*) AS requests, coalesce(sum(bytes_sent), 0) AS bytes, sum(${BLOCKED}) AS blocked
       FROM cdn_requests WHERE ${WHERE} AND client_ip <> '' GROUP BY client_ip ORDER BY ${order}, client_ip LIMIT :limit`;
    this.byRequestsStmt = db.prepare(sources('requests DESC, bytes DESC'));
    this.byBytesStmt = db.prepare(sources('bytes DESC, requests DESC'));
  }

  /** Requests and bytes by hostname, decision, server error and country. */
  groups(q: EdgeTrafficQuery): TrafficGroupRow[] {
    return this.groupsStmt.all(q);
  }

  /** Buckets of `bucketMs` (aligned to the epoch) that have requests, oldest first. */
  series(q: EdgeTrafficQuery, bucketMs: number): SeriesRow[] {
    return this.seriesStmt.all({ ...q, bucketMs });
  }

  /** The busiest client IPs by requests (then bytes), or by bytes (then requests); ties by address. */
  topSources(q: EdgeTrafficQuery, by: 'requests' | 'bytes', limit: number): SourceRow[] {
    return (by === 'requests' ? this.byRequestsStmt : this.byBytesStmt).all({ ...q, limit });
  }
}
