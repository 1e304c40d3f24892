// Anomaly events on project hostnames' traffic (edge_anomalies, migration 012), written by the edge
// monitor (src/edge/detect/monitor.ts) and listed for their owner. At most one open event per
// (hostname, kind): the table's partial unique index enforces it.
import type { Statement } from '../sqlite/index.js';
import type { AnomalyEvent, AnomalyKind, AnomalySeverity } from '../../edge/detect/event.js';
import type { Db } from '../open.js';
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

type InsertArgs = [string, string, string, string, string, number, number | null, number, number, string];

export class AnomaliesRepo {
  private readonly insertStmt: Statement<InsertArgs>;
  private readonly closeStmt: Statement<[number, string]>;
  private readonly updateStmt: Statement<[AnomalySeverity, number, string, string]>;
  private readonly listStmt: Statement<[string, number, number, number], AnomalyRow>;
  private readonly listHostStmt: Statement<[string, number, number, string, number], AnomalyRow>;
  private readonly openStmt: Statement<[], AnomalyRow>;

  constructor(db: Db) {
    this.insertStmt = db.prepare(`INSERT INTO edge_anomalies (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.closeStmt = db.prepare('UPDATE edge_anomalies SET ended_at = ? WHERE id = ? AND ended_at IS NULL');
    this.updateStmt = db.prepare('UPDATE edge_anomalies SET severity = ?, observed = ?, detail = ? WHERE id = ? AND ended_at IS NULL');
    const overlap = 'owner_id = ? AND started_at < ? AND (ended_at IS NULL OR ended_at > ?)';
    this.listStmt = db.prepare(`SELECT ${COLUMNS} FROM edge_anomalies WHERE ${overlap} ORDER BY started_at DESC, id DESC LIMIT ?`);
    this.listHostStmt = db.prepare(`SELECT ${COLUMNS} FROM edge_anomalies WHERE ${overlap} AND hostname = ? ORDER BY started_at DESC, id DESC LIMIT ?`);
    this.openStmt = db.prepare(`SELECT ${COLUMNS} FROM edge_anomalies WHERE ended_at IS NULL ORDER BY started_at, id`);
  }

  /** A new event; ConstraintError('duplicate') when one of its (hostname, kind) is already open. */
  insert(e: AnomalyEvent): void {
    try {
      this.insertStmt.run(e.id, e.hostname, e.ownerId, e.kind, e.severity, e.startedAt, e.endedAt, e.observed, e.baseline, JSON.stringify(e.detail));
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `an open ${e.kind} event of ${e.hostname} exists`);
      throw err;
    }
  }

  /** Ends an open event; false when it is unknown or already ended. */
  close(id: string, endedAt: number): boolean {
    return this.closeStmt.run(endedAt, id).changes === 1;
  }

  /** An open event grew worse: its severity, observed figure and detail now. */
  update(id: string, severity: AnomalySeverity, observed: number, detail: Record<string, string | number>): boolean {
    return this.updateStmt.run(severity, observed, JSON.stringify(detail), id).changes === 1;
  }

  /** The owner's events overlapping the window, newest first. */
  list(q: AnomalyQuery): AnomalyEvent[] {
    const limit = Math.max(0, Math.floor(q.limit));
    const rows =
      q.hostname === undefined
        ? this.listStmt.all(q.ownerId, q.toMs, q.fromMs, limit)
        : this.listHostStmt.all(q.ownerId, q.toMs, q.fromMs, q.hostname, limit);
    return rows.map(toEvent);
  }

  /** Every open event (the monitor restores them on start, so an ongoing one is not reported twice). */
  open(): AnomalyEvent[] {
    return this.openStmt.all().map(toEvent);
  }
}
