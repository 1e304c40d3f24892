// Staging a small body in memory: the bytes go into the metadata database with the object's row
// (inline_blobs), so a small PUT costs no file, no file fsync and no directory fsync.
import type { Readable } from 'node:stream';
import { S3Error } from '../errors/s3-errors.js';
import type { StagedBlob } from './backend.js';
import { Crc32c } from './blob-digest.js';
import { newInlineBlobId } from './blob-id.js';

/**
 * Reads all of `body` (whose length the caller knows to be at most `limit`) into an inline staged blob.
 * A body longer than `limit` contradicts its declared length: IncompleteBody, nothing kept.
 */
export async function stageInline(body: Readable, limit: number, signal?: AbortSignal): Promise<StagedBlob> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      signal?.throwIfAborted();
      const buf = chunk as Buffer;
      size += buf.length;
      if (size > limit) throw new S3Error('IncompleteBody', 'The request body is longer than its declared length.');
      chunks.push(buf);
    }
    signal?.throwIfAborted();
  } catch (err) {
    body.destroy();
    throw err;
  }
  return inlineStaged(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
}

/** A body already in memory, staged under a new inline blob id. */
export function inlineStaged(data: Buffer): StagedBlob {
  const crc = new Crc32c();
  crc.update(data);
  return {
    blobId: newInlineBlobId(),
    size: data.length,
    crc32c: crc.value,
    inline: data,
    commit: async () => undefined,
    abort: async () => undefined,
  };
}
