// What an upload will hold in memory, and its reservation in the upload budget (ctx.uploadBudget,
// src/storage/upload-budget.ts), taken before a byte of the body is read: S3 PutObject and UploadPart,
// CopyObject and UploadPartCopy, the management API's asset upload.
import type { IncomingMessage } from 'node:http';
import { RING_SLOTS, SLOT_BYTES, type HashPool } from '../hashing/hash-pool.js';
import type { StorageBackend } from './backend.js';
import type { Reservation, UploadBudget } from './upload-budget.js';

/** The hashing worker's ring of one upload (hash-pool.ts). */
export const RING_BYTES = RING_SLOTS * SLOT_BYTES;

/**
 * What sits in the stream pipes between the socket and the stage at most: the hasher's two sides,
 * 1 MiB each (upload-hasher.ts), when the stage is slower than the client (an upstream part upload).
 */
export const PIPE_BYTES = 2 * 1024 * 1024;

/** What sizing an upload's buffers asks: whether the hashing thread takes it, what the backend stages. */
export interface UploadBufferSizing {
  hashPool?: Pick<HashPool, 'wants'>;
  storage: Pick<StorageBackend, 'stageBufferBytes'>;
}

/** Where an upload's buffers are reserved (a serving process's context has it). */
export interface UploadBufferBudget {
  uploadBudget: Pick<UploadBudget, 'tryReserve' | 'reserve'>;
}

/**
 * Bytes a body of `length` (undefined: unknown) holds while it is received: read whole for an inline
 * object (`inline`), else the hashing ring (if the worker hashes it), the pipes, and the backend's
 * staging buffer (a disk write batch, an upstream part buffer) or, for a chunk-framed inline body, the
 * body itself.
 */
export function uploadBufferBytes(ctx: UploadBufferSizing, length: number | undefined, opts: { inline?: 'whole' | 'streamed' } = {}): number {
  if (opts.inline === 'whole') return length ?? 0;
  const ring = ctx.hashPool?.wants(length) ? RING_BYTES : 0;
  const pipes = Math.min(length ?? PIPE_BYTES, PIPE_BYTES);
  const stage = opts.inline === 'streamed' ? (length ?? 0) : ctx.storage.stageBufferBytes(length);
  return ring + pipes + stage;
}

/**
 * Reserves `bytes` of the upload budget, waiting in line when it is spent. While it waits the request
 * is paused: its body stays in the socket, whose buffers fill, and TCP flow control holds the client
 * back; whoever reads the body next resumes it (a pipe does; readSmallBody does). A client that is
 * told "100 Continue" only after the wait sends nothing meanwhile. Rejects with UploadBufferFull
 * (503 SlowDown) at the budget's deadline, or with the signal's reason when the client goes.
 */
export function reserveUploadBuffers(
  ctx: UploadBufferBudget,
  bytes: number,
  opts: { req?: IncomingMessage; signal?: AbortSignal } = {},
): Promise<Reservation> {
  const now = ctx.uploadBudget.tryReserve(bytes);
  if (now) return Promise.resolve(now);
  opts.req?.pause();
  return ctx.uploadBudget.reserve(bytes, opts.signal ? { signal: opts.signal } : {});
}
