// Access keys: root, account and bucket-scoped S3 credentials. Secrets are stored encrypted (secretEnc).
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';
import { ConstraintError, isForeignKeyViolation, isUniqueViolation } from './errors.js';

export type AccessKeyKind = 'root' | 'account' | 'bucket';
export type BucketPermission = 'read' | 'read_write';

export interface AccessKey {
  accessKeyId: string;
  kind: AccessKeyKind;
  userId: string;
  /** Set for kind 'bucket' only. */
  bucketId: string | null;
  /** Set for kind 'bucket' only. */
  permission: BucketPermission | null;
  name: string;
  /** `encryptSecret` output; never the plaintext. */
  secretEnc: string;
  /** Unix milliseconds. */
  createdAt: number;
}

export interface NewAccessKey {
  accessKeyId: string;
  kind: AccessKeyKind;
  userId: string;
  bucketId?: string | null;
  permission?: BucketPermission | null;
  name: string;
  secretEnc: string;
}

export interface AccessKeyFilter {
  kind?: AccessKeyKind;
  userId?: string;
  bucketId?: string;
}

interface AccessKeyRow {
  access_key_id: string;
  kind: AccessKeyKind;
  user_id: string;
  bucket_id: string | null;
  permission: BucketPermission | null;
  name: string;
  secret_enc: string;
  created_at: number;
}

function toKey(r: AccessKeyRow): AccessKey {
  return {
    accessKeyId: r.access_key_id,
    kind: r.kind,
    userId: r.user_id,
    bucketId: r.bucket_id,
    permission: r.permission,
    name: r.name,
    secretEnc: r.secret_enc,
    createdAt: r.created_at,
  };
}

const COLUMNS = 'access_key_id, kind, user_id, bucket_id, permission, name, secret_enc, created_at';

interface FilterParams {
  kind: string | null;
  userId: string | null;
  bucketId: string | null;
}

export class AccessKeysRepo {
  private readonly insertStmt: Statement<[string, string, string, string | null, string | null, string, string, number]>;
  private readonly getStmt: Statement<[string], AccessKeyRow>;
  private readonly listStmt: Statement<FilterParams, AccessKeyRow>;
  private readonly deleteStmt: Statement<[string]>;
  private readonly deleteByKindStmt: Statement<[string]>;

  constructor(db: Db, private readonly clock: () => number = Date.now) {
    this.insertStmt = db.prepare(`INSERT INTO access_keys (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    this.getStmt = db.prepare(`SELECT ${COLUMNS} FROM access_keys WHERE access_key_id = ?`);
    this.listStmt = db.prepare(
      `SELECT ${COLUMNS} FROM access_keys
       WHERE (@kind IS NULL OR kind = @kind)
         AND (@userId IS NULL OR user_id = @userId)
         AND (@bucketId IS NULL OR bucket_id = @bucketId)
       ORDER BY created_at, access_key_id`,
    );
    this.deleteStmt = db.prepare('DELETE FROM access_keys WHERE access_key_id = ?');
    this.deleteByKindStmt = db.prepare('DELETE FROM access_keys WHERE kind = ?');
  }

  /**
   * A bucket key needs bucketId and permission; root and account keys have neither. Throws
   * ConstraintError('duplicate') for a taken id, ('in_use') for an unknown user or bucket.
   */
  insert(input: NewAccessKey): AccessKey {
    const bucketId = input.bucketId ?? null;
    const permission = input.permission ?? null;
    if ((input.kind === 'bucket') !== (bucketId !== null) || (input.kind === 'bucket') !== (permission !== null)) {
      throw new Error(`access key of kind '${input.kind}': bucketId and permission are set for bucket keys only`);
    }
    const key: AccessKey = {
      accessKeyId: input.accessKeyId,
      kind: input.kind,
      userId: input.userId,
      bucketId,
      permission,
      name: input.name,
      secretEnc: input.secretEnc,
      createdAt: this.clock(),
    };
    try {
      this.insertStmt.run(key.accessKeyId, key.kind, key.userId, bucketId, permission, key.name, key.secretEnc, key.createdAt);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', 'access key id already exists');
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the user or bucket of the key does not exist');
      throw err;
    }
    return key;
  }

  get(accessKeyId: string): AccessKey | undefined {
    const r = this.getStmt.get(accessKeyId);
    return r && toKey(r);
  }

  /** Keys matching every given filter, oldest first. */
  list(filter: AccessKeyFilter = {}): AccessKey[] {
    return this.listStmt
      .all({ kind: filter.kind ?? null, userId: filter.userId ?? null, bucketId: filter.bucketId ?? null })
      .map(toKey);
  }

  delete(accessKeyId: string): boolean {
    return this.deleteStmt.run(accessKeyId).changes > 0;
  }

  /** Deletes every key of a kind; returns how many. */
  deleteByKind(kind: AccessKeyKind): number {
    return this.deleteByKindStmt.run(kind).changes;
  }
}
