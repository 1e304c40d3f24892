// CRC of a concatenation from the CRCs of its pieces, without the bytes: crc(A || B) from crc(A), crc(B)
// and len(B). This is zlib's crc32_combine (1.2.12+): in GF(2)[x] modulo the CRC polynomial,
// crc(A || B) = crc(A) * x^(8 * len(B)) + crc(B), with the powers x^(2^k) precomputed. It works for any
// reflected CRC whose init and final XOR are equal (all ones here), so it serves CRC32, CRC32C and
// CRC64NVME alike. Used to give FULL_OBJECT multipart uploads the CRC of the whole object.

export type CombinableCrc = 'CRC32' | 'CRC32C' | 'CRC64NVME';

interface CrcSpec {
  width: bigint;
  /** Reflected polynomial, x^width implied. */
  poly: bigint;
}

const SPECS: Record<CombinableCrc, CrcSpec> = {
  CRC32: { width: 32n, poly: 0xedb88320n },
  CRC32C: { width: 32n, poly: 0x82f63b78n },
  CRC64NVME: { width: 64n, poly: 0x9a6c9329ac4bc9b5n },
};

/** Byte lengths are below 2^53; 8 * length below 2^56: 64 powers x^(2^k) cover every exponent. */
const TABLE_SIZE = 64;

class Combiner {
  private readonly top: bigint;
  /** x2n[k] = x^(2^k) mod p, in the reflected bit order the CRC uses. */
  private readonly x2n: bigint[] = [];
  /** x^(8 * len) mod p by len: multipart uploads repeat one part size, so this is nearly always a hit. */
  private readonly byLength = new Map<number, bigint>();

  constructor(private readonly spec: CrcSpec) {
    this.top = 1n << (spec.width - 1n);
    let p = this.top >> 1n; // x^1
    for (let k = 0; k < TABLE_SIZE; k++) {
      this.x2n.push(p);
      p = this.multiply(p, p);
    }
  }

  /** a * b mod p, both reflected (the top bit is the x^0 coefficient). */
  private multiply(a: bigint, b: bigint): bigint {
    let product = 0n;
    for (let m = this.top; m > 0n && a !== 0n; m >>= 1n) {
      if (a & m) {
        product ^= b;
        a ^= m;
      }
      b = b & 1n ? (b >> 1n) ^ this.spec.poly : b >> 1n;
    }
    return product;
  }

  /** x^(8 * bytes) mod p. */
  private shift(bytes: number): bigint {
    const hit = this.byLength.get(bytes);
    if (hit !== undefined) return hit;
    let p = this.top; // x^0
    let k = 3; // 8 * bytes = bytes * 2^3
    for (let n = BigInt(bytes); n > 0n; n >>= 1n, k++) {
      if (n & 1n) p = this.multiply(this.x2n[k] as bigint, p);
    }
    if (this.byLength.size < 64) this.byLength.set(bytes, p);
    return p;
  }

  combine(crc1: bigint, crc2: bigint, len2: number): bigint {
    if (len2 === 0) return crc1;
    return this.multiply(this.shift(len2), crc1) ^ crc2;
  }
}

const combiners = new Map<CombinableCrc, Combiner>();

function combiner(algo: CombinableCrc): Combiner {
  let c = combiners.get(algo);
  if (!c) {
    c = new Combiner(SPECS[algo]);
    combiners.set(algo, c);
  }
  return c;
}

export function isCombinableCrc(algo: string): algo is CombinableCrc {
  return algo === 'CRC32' || algo === 'CRC32C' || algo === 'CRC64NVME';
}

function toBigInt(digest: Buffer): bigint {
  return BigInt('0x' + (digest.toString('hex') || '0'));
}

function toBuffer(value: bigint, width: bigint): Buffer {
  return Buffer.from(value.toString(16).padStart(Number(width / 4n), '0'), 'hex');
}

/**
 * crc(A || B) from crc(A), crc(B) (big-endian digest bytes, as S3 sends them base64) and the byte
 * length of B. Returns the digest bytes of the concatenation.
 */
export function crcCombine(algo: CombinableCrc, crcA: Buffer, crcB: Buffer, lengthB: number): Buffer {
  const spec = SPECS[algo];
  return toBuffer(combiner(algo).combine(toBigInt(crcA), toBigInt(crcB), lengthB), spec.width);
}

/** The CRC of a whole object from the CRCs and byte lengths of its parts, in order. */
export function crcCombineAll(algo: CombinableCrc, parts: ReadonlyArray<{ crc: Buffer; size: number }>): Buffer {
  const spec = SPECS[algo];
  const c = combiner(algo);
  let acc: bigint | undefined;
  for (const part of parts) {
    const value = toBigInt(part.crc);
    acc = acc === undefined ? value : c.combine(acc, value, part.size);
  }
  // The CRC of no bytes is 0 for these algorithms (init and final XOR cancel out).
  return toBuffer(acc ?? 0n, spec.width);
}
