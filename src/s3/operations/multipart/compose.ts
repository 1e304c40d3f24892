// What a completed multipart object is called and summed as, from its parts alone: the "-N" ETag,
// COMPOSITE checksums (a checksum of the part checksums) and FULL_OBJECT CRCs (the parts' CRCs
// combined into the CRC of the whole object). Pure and synchronous: it runs inside the completion
// transaction.
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { crc32c } from '@node-rs/crc32';
import type { ChecksumAlgorithm } from '../../../hashing/checksums.js';
import { crcCombineAll, isCombinableCrc } from '../../../hashing/crc-combine.js';
import type { MultipartChecksumType } from '../../../db/repos/multipart.js';

/** `"abc"`, `abc`, `W/"abc"` -> `abc`. */
export function bareEtag(etag: string): string {
  return etag.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
}

/** `"<md5 of the concatenated binary part MD5s>-<N>"`, as S3 names a multipart object. */
export function multipartEtag(partEtags: readonly string[]): string {
  const md5 = createHash('md5');
  for (const etag of partEtags) md5.update(Buffer.from(bareEtag(etag), 'hex'));
  return `"${md5.digest('hex')}-${partEtags.length}"`;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/** The digest bytes of `data`; for the algorithms a COMPOSITE checksum may use. */
function digest(algo: ChecksumAlgorithm, data: Buffer): Buffer {
  switch (algo) {
    case 'CRC32':
      return u32(zlib.crc32(data));
    case 'CRC32C':
      return u32(crc32c(data));
    case 'SHA1':
      return createHash('sha1').update(data).digest();
    case 'SHA256':
      return createHash('sha256').update(data).digest();
    case 'CRC64NVME':
      throw new Error('CRC64NVME is FULL_OBJECT only');
  }
}

/** COMPOSITE: base64 of the checksum of the concatenated binary part checksums, then `-N`. */
export function compositeChecksum(algo: ChecksumAlgorithm, partChecksums: readonly string[]): string {
  const joined = Buffer.concat(partChecksums.map((c) => Buffer.from(c, 'base64')));
  return `${digest(algo, joined).toString('base64')}-${partChecksums.length}`;
}

/** FULL_OBJECT: the CRC of the whole object, combined from the part CRCs and sizes. */
export function fullObjectChecksum(algo: ChecksumAlgorithm, parts: ReadonlyArray<{ checksum: string; size: number }>): string {
  if (!isCombinableCrc(algo)) throw new Error(`${algo} cannot be a FULL_OBJECT checksum`);
  return crcCombineAll(algo, parts.map((p) => ({ crc: Buffer.from(p.checksum, 'base64'), size: p.size }))).toString('base64');
}

/** The object's checksum of the given type from its parts' checksums. */
export function objectChecksum(
  algo: ChecksumAlgorithm,
  type: MultipartChecksumType,
  parts: ReadonlyArray<{ checksum: string; size: number }>,
): string {
  return type === 'COMPOSITE' ? compositeChecksum(algo, parts.map((p) => p.checksum)) : fullObjectChecksum(algo, parts);
}
