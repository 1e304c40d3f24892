// API keys of the management API: bearer tokens with scopes. Only a hash of the secret is stored.
import type { SqlExecutor } from '../store/types.js';
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

const INSERT = `INSERT INTO api_keys (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`;
const GET = `SELECT ${COLUMNS} FROM api_keys WHERE id = ?`;
const LIST_ALL = `SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, id`;
const LIST_BY_USER = `SELECT ${COLUMNS} FROM api_keys WHERE user_id = ? ORDER BY created_at, id`;
const DELETE = 'DELETE FROM api_keys WHERE id = ?';

export class ApiKeysRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Throws ConstraintError('duplicate') for a taken id, ('in_use') for an unknown user. */
  async insert(input: NewApiKey): Promise<ApiKey> {
    const key: ApiKey = { ...input, scopes: [...input.scopes], createdAt: this.clock() };
    try {
      await this.db.run(INSERT, [key.id, key.userId, key.name, key.secretHash, JSON.stringify(key.scopes), key.createdAt]);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', 'api key id already exists');
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the user of the key does not exist');
      throw err;
    }
    return key;
  }

  async get(id: string): Promise<ApiKey | undefined> {
    const r = await this.db.get<ApiKeyRow>(GET, [id]);
    return r && toKey(r);
  }

  /** All keys, or those of one user, oldest first. */
  async list(userId?: string): Promise<ApiKey[]> {
    const rows = userId === undefined ? await this.db.all<ApiKeyRow>(LIST_ALL) : await this.db.all<ApiKeyRow>(LIST_BY_USER, [userId]);
    return rows.map(toKey);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run(DELETE, [id])).changes > 0;
  }
}
