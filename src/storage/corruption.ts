// Where a digest mismatch goes, whoever found it (a read of the whole blob, or the scrub): a mark in
// corrupt_blobs (`s3edge scrub list`), a warning in the log and a count in the metrics. The mark stays
// until the scrub finds the blob right again or no row references it any more.
import type { Logger } from 'pino';
import type { IntegrityRepo } from '../db/repos/integrity.js';
import { formatDigest, type BlobDigest, type BlobDigestMismatch, type ReadVerification } from './blob-digest.js';

export type FoundBy = 'read' | 'scrub';

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
    try {
      this.integrity.markCorrupt({ blobId: blob.blobId, owner: blob.owner, expected, actual, foundBy, detectedAt: this.clock().getTime() });
    } catch (markErr) {
      this.log.warn({ err: markErr, blobId: blob.blobId }, 'could not mark a corrupt blob');
    }
  }

  /** Mismatches found since start, by who found them. */
  stats(): Record<FoundBy, number> {
    return { ...this.found };
  }
}
