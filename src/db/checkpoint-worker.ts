// Runs in a worker thread (db/checkpointer.ts): copies committed WAL frames back into the database
// with its own connection, so the fsyncs of a checkpoint never stall the event loop that serves
// requests. PASSIVE never waits for, nor blocks, the server's readers and writer.
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './sqlite/index.js';
import { ownThreadId, type ThreadOnline } from '../thread-policy.js';

interface Options {
  file: string;
  intervalMs: number;
}

const { file, intervalMs } = workerData as Options;
const db = openSqlite(file);
db.pragma('busy_timeout = 5000');
// Checkpoints sync the WAL before copying and the database after, as synchronous = FULL would.
db.pragma('synchronous = NORMAL');

const checkpoint = (): void => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    parentPort?.postMessage({ error: (err as Error).message });
  }
};
const timer = setInterval(checkpoint, intervalMs);
// Its OS id, so the server puts it under SCHED_IDLE (checkpointer.ts).
parentPort?.postMessage({ threadId: ownThreadId() ?? 0 } satisfies ThreadOnline);

parentPort?.on('message', (msg: unknown) => {
  if (msg !== 'close') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort?.close();
});
