// The cache invalidation feed (cache_invalidations, migration 017): purges appended by the process that
// made them and read back by every other process on the data directory (src/cdn/cache-purges.ts).
import type { SqlExecutor } from '../store/types.js';

export type InvalidationKind = 'asset' | 'object' | 'prefix' | 'owner' | 'hostname';

export interface NewInvalidation {
  /** Unix milliseconds. */
  at: number;
  /** The instance id of the appending process. */
  writer: string;
  kind: InvalidationKind;
  a: string;
  b: string | null;
}

export interface Invalidation extends NewInvalidation {
  seq: number;
}

const APPEND = 'INSERT INTO cache_invalidations (at, writer, kind, a, b) VALUES (?, ?, ?, ?, ?) RETURNING seq';
const AFTER = 'SELECT seq, at, writer, kind, a, b FROM cache_invalidations WHERE seq > ? ORDER BY seq LIMIT ?';
const LAST_SEQ = 'SELECT COALESCE(MAX(seq), 0) AS seq FROM cache_invalidations';
const PRUNE = 'DELETE FROM cache_invalidations WHERE at < ?';

export class CacheInvalidationsRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Appends one purge; its seq. */
  async append(i: NewInvalidation): Promise<number> {
    const r = await this.db.get<{ seq: number }>(APPEND, [i.at, i.writer, i.kind, i.a, i.b]);
    return Number(r?.seq);
  }

  /** Up to `limit` rows after `seq`, oldest first. */
  async after(seq: number, limit: number): Promise<Invalidation[]> {
    return this.db.all<Invalidation>(AFTER, [seq, limit]);
  }

  /** The seq of the newest row (0 when there is none): where a reader that starts now begins. */
  async lastSeq(): Promise<number> {
    return Number((await this.db.get<{ seq: number }>(LAST_SEQ))?.seq ?? 0);
  }

  /** Deletes the rows appended before `at`; how many. */
  async pruneBefore(at: number): Promise<number> {
    return (await this.db.run(PRUNE, [at])).changes;
  }
}
