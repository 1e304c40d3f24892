// Incremental digests for every algorithm S3 clients name. All native except CRC64NVME.
import { createHash, type Hash } from 'node:crypto';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { crc32c } from '@node-rs/crc32';
import type { Crc64Nvme } from '@aws-sdk/crc64-nvme';
import { S3Error } from '../errors/s3-errors.js';

export const CHECKSUM_ALGORITHMS = ['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

/** The request/response header that carries a checksum: x-amz-checksum-crc32 etc. */
export function checksumHeader(algo: ChecksumAlgorithm): string {
  return `x-amz-checksum-${algo.toLowerCase()}`;
}

export function parseChecksumAlgorithm(value: string): ChecksumAlgorithm {
  const upper = value.toUpperCase();
  if ((CHECKSUM_ALGORITHMS as readonly string[]).includes(upper)) return upper as ChecksumAlgorithm;
  throw new S3Error('InvalidRequest', 'Value for x-amz-checksum-algorithm header is invalid.');
}

/** Base64 digest length in bytes, to reject malformed checksum values up front. */
const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = { CRC32: 4, CRC32C: 4, CRC64NVME: 8, SHA1: 20, SHA256: 32 };

export function isValidChecksumValue(algo: ChecksumAlgorithm, b64: string): boolean {
  return /^[A-Za-z0-9+/]*={0,2}$/.test(b64) && Buffer.from(b64, 'base64').length === DIGEST_BYTES[algo];
}

export interface IncrementalDigest {
  update(chunk: Buffer): void;
  /** Base64 of the big-endian digest, as S3 sends it. Async because the CRC64NVME library is. */
  digestBase64(): Promise<string>;
}

class CryptoDigest implements IncrementalDigest {
  private readonly hash: Hash;
  constructor(algo: 'sha1' | 'sha256') {
    this.hash = createHash(algo);
  }
  update(chunk: Buffer): void {
    this.hash.update(chunk);
  }
  async digestBase64(): Promise<string> {
    return this.hash.digest('base64');
  }
}

class Crc32Digest implements IncrementalDigest {
  private value = 0;
  constructor(private readonly castagnoli: boolean) {}
  update(chunk: Buffer): void {
    this.value = this.castagnoli ? crc32c(chunk, this.value) : zlib.crc32(chunk, this.value);
  }
  async digestBase64(): Promise<string> {
    const out = Buffer.allocUnsafe(4);
    out.writeUInt32BE(this.value >>> 0);
    return out.toString('base64');
  }
}

/** The CRC64NVME implementation (with the AWS SDK modules under it) loads with its first use. */
let crc64: typeof Crc64Nvme | undefined;

class Crc64NvmeDigest implements IncrementalDigest {
  private readonly crc = new (crc64 ??= (createRequire(import.meta.url)('@aws-sdk/crc64-nvme') as { Crc64Nvme: typeof Crc64Nvme }).Crc64Nvme)();
  update(chunk: Buffer): void {
    this.crc.update(chunk);
  }
  async digestBase64(): Promise<string> {
    return Buffer.from(await this.crc.digest()).toString('base64');
  }
}

export function createChecksum(algo: ChecksumAlgorithm): IncrementalDigest {
  switch (algo) {
    case 'CRC32':
      return new Crc32Digest(false);
    case 'CRC32C':
      return new Crc32Digest(true);
    case 'CRC64NVME':
      return new Crc64NvmeDigest();
    case 'SHA1':
      return new CryptoDigest('sha1');
    case 'SHA256':
      return new CryptoDigest('sha256');
  }
}
