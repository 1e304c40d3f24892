import type { Readable } from 'node:stream';
import type { ReadVerification } from './blob-digest.js';
import type { ReadRange } from '../http/range.js';

/**
 * Bytes written durably under a fresh blob id, not yet committed. Nothing refers to the id before the
 * metadata commit, so a backend may already serve it (the upstream's single PutObject) or not (disk's
 * tmp/, an upstream multipart upload); only after commit() must it be readable.
 */
export interface StagedBlob {
  readonly blobId: string;
  readonly size: number;
  /** CRC32C of the bytes staged, recorded with the row that references the blob: reads are checked against it. */
  readonly crc32c: number;
  /**
   * Set for a small body held in memory under an inline blob id: it is stored with the object's row,
   * in the same metadata transaction, instead of in the backend (commit and abort do nothing).
   */
  readonly inline?: Buffer;
  /** Makes the bytes readable at blobId (still unreferenced until the metadata commit). */
  commit(): Promise<void>;
  /** Discards the bytes; safe to call more than once and after a failed commit. */
  abort(): Promise<void>;
}

/** A byte range of a blob (HTTP's, inclusive: src/http/range.ts). */
export type { ReadRange };

export interface ReadOptions {
  range?: ReadRange;
  signal?: AbortSignal;
  verify?: ReadVerification;
}

/** A committed blob as the backend lists it. */
export interface StageOptions {
  signal?: AbortSignal;
  /**
   * The body is at most this long (a declared length): the backend sizes its buffers to it, and a
   * longer body fails with IncompleteBody.
   */
  sizeHint?: number;
}

export interface StoredBlob {
  blobId: string;
  size: number;
  /** Unix milliseconds: the file's mtime, or the upstream object's LastModified. */
  modifiedAt: number;
}

/**
 * Where object bytes live. Blobs are named by internal ids, never by object keys; what a key means is
 * the metadata database's business. Implementations throw S3Error for conditions a client can cause.
 */
export interface StorageBackend {
  /** Makes the backend ready; upstream: aborts multipart uploads an earlier process left for a day. */
  init(): Promise<void>;
  /**
   * Present when this node's processes are the only writers of the backend (the local disk): what it
   * holds from before `before` (the start of the process that runs the jobs, older than every worker)
   * was left by an earlier process. Removes the staged files (half-written uploads) from before it and
   * returns how many; the blob collector's first pass then also takes unreferenced blobs from before it
   * without waiting out the grace (blob-gc.ts). Absent (an upstream store other gateways may share): the
   * grace alone decides.
   */
  sweepStaged?(before: number): Promise<number>;
  /** Streams body into a new staged blob. Rejects (leaving nothing behind) if body errors or signal aborts. */
  stage(body: Readable, opts?: StageOptions): Promise<StagedBlob>;
  /**
   * Bytes of memory stage() holds at most for a body of `sizeHint` bytes (undefined: unknown) without
   * asking the upload budget: what the caller reserves for it (src/storage/upload-buffers.ts).
   */
  stageBufferBytes(sizeHint?: number): number;
  /**
   * Opens a committed blob for reading; rejects with code 'ENOENT' if it is gone. With `verify` (only for
   * a read of the whole blob), the bytes are checked as they pass and the stream fails instead of
   * delivering its last bytes when they do not match (blob-digest.ts).
   */
  read(blobId: string, opts?: ReadOptions): Promise<Readable>;
  /** Deletes a committed blob; a missing blob is not an error. */
  remove(blobId: string): Promise<void>;
  /** Every committed blob, with its size and when it was written (for the blob collector). */
  list(): AsyncIterable<StoredBlob>;
  /**
   * Resolves when the backend can take writes now (GET /readyz): the disk's folders are there and
   * writable, the upstream bucket answers. One try, no retries: the caller probes again later.
   */
  probe(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}
