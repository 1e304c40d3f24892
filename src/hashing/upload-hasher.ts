// Hashes an upload while it streams: MD5 (the ETag) and SHA-256 always, plus the checksum the client named.
// Small bodies are hashed inline. Large ones (given a HashPool, see hash-pool.ts) are hashed entirely in
// the worker thread, in ~1 MiB batches: MD5, SHA-256 and the requested checksum, so the event loop only
// copies bytes into the ring and stays free for other requests. Per-64 KiB worker tasks would lose: a
// task costs ~50 us, a 1 MiB batch of MD5 + SHA-256 ~4 ms.
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { S3Error } from '../errors/s3-errors.js';
import { createChecksum, type ChecksumAlgorithm, type IncrementalDigest } from './checksums.js';
import { RING_SLOTS, SLOT_BYTES, type HashPool, type HashSession } from './hash-pool.js';

export interface UploadDigests {
  size: number;
  md5Hex: string;
  sha256Hex: string;
  /** Base64 of the requested checksum, when one was requested. */
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
}

/** The checksum computed besides MD5 and SHA-256: none for SHA256, which is the SHA-256 itself. */
function extraChecksum(algorithm: ChecksumAlgorithm | undefined): ChecksumAlgorithm | undefined {
  return algorithm === 'SHA256' ? undefined : algorithm;
}

/** The digests, with the requested checksum taken from the SHA-256 when that is what was asked. */
function assemble(size: number, md5Hex: string, sha256Hex: string, algorithm: ChecksumAlgorithm | undefined, extra: string | undefined): UploadDigests {
  const out: UploadDigests = { size, md5Hex, sha256Hex };
  const value = algorithm === 'SHA256' ? Buffer.from(sha256Hex, 'hex').toString('base64') : extra;
  if (algorithm && value !== undefined) out.checksum = { algorithm, value };
  return out;
}

/** The digests of a body already in memory (a small upload): one update per algorithm, no stream. */
export async function digestBuffer(body: Buffer, checksumAlgorithm?: ChecksumAlgorithm): Promise<UploadDigests> {
  const extraAlgorithm = extraChecksum(checksumAlgorithm);
  let extra: string | undefined;
  if (extraAlgorithm) {
    const checksum = createChecksum(extraAlgorithm);
    checksum.update(body);
    extra = await checksum.digestBase64();
  }
  const md5Hex = createHash('md5').update(body).digest('hex');
  const sha256Hex = createHash('sha256').update(body).digest('hex');
  return assemble(body.length, md5Hex, sha256Hex, checksumAlgorithm, extra);
}

export interface UploadHasherOptions {
  checksumAlgorithm?: ChecksumAlgorithm;
  maxSize: number;
  /** The worker pool; without it everything is hashed inline. */
  pool?: HashPool;
  /** The declared body length, if known: the pool decides from it whether the worker pays. */
  expectedSize?: number;
}

export class UploadHasher extends Transform {
  private readonly sha256?: Hash;
  private readonly md5?: Hash;
  private readonly checksum?: IncrementalDigest;
  private readonly session?: HashSession;
  private size = 0;
  /** Worker mode: the slot being filled, and how much of it is. */
  private slot?: Buffer;
  private slotBytes = 0;
  /** Worker mode: batches handed over, oldest first (they complete in order). */
  private readonly inFlight: Promise<void>[] = [];
  private failure?: unknown;
  private result?: Promise<UploadDigests>;

  constructor(private readonly opts: UploadHasherOptions) {
    super({ highWaterMark: 1024 * 1024 });
    const extra = extraChecksum(opts.checksumAlgorithm);
    if (opts.pool?.wants(opts.expectedSize)) {
      this.session = opts.pool.session({ md5: true, sha256: true, ...(extra ? { checksum: extra } : {}) });
    } else {
      this.md5 = createHash('md5');
      this.sha256 = createHash('sha256');
      if (extra) this.checksum = createChecksum(extra);
    }
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.opts.maxSize) {
      cb(new S3Error('EntityTooLarge'));
      return;
    }
    if (this.failure) {
      cb(this.failure as Error);
      return;
    }
    if (!this.session) {
      this.sha256?.update(chunk);
      this.md5?.update(chunk);
      this.checksum?.update(chunk);
      cb(null, chunk);
      return;
    }
    this.push(chunk);
    // Synchronous while the ring has room (the common case); a wait for the worker makes it async.
    const waiting = this.batch(chunk, 0);
    if (waiting) waiting.then(() => cb(), cb);
    else cb();
  }

  /**
   * Copies chunk[at..] into ring slots, handing each full one to the worker. Returns a promise only if
   * it has to wait for a slot: slot n % RING_SLOTS is free once batch n - RING_SLOTS is hashed (the
   * worker keeps their order).
   */
  private batch(chunk: Buffer, at: number): Promise<void> | undefined {
    const session = this.session as HashSession;
    while (at < chunk.length) {
      if (this.failure) return Promise.reject(this.failure as Error);
      if (!this.slot) {
        const oldest = this.inFlight.length >= RING_SLOTS ? this.inFlight[0] : undefined;
        if (oldest) return oldest.then(() => (this.destroyed ? undefined : this.batch(chunk, at)));
        this.slot = session.slot();
      }
      const n = chunk.copy(this.slot, this.slotBytes, at);
      this.slotBytes += n;
      at += n;
      if (this.slotBytes === SLOT_BYTES) this.dispatch();
    }
    return undefined;
  }

  private dispatch(): void {
    if (!this.slot || this.slotBytes === 0) return;
    const done = (this.session as HashSession).update(this.slotBytes).catch((err: unknown) => {
      this.failure ??= err;
    });
    this.slot = undefined;
    this.slotBytes = 0;
    this.inFlight.push(done);
    void done.then(() => this.inFlight.splice(this.inFlight.indexOf(done), 1));
  }

  override _flush(cb: TransformCallback): void {
    this.result = this.finish();
    this.result.then(() => cb(), (err: unknown) => cb(err as Error));
  }

  private async finish(): Promise<UploadDigests> {
    let sha256Hex: string;
    let md5Hex: string;
    let checksum: string | undefined;
    if (this.session) {
      try {
        this.dispatch();
        await Promise.all(this.inFlight);
        if (this.failure) throw this.failure;
      } catch (err) {
        await this.session.abort().catch(() => undefined);
        throw err;
      }
      const w = await this.session.finish();
      md5Hex = w.md5Hex ?? '';
      sha256Hex = w.sha256Hex ?? '';
      checksum = w.checksum;
    } else {
      md5Hex = (this.md5 as Hash).digest('hex');
      sha256Hex = (this.sha256 as Hash).digest('hex');
      checksum = await this.checksum?.digestBase64();
    }
    return assemble(this.size, md5Hex, sha256Hex, this.opts.checksumAlgorithm, checksum);
  }

  override _destroy(err: Error | null, cb: (error?: Error | null) => void): void {
    // A body that never finished: the worker's state for it goes, queued behind its batches.
    if (this.session && !this.result) {
      this.slot = undefined;
      this.session.abort().catch(() => undefined);
    }
    cb(err);
  }

  /** Call once the stream has finished. */
  async digests(): Promise<UploadDigests> {
    if (!this.result) throw new Error('digests() before the upload stream finished');
    return this.result;
  }
}
