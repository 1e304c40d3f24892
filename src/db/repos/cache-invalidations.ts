// The cache invalidation feed (cache_invalidations, migration 017): purges appended by the process that
// made them and read back by every other process on the data directory (src/cdn/cache-purges.ts).
import type { Statement } from '../sqlite/index.js';
import type { Db } from '../open.js';

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

export class CacheInvalidationsRepo {
  private readonly appendStmt: Statement<[number, string, string, string, string | null]>;
  private readonly afterStmt: Statement<[number, number], Invalidation>;
  private readonly lastSeqStmt: Statement<[]>;
  private readonly pruneStmt: Statement<[number]>;

  constructor(db: Db) {
    this.appendStmt = db.prepare('INSERT INTO cache_invalidations (at, writer, kind, a, b) VALUES (?, ?, ?, ?, ?)');
    this.afterStmt = db.prepare('SELECT seq, at, writer, kind, a, b FROM cache_invalidations WHERE seq > ? ORDER BY seq LIMIT ?');
    this.lastSeqStmt = db.prepare('SELECT COALESCE(MAX(seq), 0) FROM cache_invalidations').pluck();
    this.pruneStmt = db.prepare('DELETE FROM cache_invalidations WHERE at < ?');
  }

  /** Appends one purge; its seq. */
  append(i: NewInvalidation): number {
    return Number(this.appendStmt.run(i.at, i.writer, i.kind, i.a, i.b).lastInsertRowid);
  }

  /** Up to `limit` rows after `seq`, oldest first. */
  after(seq: number, limit: number): Invalidation[] {
    return this.afterStmt.all(seq, limit);
  }

  /** The seq of the newest row (0 when there is none): where a reader that starts now begins. */
  lastSeq(): number {
    return this.lastSeqStmt.get() as number;
  }

  /** Deletes the rows appended before `at`; how many. */
  pruneBefore(at: number): number {
    return this.pruneStmt.run(at).changes;
  }
}
