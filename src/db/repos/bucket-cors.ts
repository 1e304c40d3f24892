// Per-bucket CORS rules, stored as one JSON document per bucket (validated before they get here).
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';

/** One CORSRule, as validated by src/s3/cors.ts. */
export interface CorsRule {
  id?: string;
  allowedOrigins: string[];
  allowedMethods: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

export class BucketCorsRepo {
  private readonly getStmt: Statement<[string], { rules: string }>;
  private readonly putStmt: Statement<[string, string, number]>;
  private readonly deleteStmt: Statement<[string]>;

  constructor(db: Db, private readonly clock: () => number = Date.now) {
    this.getStmt = db.prepare('SELECT rules FROM bucket_cors WHERE bucket_id = ?');
    this.putStmt = db.prepare(
      `INSERT INTO bucket_cors (bucket_id, rules, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (bucket_id) DO UPDATE SET rules = excluded.rules, updated_at = excluded.updated_at`,
    );
    this.deleteStmt = db.prepare('DELETE FROM bucket_cors WHERE bucket_id = ?');
  }

  /** The bucket's rules, or undefined when it has no CORS configuration. */
  get(bucketId: string): CorsRule[] | undefined {
    const row = this.getStmt.get(bucketId);
    return row && (JSON.parse(row.rules) as CorsRule[]);
  }

  /** Replaces the whole configuration. */
  put(bucketId: string, rules: readonly CorsRule[]): void {
    this.putStmt.run(bucketId, JSON.stringify(rules), this.clock());
  }

  /** Returns whether there was a configuration. */
  delete(bucketId: string): boolean {
    return this.deleteStmt.run(bucketId).changes > 0;
  }
}
