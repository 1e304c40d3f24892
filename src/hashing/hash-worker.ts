// The hashing worker thread (run by piscina, see hash-pool.ts). It keeps one set of hash contexts per
// upload, keyed by the upload's session id, so hash state persists across the upload's batches; a
// session ends with `finish` (its digests) or `abort`, and either way leaves nothing behind. The
// batches are slots of the session's ring, a SharedArrayBuffer sent once, with the first batch:
// cloning a SharedArrayBuffer into every task made the event loop spend a sixth of its time in GC.
import { createHash, type Hash } from 'node:crypto';
import { createChecksum, type ChecksumAlgorithm, type IncrementalDigest } from './checksums.js';

/** Which digests the worker computes for a session (the rest are computed on the main thread). */
export interface WorkerHashSpec {
  md5: boolean;
  sha256: boolean;
  checksum?: ChecksumAlgorithm;
}

export interface WorkerDigests {
  md5Hex?: string;
  sha256Hex?: string;
  /** Base64, as S3 sends it. */
  checksum?: string;
}

export type HashTask =
  /**
   * The `seq`-th batch of session `id`: the first `length` bytes of slot `seq % slots` of its ring.
   * The first batch carries the spec and the ring.
   */
  | { op: 'update'; id: number; seq: number; length: number; spec?: WorkerHashSpec; ring?: SharedArrayBuffer }
  /** The digests after `seq` batches; the session is gone afterwards. */
  | { op: 'finish'; id: number; seq: number; spec: WorkerHashSpec }
  | { op: 'abort'; id: number }
  /** How many sessions are open (for tests and leak checks). */
  | { op: 'sessions' };

interface Session {
  ring?: Buffer;
  md5?: Hash;
  sha256?: Hash;
  checksum?: IncrementalDigest;
  /** The seq the next batch must carry: batches are applied strictly in order or not at all. */
  next: number;
}

const sessions = new Map<number, Session>();

/** Bytes per ring slot; the ring's size is a whole number of slots. */
export const SLOT_BYTES = 1024 * 1024;

function open(id: number, spec: WorkerHashSpec | undefined): Session {
  let s = sessions.get(id);
  if (!s) {
    if (!spec) throw new Error(`hash session ${id}: no spec`);
    s = {
      ...(spec.md5 ? { md5: createHash('md5') } : {}),
      ...(spec.sha256 ? { sha256: createHash('sha256') } : {}),
      ...(spec.checksum ? { checksum: createChecksum(spec.checksum) } : {}),
      next: 0,
    };
    sessions.set(id, s);
  }
  return s;
}

function inOrder(id: number, s: Session, seq: number): void {
  if (seq !== s.next) throw new Error(`hash session ${id}: batch ${seq} arrived when ${s.next} was due`);
}

function update(s: Session, task: Extract<HashTask, { op: 'update' }>): void {
  inOrder(task.id, s, task.seq);
  if (task.ring) s.ring = Buffer.from(task.ring);
  if (!s.ring) throw new Error(`hash session ${task.id}: no ring`);
  const start = (task.seq % (s.ring.length / SLOT_BYTES)) * SLOT_BYTES;
  const bytes = s.ring.subarray(start, start + Math.min(task.length, SLOT_BYTES));
  s.md5?.update(bytes);
  s.sha256?.update(bytes);
  s.checksum?.update(bytes);
  s.next++;
}

export default async function run(task: HashTask): Promise<WorkerDigests | number | undefined> {
  switch (task.op) {
    case 'update': {
      const s = open(task.id, task.spec);
      try {
        update(s, task);
      } catch (err) {
        // A session that went wrong is over: its upload fails, and nothing of it stays here.
        sessions.delete(task.id);
        throw err;
      }
      return undefined;
    }
    case 'finish': {
      const s = open(task.id, task.spec);
      sessions.delete(task.id);
      inOrder(task.id, s, task.seq);
      const out: WorkerDigests = {};
      if (s.md5) out.md5Hex = s.md5.digest('hex');
      if (s.sha256) out.sha256Hex = s.sha256.digest('hex');
      if (s.checksum) out.checksum = await s.checksum.digestBase64();
      return out;
    }
    case 'abort':
      sessions.delete(task.id);
      return undefined;
    case 'sessions':
      return sessions.size;
  }
}
