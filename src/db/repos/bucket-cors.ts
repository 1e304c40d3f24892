// Per-bucket CORS rules, stored as one JSON document per bucket (validated before they get here).
import type { SqlExecutor } from '../store/types.js';

/** One CORSRule, as validated by src/s3/cors.ts. */
export interface CorsRule {
  id?: string;
  allowedOrigins: string[];
  allowedMethods: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

const GET = 'SELECT rules FROM bucket_cors WHERE bucket_id = ?';
const PUT = `INSERT INTO bucket_cors (bucket_id, rules, updated_at) VALUES (?, ?, ?)
  ON CONFLICT (bucket_id) DO UPDATE SET rules = excluded.rules, updated_at = excluded.updated_at`;
const DELETE = 'DELETE FROM bucket_cors WHERE bucket_id = ?';

export class BucketCorsRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The bucket's rules, or undefined when it has no CORS configuration. */
  async get(bucketId: string): Promise<CorsRule[] | undefined> {
    const row = await this.db.get<{ rules: string }>(GET, [bucketId]);
    return row && (JSON.parse(row.rules) as CorsRule[]);
  }

  /** Replaces the whole configuration. */
  async put(bucketId: string, rules: readonly CorsRule[]): Promise<void> {
    await this.db.run(PUT, [bucketId, JSON.stringify(rules), this.clock()]);
  }

  /** Returns whether there was a configuration. */
  async delete(bucketId: string): Promise<boolean> {
    return (await this.db.run(DELETE, [bucketId])).changes > 0;
  }
}
