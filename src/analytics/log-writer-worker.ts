// Runs in a worker thread (analytics/log-writer.ts): writes the request log's batches with a SQLite
// connection of its own, so the inserts (two rows a CDN request: the log row and its download usage
// event) and any wait for SQLite's write lock (another worker's flush, an admin command, a backup
// holding it) cost this thread, never the event loop that serves requests.
import { parentPort, workerData } from 'node:worker_threads';
import { CdnLogRepo } from '../db/repos/cdn-log.js';
import { openSqlite } from '../db/sqlite/index.js';
import { SqliteStore } from '../db/store/sqlite-store.js';
import { decodeRecordBatch } from './record-batch.js';
import { WAL_CHECKPOINT_FALLBACK_PAGES } from '../db/checkpointer.js';
import { ownThreadId, type ThreadOnline } from '../thread-policy.js';

interface Options {
  file: string;
}

/** A batch to write: `records` is encodeRecordBatch's string (one string crosses the thread boundary cheaper than a clone of many objects). */
export interface WriteRequest {
  id: number;
  records: string;
}

export interface WriteReply {
  id: number;
  error?: { message: string; code?: string };
}

const { file } = workerData as Options;
const db = openSqlite(file);
db.pragma('busy_timeout = 5000');
db.pragma('foreign_keys = ON');
// Durable with the next WAL sync of the server's connection, like every other commit of a serving process.
db.pragma('synchronous = NORMAL');
// Checkpoints are the checkpointer thread's; this connection checkpoints only a WAL the checkpointer left
// to grow (it runs on idle CPU time: a machine that has none for long, db/checkpointer.ts).
db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_FALLBACK_PAGES}`);
// A multi-row INSERT keeps a statement journal (the pages it changed, in case it must undo itself):
// in memory, not in a temporary file (a 4 KiB write per page: ~10% of an insert's CPU here).
db.pragma('temp_store = MEMORY');
const repo = new CdnLogRepo(new SqliteStore(db));
parentPort?.postMessage({ threadId: ownThreadId() ?? 0 } satisfies ThreadOnline);

/** The batch being written: one at a time, in order; the close waits for it. */
let last: Promise<void> = Promise.resolve();

parentPort?.on('message', (msg: WriteRequest | 'close') => {
  if (msg === 'close') {
    void last.then(() => {
      db.close();
      parentPort?.close();
    });
    return;
  }
  last = last.then(() => write(msg));
});

function write(msg: WriteRequest): Promise<void> {
  return repo.insertBatch(decodeRecordBatch(msg.records)).then(
    () => parentPort?.postMessage({ id: msg.id } satisfies WriteReply),
    (err: unknown) => {
      const e = err as { message?: unknown; code?: unknown };
      parentPort?.postMessage({
        id: msg.id,
        error: { message: String(e.message ?? err), ...(typeof e.code === 'string' ? { code: e.code } : {}) },
      } satisfies WriteReply);
    },
  );
}
