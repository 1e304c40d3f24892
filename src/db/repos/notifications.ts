// Event notifications' rows: the operator's webhook targets, each bucket's configuration (a JSON
// document, checked by src/s3/notification-config.ts before it gets here) and the outbox of events to
// deliver (src/notifications/dispatcher.ts drains it).
import type { SqlExecutor } from '../store/types.js';
import { BucketDocumentRepo } from './bucket-document.js';
import { ConstraintError, isUniqueViolation } from './errors.js';

export interface NotificationTarget {
  id: string;
  url: string;
  /** The signing secret, sealed with the master key (auth/secrets.ts). */
  secretEnc: string;
  createdAt: number;
}

/** One queue configuration as kept: events are names the configuration's check accepted. */
export interface StoredQueueConfiguration {
  id: string;
  targetId: string;
  arn: string;
  events: string[];
  prefix: string;
  suffix: string;
}

export interface OutboxEvent {
  /** The event id: x-s3edge-event-id, for receivers to drop a repeat. */
  id: string;
  targetId: string;
  /** The JSON body POSTed. */
  body: string;
  attempts: number;
  dueAt: number;
  createdAt: number;
  lastError: string | null;
}

interface TargetRow {
  id: string;
  url: string;
  secret_enc: string;
  created_at: number;
}

interface OutboxRow {
  id: string;
  target_id: string;
  body: string;
  attempts: number;
  due_at: number;
  created_at: number;
  last_error: string | null;
}

const toTarget = (r: TargetRow): NotificationTarget => ({ id: r.id, url: r.url, secretEnc: r.secret_enc, createdAt: Number(r.created_at) });
const toEvent = (r: OutboxRow): OutboxEvent => ({
  id: r.id,
  targetId: r.target_id,
  body: r.body,
  attempts: Number(r.attempts),
  dueAt: Number(r.due_at),
  createdAt: Number(r.created_at),
  lastError: r.last_error,
});

export class NotificationTargetsRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Throws ConstraintError('duplicate') for an id taken. */
  async insert(input: Omit<NotificationTarget, 'createdAt'>): Promise<NotificationTarget> {
    const target = { ...input, createdAt: this.clock() };
    try {
      await this.db.run('INSERT INTO notification_targets (id, url, secret_enc, created_at) VALUES (?, ?, ?, ?)', [target.id, target.url, target.secretEnc, target.createdAt]);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `notification target '${input.id}' already exists`);
      throw err;
    }
    return target;
  }

  async get(id: string): Promise<NotificationTarget | undefined> {
    const r = await this.db.get<TargetRow>('SELECT id, url, secret_enc, created_at FROM notification_targets WHERE id = ?', [id]);
    return r && toTarget(r);
  }

  async list(): Promise<NotificationTarget[]> {
    return (await this.db.all<TargetRow>('SELECT id, url, secret_enc, created_at FROM notification_targets ORDER BY id')).map(toTarget);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM notification_targets WHERE id = ?', [id])).changes > 0;
  }
}

export class BucketNotificationsRepo extends BucketDocumentRepo<StoredQueueConfiguration[]> {
  constructor(db: SqlExecutor, clock: () => number = Date.now) {
    super(db, 'bucket_notifications', clock);
  }
}

const OUTBOX_COLUMNS = 'id, target_id, body, attempts, due_at, created_at, last_error';

export class NotificationOutboxRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Queues events (in the caller's transaction: the one of the change they report). */
  async insert(events: readonly Pick<OutboxEvent, 'id' | 'targetId' | 'body' | 'createdAt'>[]): Promise<void> {
    for (const e of events) {
      await this.db.run('INSERT INTO notification_outbox (id, target_id, body, attempts, due_at, created_at) VALUES (?, ?, ?, 0, ?, ?)', [e.id, e.targetId, e.body, e.createdAt, e.createdAt]);
    }
  }

  /** Up to `limit` live events due by `now`, the longest waiting first. */
  async due(now: number, limit: number): Promise<OutboxEvent[]> {
    const rows = await this.db.all<OutboxRow>(`SELECT ${OUTBOX_COLUMNS} FROM notification_outbox WHERE dead = 0 AND due_at <= ? ORDER BY due_at, id LIMIT ?`, [now, limit]);
    return rows.map(toEvent);
  }

  /**
   * Takes an event for an attempt: counts it and moves it out of reach until `leaseUntil`, so that an
   * attempt cut short by a crash is tried again then. False when another process took it first.
   */
  async claim(e: Pick<OutboxEvent, 'id' | 'attempts'>, leaseUntil: number): Promise<boolean> {
    const r = await this.db.run('UPDATE notification_outbox SET attempts = attempts + 1, due_at = ? WHERE id = ? AND attempts = ? AND dead = 0', [leaseUntil, e.id, e.attempts]);
    return r.changes > 0;
  }

  /** Delivered: gone. */
  async delete(id: string): Promise<void> {
    await this.db.run('DELETE FROM notification_outbox WHERE id = ?', [id]);
  }

  /** A failed attempt: tried again at `dueAt`, or (dueAt null) kept as a dead letter. */
  async failed(id: string, error: string, dueAt: number | null): Promise<void> {
    if (dueAt === null) await this.db.run('UPDATE notification_outbox SET dead = 1, last_error = ? WHERE id = ?', [error, id]);
    else await this.db.run('UPDATE notification_outbox SET due_at = ?, last_error = ? WHERE id = ?', [dueAt, error, id]);
  }

  async counts(): Promise<{ pending: number; dead: number }> {
    const r = await this.db.get<{ pending: number | null; dead: number | null }>(
      'SELECT SUM(CASE WHEN dead = 0 THEN 1 ELSE 0 END) AS pending, SUM(dead) AS dead FROM notification_outbox',
    );
    return { pending: Number(r?.pending ?? 0), dead: Number(r?.dead ?? 0) };
  }

  /** The dead letters, newest first (for the operator). */
  async dead(limit: number): Promise<OutboxEvent[]> {
    return (await this.db.all<OutboxRow>(`SELECT ${OUTBOX_COLUMNS} FROM notification_outbox WHERE dead = 1 ORDER BY created_at DESC, id LIMIT ?`, [limit])).map(toEvent);
  }
}
