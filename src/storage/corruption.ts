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
  readCheck(blobId: string, expected: BlobDigest, owner: () => string | Promise<string>): ReadVerification {
    return { expected, onMismatch: (err) => void this.report({ blobId, owner: owner() }, err, 'read') };
  }

  /**
   * The check of a read of `range` of a blob of `size` bytes, whose row recorded `crc32c` and `etag`:
   * undefined when the range is not all of the blob (a digest needs every byte) or no digest is known.
   */
  wholeReadCheck(
    blob: { blobId: string; size: number; crc32c: number | null | undefined; etag: string },
    range: ReadRange | undefined,
    owner: () => string | Promise<string>,
  ): ReadVerification | undefined {
    const whole = !range || (range.start === 0 && range.end === blob.size - 1);
    const expected = whole ? expectedDigest(blob.crc32c, blob.etag) : undefined;
    return expected && this.readCheck(blob.blobId, expected, owner);
  }

  /**
   * Never throws: it runs inside a read that is failing anyway. Counted at once; logged and marked once
   * the owner is named (a lookup for a read); settles when marked.
   */
  report(blob: { blobId: string; owner: string | Promise<string> }, err: BlobDigestMismatch, foundBy: FoundBy): Promise<void> {
    this.found[foundBy]++;
    const expected = formatDigest(err.expected);
    const actual = formatDigest(err.actual);
    return this.mark(blob.blobId, blob.owner, (owner) => {
      this.log.warn({ owner, blobId: blob.blobId, expected, actual, foundBy }, 'stored bytes do not match their digest');
      return { expected, actual, foundBy };
    });
  }

  /** A blob a row still references that the store no longer has: marked with `actual` 'missing'. */
  reportMissing(blob: { blobId: string; owner: string; expected: BlobDigest }, foundBy: FoundBy): Promise<void> {
    this.found[foundBy]++;
    return this.mark(blob.blobId, blob.owner, (owner) => {
      this.log.warn({ owner, blobId: blob.blobId, foundBy }, 'a stored blob is missing');
      return { expected: formatDigest(blob.expected), actual: MISSING, foundBy };
    });
  }

  /** Never rejects: a mark that cannot be written is logged. */
  private async mark(blobId: string, named: string | Promise<string>, found: (owner: string) => Omit<CorruptBlob, 'detectedAt' | 'blobId' | 'owner'>): Promise<void> {
    try {
      const owner = await named;
      await this.integrity.markCorrupt({ blobId, owner, ...found(owner), detectedAt: this.clock().getTime() });
    } catch (markErr) {
      this.log.warn({ err: markErr, blobId }, 'could not mark a corrupt blob');
    }
  }

  /** Mismatches and missing blobs found since start, by who found them. */
  stats(): Record<FoundBy, number> {
    return { ...this.found };
  }
}
