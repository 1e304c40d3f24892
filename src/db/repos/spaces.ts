// Spaces: every user has exactly one, created on first use; the admin CLI suspends and resumes it.
import { newId } from '../ids.js';
import type { SqlExecutor } from '../store/types.js';

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

// Named after its user, read in the same statement.
const INSERT = `INSERT INTO spaces (id, user_id, name, status, created_at)
  SELECT ?, id, name, 'active', ? FROM users WHERE id = ? ON CONFLICT (user_id) DO NOTHING`;
const BY_USER = `SELECT ${COLUMNS} FROM spaces WHERE user_id = ?`;
const SET_STATUS = 'UPDATE spaces SET status = ?, suspended_at = ? WHERE user_id = ?';

export class SpacesRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The user's space, created (active, named after the user) if it does not exist yet. The user must exist. */
  async ensure(userId: string): Promise<Space> {
    const existing = await this.db.get<SpaceRow>(BY_USER, [userId]);
    if (existing) return toSpace(existing);
    await this.db.run(INSERT, [newId(), this.clock(), userId]);
    const created = await this.db.get<SpaceRow>(BY_USER, [userId]);
    if (!created) throw new Error(`spaces: no user ${userId}`);
    return toSpace(created);
  }

  async get(userId: string): Promise<Space | undefined> {
    const r = await this.db.get<SpaceRow>(BY_USER, [userId]);
    return r && toSpace(r);
  }

  /** Suspending an already suspended space keeps its original suspendedAt. */
  async setStatus(userId: string, status: SpaceStatus): Promise<Space> {
    return this.db.transaction(async (tx) => {
      const spaces = new SpacesRepo(tx, this.clock);
      const space = await spaces.ensure(userId);
      if (space.status === status) return space;
      await tx.run(SET_STATUS, [status, status === 'suspended' ? this.clock() : null, userId]);
      return spaces.ensure(userId);
    });
  }
}
