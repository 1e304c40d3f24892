// Bucket tag sets, one JSON document per bucket (validated before they get here: src/s3/tagging.ts).
import type { SqlExecutor } from '../store/types.js';
import type { ObjectTag } from './objects.js';

const GET = 'SELECT tags FROM bucket_tagging WHERE bucket_id = ?';
const PUT = `INSERT INTO bucket_tagging (bucket_id, tags, updated_at) VALUES (?, ?, ?)
  ON CONFLICT (bucket_id) DO UPDATE SET tags = excluded.tags, updated_at = excluded.updated_at`;
const DELETE = 'DELETE FROM bucket_tagging WHERE bucket_id = ?';

export class BucketTaggingRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The bucket's tags, or undefined when it has none set. */
  async get(bucketId: string): Promise<ObjectTag[] | undefined> {
    const row = await this.db.get<{ tags: string }>(GET, [bucketId]);
    return row && (JSON.parse(row.tags) as ObjectTag[]);
  }

  /** Replaces the whole tag set. */
  async put(bucketId: string, tags: readonly ObjectTag[]): Promise<void> {
    await this.db.run(PUT, [bucketId, JSON.stringify(tags), this.clock()]);
  }

  /** Returns whether there were tags. */
  async delete(bucketId: string): Promise<boolean> {
    return (await this.db.run(DELETE, [bucketId])).changes > 0;
  }
}
