// Anomaly events on project hostnames' traffic (edge_anomalies, migration 012), written by the edge
// monitor (src/proxy/detect/monitor.ts) and listed for their owner. At most one open event per
// (hostname, kind): the table's partial unique index enforces it.
import type { AnomalyEvent, AnomalyKind, AnomalySeverity } from './anomaly-event.js';
import type { SqlExecutor } from '../store/types.js';
import { ConstraintError, isUniqueViolation } from './errors.js';

export interface AnomalyQuery {
  ownerId: string;
  /** Events overlapping [fromMs, toMs): started before toMs and not ended by fromMs. */
  fromMs: number;
  toMs: number;
  hostname?: string;
  limit: number;
}

interface AnomalyRow {
  id: string;
  hostname: string;
  owner_id: string;
  kind: AnomalyKind;
  severity: AnomalySeverity;
  started_at: number;
  ended_at: number | null;
  observed: number;
  baseline: number;
  detail: string;
}

const COLUMNS = 'id, hostname, owner_id, kind, severity, started_at, ended_at, observed, baseline, detail';

function toEvent(r: AnomalyRow): AnomalyEvent {
  return {
    id: r.id,
    hostname: r.hostname,
    ownerId: r.owner_id,
    kind: r.kind,
    severity: r.severity,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    observed: r.observed,
    baseline: r.baseline,
    detail: JSON.parse(r.detail) as Record<string, string | number>,
  };
}

const INSERT = `INSERT INTO edge_anomalies (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const CLOSE = 'UPDATE edge_anomalies SET ended_at = ? WHERE id = ? AND ended_at IS NULL';
const UPDATE = 'UPDATE edge_anomalies SET severity = ?, observed = ?, detail = ? WHERE id = ? AND ended_at IS NULL';
const OVERLAP = 'owner_id = ? AND started_at < ? AND (ended_at IS NULL OR ended_at > ?)';
const LIST = `SELECT ${COLUMNS} FROM edge_anomalies WHERE ${OVERLAP} ORDER BY started_at DESC, id DESC LIMIT ?`;
const LIST_HOST = `SELECT ${COLUMNS} FROM edge_anomalies WHERE ${OVERLAP} AND hostname = ? ORDER BY started_at DESC, id DESC LIMIT ?`;
const BY_ID = `SELECT ${COLUMNS} FROM edge_anomalies WHERE id = ? AND owner_id = ?`;
const OPEN = `SELECT ${COLUMNS} FROM edge_anomalies WHERE ended_at IS NULL ORDER BY started_at, id`;

export class AnomaliesRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** A new event; ConstraintError('duplicate') when one of its (hostname, kind) is already open. */
  async insert(e: AnomalyEvent): Promise<void> {
    try {
      await this.db.run(INSERT, [e.id, e.hostname, e.ownerId, e.kind, e.severity, e.startedAt, e.endedAt, e.observed, e.baseline, JSON.stringify(e.detail)]);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `an open ${e.kind} event of ${e.hostname} exists`);
      throw err;
    }
  }

  /** Ends an open event; false when it is unknown or already ended. */
  async close(id: string, endedAt: number): Promise<boolean> {
    return (await this.db.run(CLOSE, [endedAt, id])).changes === 1;
  }

  /** An open event grew worse: its severity, observed figure and detail now. */
  async update(id: string, severity: AnomalySeverity, observed: number, detail: Record<string, string | number>): Promise<boolean> {
    return (await this.db.run(UPDATE, [severity, observed, JSON.stringify(detail), id])).changes === 1;
  }

  /** The owner's events overlapping the window, newest first. */
  async list(q: AnomalyQuery): Promise<AnomalyEvent[]> {
    const limit = Math.max(0, Math.floor(q.limit));
    const rows =
      q.hostname === undefined
        ? await this.db.all<AnomalyRow>(LIST, [q.ownerId, q.toMs, q.fromMs, limit])
        : await this.db.all<AnomalyRow>(LIST_HOST, [q.ownerId, q.toMs, q.fromMs, q.hostname, limit]);
    return rows.map(toEvent);
  }

  /** One of the owner's events; undefined for another owner's or none. */
  async byId(ownerId: string, id: string): Promise<AnomalyEvent | undefined> {
    const row = await this.db.get<AnomalyRow>(BY_ID, [id, ownerId]);
    return row === undefined ? undefined : toEvent(row);
  }

  /** Every open event (the monitor restores them on start, so an ongoing one is not reported twice). */
  async open(): Promise<AnomalyEvent[]> {
    return (await this.db.all<AnomalyRow>(OPEN)).map(toEvent);
  }
}
