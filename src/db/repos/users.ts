// Users: accounts that own buckets and keys.
import type { Statement } from '../sqlite/index.js';
import { newId } from '../../auth/ids.js';
import type { Db } from '../open.js';
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

export class UsersRepo {
  private readonly insertStmt: Statement<[string, string, number]>;
  private readonly byNameStmt: Statement<[string], UserRow>;
  private readonly byIdStmt: Statement<[string], UserRow>;
  private readonly listStmt: Statement<[], UserRow>;
  private readonly deleteStmt: Statement<[string]>;
  private readonly ownsDataStmt: Statement<{ id: string }, { owns: number }>;
  private readonly deleteTx: (id: string) => boolean;
  private readonly setPasswordStmt: Statement<[string | null, string]>;
  private readonly passwordStmt: Statement<[string], { password_hash: string | null }>;

  constructor(db: Db, private readonly clock: () => number = Date.now) {
    this.insertStmt = db.prepare('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)');
    this.byNameStmt = db.prepare('SELECT id, name, created_at FROM users WHERE name = ?');
    this.byIdStmt = db.prepare('SELECT id, name, created_at FROM users WHERE id = ?');
    this.listStmt = db.prepare('SELECT id, name, created_at FROM users ORDER BY name');
    this.deleteStmt = db.prepare('DELETE FROM users WHERE id = ?');
    this.setPasswordStmt = db.prepare('UPDATE users SET password_hash = ? WHERE id = ?');
    this.passwordStmt = db.prepare('SELECT password_hash FROM users WHERE id = ?');
    this.ownsDataStmt = db.prepare(
      'SELECT EXISTS (SELECT 1 FROM buckets WHERE owner_id = @id) OR EXISTS (SELECT 1 FROM assets WHERE user_id = @id) AS owns',
    );
    const tx = db.transaction((id: string): boolean => {
      if (this.ownsDataStmt.get({ id })?.owns) throw new ConstraintError('in_use', 'the user owns buckets or assets');
      return this.deleteStmt.run(id).changes > 0;
    });
    this.deleteTx = (id) => tx.immediate(id);
  }

  /** Throws ConstraintError('duplicate') when the name is taken. */
  create(name: string): User {
    const user: User = { id: newId(), name, createdAt: this.clock() };
    try {
      this.insertStmt.run(user.id, user.name, user.createdAt);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `user '${name}' already exists`);
      throw err;
    }
    return user;
  }

  getByName(name: string): User | undefined {
    const r = this.byNameStmt.get(name);
    return r && toUser(r);
  }

  getById(id: string): User | undefined {
    const r = this.byIdStmt.get(id);
    return r && toUser(r);
  }

  /** Sets (or with null, removes) the user's password hash (src/auth/passwords.ts); false when no such user. */
  setPasswordHash(id: string, hash: string | null): boolean {
    return this.setPasswordStmt.run(hash, id).changes === 1;
  }

  /** The user's stored password hash; undefined when the user has none (or does not exist). */
  passwordHash(id: string): string | undefined {
    return this.passwordStmt.get(id)?.password_hash ?? undefined;
  }

  list(): User[] {
    return this.listStmt.all().map(toUser);
  }

  /**
   * Deletes the user and (by cascade) its keys. False when no such user; throws
   * ConstraintError('in_use') when the user still owns buckets or assets.
   */
  delete(id: string): boolean {
    try {
      return this.deleteTx(id);
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the user owns buckets or assets');
      throw err;
    }
  }
}
