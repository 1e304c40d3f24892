// Where a digest mismatch goes, whoever found it (a read of the whole blob, or the scrub): a mark in
// corrupt_blobs (`s3edge scrub list`), a warning in the log and a count in the metrics. The mark stays
// until the scrub finds the blob right again or no row references it any more.
import type { Logger } from 'pino';
import type { CorruptBlob, IntegrityRepo } from '../db/repos/integrity.js';
import { formatDigest, type BlobDigest, type BlobDigestMismatch, type ReadVerification } from './blob-digest.js';

export type FoundBy = 'read' | 'scrub';

/** corrupt_blobs.actual of a blob that is gone. */
const MISSING = 'missing';

export class CorruptionReporter {
  private readonly found: Record<FoundBy, number> = { read: 0, scrub: 0 };

  constructor(
    private readonly integrity: IntegrityRepo,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly clock: () => Date,
  ) {}

  /** The check of a read of all of `blobId`: a mismatch is reported as found by a read of `owner` (named only then). */
  readCheck(blobId: string, expected: BlobDigest, owner: () => string): ReadVerification {
    return { expected, onMismatch: (err) => this.report({ blobId, owner: owner() }, err, 'read') };
  }

  /** Never throws: it runs inside a read that is failing anyway. */
  report(blob: { blobId: string; owner: string }, err: BlobDigestMismatch, foundBy: FoundBy): void {
    this.found[foundBy]++;
    const expected = formatDigest(err.expected);
    const actual = formatDigest(err.actual);
    this.log.warn({ owner: blob.owner, blobId: blob.blobId, expected, actual, foundBy }, 'stored bytes do not match their digest');
    this.mark({ blobId: blob.blobId, owner: blob.owner, expected, actual, foundBy });
  }

  /** A blob a row still references that the store no longer has: marked with `actual` 'missing'. */
  reportMissing(blob: { blobId: string; owner: string; expected: BlobDigest }, foundBy: FoundBy): void {
    this.found[foundBy]++;
    this.log.warn({ owner: blob.owner, blobId: blob.blobId, foundBy }, 'a stored blob is missing');
    this.mark({ blobId: blob.blobId, owner: blob.owner, expected: formatDigest(blob.expected), actual: MISSING, foundBy });
  }

  private mark(c: Omit<CorruptBlob, 'detectedAt'>): void {
    try {
      this.integrity.markCorrupt({ ...c, detectedAt: this.clock().getTime() });
    } catch (markErr) {
      this.log.warn({ err: markErr, blobId: c.blobId }, 'could not mark a corrupt blob');
    }
  }

  /** Mismatches and missing blobs found since start, by who found them. */
  stats(): Record<FoundBy, number> {
    return { ...this.found };
  }
}
