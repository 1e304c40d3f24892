// Users: accounts that own buckets and keys.
import { newId } from '../ids.js';
import type { SqlExecutor } from '../store/types.js';
import { ConstraintError, isForeignKeyViolation, isUniqueViolation } from './errors.js';

export interface User {
  id: string;
  name: string;
  /** Unix milliseconds. */
  createdAt: number;
}

interface UserRow {
  id: string;
  name: string;
  created_at: number;
}

function toUser(r: UserRow): User {
  return { id: r.id, name: r.name, createdAt: r.created_at };
}

const INSERT = 'INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)';
const BY_NAME = 'SELECT id, name, created_at FROM users WHERE name = ?';
const BY_ID = 'SELECT id, name, created_at FROM users WHERE id = ?';
const LIST = 'SELECT id, name, created_at FROM users ORDER BY name';
const DELETE = 'DELETE FROM users WHERE id = ?';
const SET_PASSWORD = 'UPDATE users SET password_hash = ? WHERE id = ?';
const PASSWORD = 'SELECT password_hash FROM users WHERE id = ?';
const OWNS_DATA =
  'SELECT CASE WHEN EXISTS (SELECT 1 FROM buckets WHERE owner_id = @id) OR EXISTS (SELECT 1 FROM assets WHERE user_id = @id) THEN 1 ELSE 0 END AS owns';

export class UsersRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Throws ConstraintError('duplicate') when the name is taken. */
  async create(name: string): Promise<User> {
    const user: User = { id: newId(), name, createdAt: this.clock() };
    try {
      await this.db.run(INSERT, [user.id, user.name, user.createdAt]);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `user '${name}' already exists`);
      throw err;
    }
    return user;
  }

  async getByName(name: string): Promise<User | undefined> {
    const r = await this.db.get<UserRow>(BY_NAME, [name]);
    return r && toUser(r);
  }

  async getById(id: string): Promise<User | undefined> {
    const r = await this.db.get<UserRow>(BY_ID, [id]);
    return r && toUser(r);
  }

  /** Sets (or with null, removes) the user's password hash (src/auth/passwords.ts); false when no such user. */
  async setPasswordHash(id: string, hash: string | null): Promise<boolean> {
    return (await this.db.run(SET_PASSWORD, [hash, id])).changes === 1;
  }

  /** The user's stored password hash; undefined when the user has none (or does not exist). */
  async passwordHash(id: string): Promise<string | undefined> {
    return (await this.db.get<{ password_hash: string | null }>(PASSWORD, [id]))?.password_hash ?? undefined;
  }

  async list(): Promise<User[]> {
    return (await this.db.all<UserRow>(LIST)).map(toUser);
  }

  /**
   * Deletes the user and (by cascade) its keys. False when no such user; throws
   * ConstraintError('in_use') when the user still owns buckets or assets.
   */
  async delete(id: string): Promise<boolean> {
    try {
      return await this.db.transaction(async (tx) => {
        if ((await tx.get<{ owns: number }>(OWNS_DATA, { id }))?.owns) throw new ConstraintError('in_use', 'the user owns buckets or assets');
        return (await tx.run(DELETE, [id])).changes > 0;
      });
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the user owns buckets or assets');
      throw err;
    }
  }
}
