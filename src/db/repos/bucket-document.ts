// A bucket's configuration document (CORS rules, tags, ...): one JSON value per bucket in a table of
// its own, keyed by the bucket and deleted with it, validated before it gets here. The tables are
// named here, never by a caller's text.
import type { SqlExecutor } from '../store/types.js';

/** Each document table and the column that holds the JSON. */
const TABLES = { bucket_cors: 'rules', bucket_tagging: 'tags', bucket_policies: 'policy', bucket_acls: 'acl', bucket_lifecycle: 'rules', bucket_notifications: 'config' } as const;
export type BucketDocumentTable = keyof typeof TABLES;

export class BucketDocumentRepo<T> {
  private readonly getSql: string;
  private readonly putSql: string;
  private readonly deleteSql: string;

  constructor(
    protected readonly db: SqlExecutor,
    table: BucketDocumentTable,
    protected readonly clock: () => number = Date.now,
  ) {
    const column = TABLES[table];
    this.getSql = `SELECT ${column} AS doc FROM ${table} WHERE bucket_id = ?`;
    this.putSql = `INSERT INTO ${table} (bucket_id, ${column}, updated_at) VALUES (?, ?, ?)
      ON CONFLICT (bucket_id) DO UPDATE SET ${column} = excluded.${column}, updated_at = excluded.updated_at`;
    this.deleteSql = `DELETE FROM ${table} WHERE bucket_id = ?`;
  }

  /** The bucket's document, or undefined when it has none. */
  async get(bucketId: string): Promise<T | undefined> {
    const row = await this.db.get<{ doc: string }>(this.getSql, [bucketId]);
    return row && (JSON.parse(row.doc) as T);
  }

  /** Replaces the whole document. */
  async put(bucketId: string, doc: T): Promise<void> {
    await this.db.run(this.putSql, [bucketId, JSON.stringify(doc), this.clock()]);
  }

  /** Returns whether there was a document. */
  async delete(bucketId: string): Promise<boolean> {
    return (await this.db.run(this.deleteSql, [bucketId])).changes > 0;
  }
}
