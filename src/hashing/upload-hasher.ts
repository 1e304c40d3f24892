// Hashes an upload while it streams: MD5 (the ETag) and SHA-256 always, plus the checksum the client named.
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { S3Error } from '../errors/s3-errors.js';
import { createChecksum, type ChecksumAlgorithm, type IncrementalDigest } from './checksums.js';

export interface UploadDigests {
  size: number;
  md5Hex: string;
  sha256Hex: string;
  /** Base64 of the requested checksum, when one was requested. */
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
}

export class UploadHasher extends Transform {
  private readonly md5: Hash = createHash('md5');
  private readonly sha256: Hash = createHash('sha256');
  private readonly checksum?: IncrementalDigest;
  private size = 0;

  constructor(
    private readonly opts: { checksumAlgorithm?: ChecksumAlgorithm; maxSize: number },
  ) {
    super({ highWaterMark: 1024 * 1024 });
    if (opts.checksumAlgorithm) this.checksum = createChecksum(opts.checksumAlgorithm);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.opts.maxSize) {
      cb(new S3Error('EntityTooLarge'));
      return;
    }
    this.md5.update(chunk);
    this.sha256.update(chunk);
    this.checksum?.update(chunk);
    cb(null, chunk);
  }

  /** Call once the stream has finished. */
  async digests(): Promise<UploadDigests> {
    const out: UploadDigests = {
      size: this.size,
      md5Hex: this.md5.digest('hex'),
      sha256Hex: this.sha256.digest('hex'),
    };
    if (this.checksum && this.opts.checksumAlgorithm) {
      out.checksum = { algorithm: this.opts.checksumAlgorithm, value: await this.checksum.digestBase64() };
    }
    return out;
  }
}
