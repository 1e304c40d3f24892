// Spaces: every user has exactly one, created on first use; the admin CLI suspends and resumes it.
import type { Statement } from '../sqlite/index.js';
import { newId } from '../../auth/ids.js';
import type { Db } from '../open.js';

export type SpaceStatus = 'active' | 'suspended';

export interface Space {
  id: string;
  userId: string;
  name: string;
  status: SpaceStatus;
  /** Unix milliseconds, or null when not suspended. */
  suspendedAt: number | null;
  createdAt: number;
}

interface SpaceRow {
  id: string;
  user_id: string;
  name: string;
  status: SpaceStatus;
  suspended_at: number | null;
  created_at: number;
}

function toSpace(r: SpaceRow): Space {
  return { id: r.id, userId: r.user_id, name: r.name, status: r.status, suspendedAt: r.suspended_at, createdAt: r.created_at };
}

const COLUMNS = 'id, user_id, name, status, suspended_at, created_at';

export class SpacesRepo {
  private readonly insertStmt: Statement<[string, number, string]>;
  private readonly byUserStmt: Statement<[string], SpaceRow>;
  private readonly setStatusStmt: Statement<[SpaceStatus, number | null, string]>;

  constructor(db: Db, private readonly clock: () => number = Date.now) {
    // Named after its user, read in the same statement.
    this.insertStmt = db.prepare(
      `INSERT INTO spaces (id, user_id, name, status, created_at)
       SELECT ?, id, name, 'active', ? FROM users WHERE id = ? ON CONFLICT (user_id) DO NOTHING`,
    );
    this.byUserStmt = db.prepare(`SELECT ${COLUMNS} FROM spaces WHERE user_id = ?`);
    this.setStatusStmt = db.prepare('UPDATE spaces SET status = ?, suspended_at = ? WHERE user_id = ?');
  }

  /** The user's space, created (active, named after the user) if it does not exist yet. The user must exist. */
  ensure(userId: string): Space {
    const existing = this.byUserStmt.get(userId);
    if (existing) return toSpace(existing);
    this.insertStmt.run(newId(), this.clock(), userId);
    const created = this.byUserStmt.get(userId);
    if (!created) throw new Error(`spaces: no user ${userId}`);
    return toSpace(created);
  }

  get(userId: string): Space | undefined {
    const r = this.byUserStmt.get(userId);
    return r && toSpace(r);
  }

  /** Suspending an already suspended space keeps its original suspendedAt. */
  setStatus(userId: string, status: SpaceStatus): Space {
    const space = this.ensure(userId);
    if (space.status === status) return space;
    this.setStatusStmt.run(status, status === 'suspended' ? this.clock() : null, userId);
    return this.ensure(userId);
  }
}
