// The digests of a body already in memory (a small upload): one update per algorithm instead of a
// Transform stage per chunk.
import { createHash } from 'node:crypto';
import { createChecksum, type ChecksumAlgorithm } from './checksums.js';
import type { UploadDigests } from './upload-hasher.js';

export async function digestBuffer(body: Buffer, checksumAlgorithm?: ChecksumAlgorithm): Promise<UploadDigests> {
  const out: UploadDigests = {
    size: body.length,
    md5Hex: createHash('md5').update(body).digest('hex'),
    sha256Hex: createHash('sha256').update(body).digest('hex'),
  };
  if (checksumAlgorithm) {
    const checksum = createChecksum(checksumAlgorithm);
    checksum.update(body);
    out.checksum = { algorithm: checksumAlgorithm, value: await checksum.digestBase64() };
  }
  return out;
}
