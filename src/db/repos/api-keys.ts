// API keys of the management API: bearer tokens with scopes. Only a hash of the secret is stored.
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';
import { ConstraintError, isForeignKeyViolation, isUniqueViolation } from './errors.js';

export interface ApiKey {
  id: string;
  userId: string;
  name: string;
  /** Hex SHA-256 of the token's secret part. */
  secretHash: string;
  scopes: string[];
  /** Unix milliseconds. */
  createdAt: number;
}

export interface NewApiKey {
  id: string;
  userId: string;
  name: string;
  secretHash: string;
  scopes: readonly string[];
}

interface ApiKeyRow {
  id: string;
  user_id: string;
  name: string;
  secret_hash: string;
  scopes: string;
  created_at: number;
}

function toKey(r: ApiKeyRow): ApiKey {
  return { id: r.id, userId: r.user_id, name: r.name, secretHash: r.secret_hash, scopes: JSON.parse(r.scopes) as string[], createdAt: r.created_at };
}

const COLUMNS = 'id, user_id, name, secret_hash, scopes, created_at';

export class ApiKeysRepo {
  private readonly insertStmt: Statement<[string, string, string, string, string, number]>;
  private readonly getStmt: Statement<[string], ApiKeyRow>;
  private readonly listAllStmt: Statement<[], ApiKeyRow>;
  private readonly listByUserStmt: Statement<[string], ApiKeyRow>;
  private readonly deleteStmt: Statement<[string]>;

  constructor(db: Db, private readonly clock: () => number = Date.now) {
    this.insertStmt = db.prepare(`INSERT INTO api_keys (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`);
    this.getStmt = db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`);
    this.listAllStmt = db.prepare(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, id`);
    this.listByUserStmt = db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE user_id = ? ORDER BY created_at, id`);
    this.deleteStmt = db.prepare('DELETE FROM api_keys WHERE id = ?');
  }

  /** Throws ConstraintError('duplicate') for a taken id, ('in_use') for an unknown user. */
  insert(input: NewApiKey): ApiKey {
    const key: ApiKey = { ...input, scopes: [...input.scopes], createdAt: this.clock() };
    try {
      this.insertStmt.run(key.id, key.userId, key.name, key.secretHash, JSON.stringify(key.scopes), key.createdAt);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', 'api key id already exists');
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the user of the key does not exist');
      throw err;
    }
    return key;
  }

  get(id: string): ApiKey | undefined {
    const r = this.getStmt.get(id);
    return r && toKey(r);
  }

  /** All keys, or those of one user, oldest first. */
  list(userId?: string): ApiKey[] {
    return (userId === undefined ? this.listAllStmt.all() : this.listByUserStmt.all(userId)).map(toKey);
  }

  delete(id: string): boolean {
    return this.deleteStmt.run(id).changes > 0;
  }
}
