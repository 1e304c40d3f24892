// The digest a blob's bytes are checked against when they are read back. Every backend records the
// CRC32C of what it stages (StagedBlob.crc32c; about 12 GB/s here against MD5's 0.7, so every whole-
// blob read can afford to check it); blobs written before that have only the MD5 of their ETag, which
// is checked instead. A check that fails withholds the read's last bytes and fails the stream, so a
// client sees a short read, a copy or cache fill fails, and nothing completes with the wrong bytes.
import { crc32c } from '@node-rs/crc32';
import { createHash, type Hash } from 'node:crypto';
import { Transform, pipeline, type Readable, type TransformCallback } from 'node:stream';

export type BlobDigest = { kind: 'crc32c'; value: number } | { kind: 'md5'; hex: string };

/** `crc32c:0a1b2c3d` or `md5:<32 hex>`: how digests are stored in corrupt_blobs and shown to operators. */
export function formatDigest(d: BlobDigest): string {
  return d.kind === 'crc32c' ? `crc32c:${d.value.toString(16).padStart(8, '0')}` : `md5:${d.hex}`;
}

/** A quoted MD5 ETag (`"0123..."`); multipart-style ETags (`"...-3"`) are no digest of one blob. */
const MD5_ETAG = /^"?([0-9a-f]{32})"?$/;

/**
 * What a blob is checked against: its recorded CRC32C, else the MD5 its ETag carries (rows written
 * before CRC32Cs were recorded), else nothing (undefined: the read is not checked).
 */
export function expectedDigest(crc: number | null | undefined, etag: string | null | undefined): BlobDigest | undefined {
  if (typeof crc === 'number') return { kind: 'crc32c', value: crc };
  const md5 = MD5_ETAG.exec(etag ?? '')?.[1];
  return md5 ? { kind: 'md5', hex: md5 } : undefined;
}

function sameDigest(a: BlobDigest, b: BlobDigest): boolean {
  return a.kind === 'crc32c' ? b.kind === 'crc32c' && a.value === b.value : b.kind === 'md5' && a.hex === b.hex;
}

/** Whether `data` has the CRC32C `value`: the allocation-free check of bytes in memory (small GETs). */
export function hasCrc32c(data: Buffer, value: number): boolean {
  return crc32c(data) === value;
}

/** A running CRC32C (Castagnoli, as S3's x-amz-checksum-crc32c) of the bytes passed to update. */
export class Crc32c {
  value = 0;

  update(buf: Buffer): void {
    this.value = crc32c(buf, this.value);
  }
}

/** A read whose bytes no longer match the digest recorded at write time. */
export class BlobDigestMismatch extends Error {
  readonly code = 'EBADDIGEST';

  constructor(
    readonly expected: BlobDigest,
    readonly actual: BlobDigest,
  ) {
    super(`stored bytes do not match their digest (expected ${formatDigest(expected)}, read ${formatDigest(actual)})`);
  }
}

/** Asks a backend to check a read of a whole blob against `expected`. */
export interface ReadVerification {
  expected: BlobDigest;
  /** Called once, when the check fails, before the stream fails: mark, log, count. Must not throw. */
  onMismatch(err: BlobDigestMismatch): void;
}

/** The running check of one read: every byte through update(), then finish() before the last ones go out. */
export class DigestCheck {
  private readonly crc: Crc32c | undefined;
  private readonly md5: Hash | undefined;

  constructor(private readonly v: ReadVerification) {
    if (v.expected.kind === 'crc32c') this.crc = new Crc32c();
    else this.md5 = createHash('md5');
  }

  update(buf: Buffer): void {
    if (this.crc) this.crc.update(buf);
    else this.md5?.update(buf);
  }

  /** Throws BlobDigestMismatch (after reporting it) if the bytes seen differ from the expected digest. */
  finish(): void {
    const { expected } = this.v;
    const actual: BlobDigest = this.crc ? { kind: 'crc32c', value: this.crc.value } : { kind: 'md5', hex: this.md5?.digest('hex') ?? '' };
    if (sameDigest(actual, expected)) return;
    const err = new BlobDigestMismatch(expected, actual);
    this.v.onMismatch(err);
    throw err;
  }
}

/** Checks bytes already in memory, whole; throws BlobDigestMismatch (reported) if they do not match. */
export function checkBuffer(data: Buffer, verify: ReadVerification): void {
  const check = new DigestCheck(verify);
  check.update(data);
  check.finish();
}

/**
 * Passes a stream's bytes on, checked: each chunk is held until the next arrives, and the last one is
 * released only once the whole read matched its digest; otherwise the stream fails without it.
 */
class VerifyingStream extends Transform {
  private held: Buffer | undefined;

  constructor(private readonly check: DigestCheck) {
    super({ highWaterMark: 1024 * 1024 });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.check.update(chunk);
    const previous = this.held;
    this.held = chunk;
    cb(null, previous);
  }

  override _flush(cb: TransformCallback): void {
    try {
      this.check.finish();
    } catch (err) {
      cb(err as Error);
      return;
    }
    cb(null, this.held);
  }
}

/** `body` checked against `verify` (for a backend whose reads are plain streams). */
export function verifiedStream(body: Readable, verify: ReadVerification): Readable {
  return pipeline(body, new VerifyingStream(new DigestCheck(verify)), () => undefined);
}
