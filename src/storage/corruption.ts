// Where a digest mismatch goes, whoever found it (a read of the whole blob, or the scrub): a mark in
// corrupt_blobs (`s3edge scrub list`), a warning in the log and a count in the metrics. The mark stays
// until the scrub finds the blob right again or no row references it any more.
import type { Logger } from 'pino';
import type { CorruptBlob, IntegrityRepo } from '../db/repos/integrity.js';
import { expectedDigest, formatDigest, type BlobDigest, type BlobDigestMismatch, type ReadVerification } from './blob-digest.js';
import type { ReadRange } from './backend.js';

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

  /**
   * The check of a read of `range` of a blob of `size` bytes, whose row recorded `crc32c` and `etag`:
   * undefined when the range is not all of the blob (a digest needs every byte) or no digest is known.
   */
  wholeReadCheck(blob: { blobId: string; size: number; crc32c: number | null | undefined; etag: string }, range: ReadRange | undefined, owner: () => string): ReadVerification | undefined {
    const whole = !range || (range.start === 0 && range.end === blob.size - 1);
    const expected = whole ? expectedDigest(blob.crc32c, blob.etag) : undefined;
    return expected && this.readCheck(blob.blobId, expected, owner);
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
