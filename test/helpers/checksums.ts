// Independent, table-driven implementations of the S3 checksum algorithms, so the e2e suite never
// trusts the server's own code (src/hashing) to judge the server. Check values ("123456789"):
// CRC32 cbf43926, CRC32C e3069283, CRC64NVME ae8b14860a799888 (asserted in checksum-selfcheck.test.ts).
import { createHash } from 'node:crypto';

export type ChecksumAlgorithm = 'CRC32' | 'CRC32C' | 'CRC64NVME' | 'SHA1' | 'SHA256';
export const CHECKSUM_ALGORITHMS: readonly ChecksumAlgorithm[] = ['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'];

function crc32Table(poly: number): Uint32Array {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ poly : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

const CRC32_TABLE = crc32Table(0xedb88320);
const CRC32C_TABLE = crc32Table(0x82f63b78);

function crc32With(table: Uint32Array, data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (table[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

export function crc32(data: Uint8Array): number {
  return crc32With(CRC32_TABLE, data);
}

export function crc32c(data: Uint8Array): number {
  return crc32With(CRC32C_TABLE, data);
}

// CRC-64/NVME: reflected polynomial 0x9a6c9329ac4bc9b5, init and xorout all ones.
// Kept as two 32-bit halves so it is fast enough for a few MiB without BigInt per byte.
const CRC64_LO = new Uint32Array(256);
const CRC64_HI = new Uint32Array(256);
{
  const polyLo = 0xac4bc9b5;
  const polyHi = 0x9a6c9329;
  for (let n = 0; n < 256; n++) {
    let lo = n;
    let hi = 0;
    for (let k = 0; k < 8; k++) {
      const lsb = lo & 1;
      lo = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0;
      hi = hi >>> 1;
      if (lsb) {
        lo = (lo ^ polyLo) >>> 0;
        hi = (hi ^ polyHi) >>> 0;
      }
    }
    CRC64_LO[n] = lo;
    CRC64_HI[n] = hi;
  }
}

export function crc64nvme(data: Uint8Array): Buffer {
  let lo = 0xffffffff;
  let hi = 0xffffffff;
  for (const byte of data) {
    const idx = (lo ^ byte) & 0xff;
    // (crc >>> 8) ^ table[idx]
    const shiftedLo = ((lo >>> 8) | ((hi & 0xff) << 24)) >>> 0;
    const shiftedHi = hi >>> 8;
    lo = (shiftedLo ^ (CRC64_LO[idx] as number)) >>> 0;
    hi = (shiftedHi ^ (CRC64_HI[idx] as number)) >>> 0;
  }
  const out = Buffer.alloc(8);
  out.writeUInt32BE((hi ^ 0xffffffff) >>> 0, 0);
  out.writeUInt32BE((lo ^ 0xffffffff) >>> 0, 4);
  return out;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

/** The raw digest bytes of `algorithm` over `data` (big-endian for the CRCs, as S3 sends them). */
export function checksumBytes(algorithm: ChecksumAlgorithm, data: Uint8Array): Buffer {
  switch (algorithm) {
    case 'CRC32':
      return u32(crc32(data));
    case 'CRC32C':
      return u32(crc32c(data));
    case 'CRC64NVME':
      return crc64nvme(data);
    case 'SHA1':
      return createHash('sha1').update(data).digest();
    case 'SHA256':
      return createHash('sha256').update(data).digest();
  }
}

/** The value S3 puts in `x-amz-checksum-<algorithm>`: base64 of the digest bytes. */
export function checksumBase64(algorithm: ChecksumAlgorithm, data: Uint8Array): string {
  return checksumBytes(algorithm, data).toString('base64');
}

export function checksumHeaderName(algorithm: ChecksumAlgorithm): string {
  return `x-amz-checksum-${algorithm.toLowerCase()}`;
}

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export function md5Hex(data: Uint8Array | string): string {
  return createHash('md5').update(data).digest('hex');
}

export function md5Base64(data: Uint8Array | string): string {
  return createHash('md5').update(data).digest('base64');
}
