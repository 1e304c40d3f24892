// Access keys: root, account and bucket-scoped S3 credentials. Secrets are stored encrypted (secretEnc).
import type { SqlExecutor } from '../store/types.js';
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

const INSERT = `INSERT INTO access_keys (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;
const GET = `SELECT ${COLUMNS} FROM access_keys WHERE access_key_id = ?`;
const LIST = `SELECT ${COLUMNS} FROM access_keys
  WHERE (CAST(@kind AS TEXT) IS NULL OR kind = @kind)
    AND (CAST(@userId AS TEXT) IS NULL OR user_id = @userId)
    AND (CAST(@bucketId AS TEXT) IS NULL OR bucket_id = @bucketId)
  ORDER BY created_at, access_key_id`;
const GET_WITH_BUCKET = `SELECT k.access_key_id, k.kind, k.user_id, k.bucket_id, k.permission, k.name, k.secret_enc, k.created_at,
    b.name AS bucket_name, u.name AS user_name
  FROM access_keys k JOIN users u ON u.id = k.user_id LEFT JOIN buckets b ON b.id = k.bucket_id WHERE k.access_key_id = ?`;
const DELETE = 'DELETE FROM access_keys WHERE access_key_id = ?';
const DELETE_BY_KIND = 'DELETE FROM access_keys WHERE kind = ?';

export class AccessKeysRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * A bucket key needs bucketId and permission; root and account keys have neither. Throws
   * ConstraintError('duplicate') for a taken id, ('in_use') for an unknown user or bucket.
   */
  async insert(input: NewAccessKey): Promise<AccessKey> {
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
      await this.db.run(INSERT, [key.accessKeyId, key.kind, key.userId, bucketId, permission, key.name, key.secretEnc, key.createdAt]);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', 'access key id already exists');
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the user or bucket of the key does not exist');
      throw err;
    }
    return key;
  }

  async get(accessKeyId: string): Promise<AccessKey | undefined> {
    const r = await this.db.get<AccessKeyRow>(GET, [accessKeyId]);
    return r && toKey(r);
  }

  /** The key and, for a bucket key, its bucket's name (null when the bucket is gone), in one statement: S3 authentication's load. */
  async getWithBucket(accessKeyId: string): Promise<(AccessKey & { bucketName: string | null; userName: string }) | undefined> {
    const r = await this.db.get<AccessKeyRow & { bucket_name: string | null; user_name: string }>(GET_WITH_BUCKET, [accessKeyId]);
    return r && { ...toKey(r), bucketName: r.bucket_name, userName: r.user_name };
  }

  /** Keys matching every given filter, oldest first. */
  async list(filter: AccessKeyFilter = {}): Promise<AccessKey[]> {
    const rows = await this.db.all<AccessKeyRow>(LIST, { kind: filter.kind ?? null, userId: filter.userId ?? null, bucketId: filter.bucketId ?? null });
    return rows.map(toKey);
  }

  async delete(accessKeyId: string): Promise<boolean> {
    return (await this.db.run(DELETE, [accessKeyId])).changes > 0;
  }

  /** Deletes every key of a kind; returns how many. */
  async deleteByKind(kind: AccessKeyKind): Promise<number> {
    return (await this.db.run(DELETE_BY_KIND, [kind])).changes;
  }
}
