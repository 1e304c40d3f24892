// How a process of the data directory writes meta.db (SQLite): commits only write the WAL, requests that
// must be durable await one shared flush (wal-sync.ts), and checkpoints run in a worker thread
// (checkpointer.ts) of the one process that runs the jobs, for every connection: no fsync on the event
// loop, and the other processes never checkpoint.
import type { Logger } from 'pino';
import type { Db } from './open.js';
import { Checkpointer, CHECKPOINTS_AFTER_START_MS } from './checkpointer.js';
import { WalSync } from './wal-sync.js';

/**
 * Sets `db` up to write so and returns its Durability; the flush, then the checkpointer (a last
 * checkpoint), close through the one closer pushed on `closers`.
 */
export function walMode(
  db: Db,
  dbFile: string,
  opts: { log: Logger; checkpoints: boolean; closers: { push(close: () => Promise<void>): void } },
): WalSync {
  db.pragma('synchronous = NORMAL');
  const walSync = new WalSync(`${dbFile}-wal`);
  let checkpointer: Checkpointer | undefined;
  opts.closers.push(async () => {
    await walSync.close();
    await checkpointer?.close();
  });
  if (opts.checkpoints) checkpointer = new Checkpointer(db, dbFile, opts.log, undefined, CHECKPOINTS_AFTER_START_MS);
  else db.pragma('wal_autocheckpoint = 0');
  return walSync;
}
