// Committing staged bytes together with the metadata that references them: the one sequence PutObject,
// CopyObject, UploadPart(Copy) and API uploads share. Either both land or nothing of the blob stays.
import type { Logger } from 'pino';
import type { StagedBlob, StorageBackend } from './backend.js';
import type { BlobLeases } from './blob-leases.js';

export interface CommitContext {
  storage: StorageBackend;
  leases: BlobLeases;
  log: Pick<Logger, 'warn'>;
}

/**
 * Makes `staged` readable, then runs `commitMetadata` (which writes the row that references it); if
 * either fails, the blob is aborted or removed and the error rethrown. The blob is leased from before
 * its commit until its row is in: the blob collector (blob-gc.ts) never takes a leased blob, and an
 * upstream blob completed from a multipart upload is listed with its upload's start time, which may
 * be older than any grace period.
 */
export async function commitStaged<T>(ctx: CommitContext, staged: StagedBlob, commitMetadata: () => T | Promise<T>): Promise<T> {
  const lease = ctx.leases.acquire([staged.blobId]);
  let committed = false;
  try {
    await staged.commit();
    committed = true;
    return await commitMetadata();
  } catch (err) {
    if (committed && !staged.inline) await ctx.storage.remove(staged.blobId).catch((e: unknown) => ctx.log.warn({ err: e, blobId: staged.blobId }, 'staged blob not removed'));
    else await staged.abort();
    throw err;
  } finally {
    lease.release();
  }
}
