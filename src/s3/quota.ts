// Storage quotas at the S3 door (credits/quotas.ts has the rules): what an upload reserves before its
// body is read, and a copy's reservation taken beside its source lookup. A refusal is the service's
// Refusal, answered as S3's QuotaExceeded by respond.ts.
import type { Bucket } from '../db/repos/index.js';
import type { QuotaReservation, QuotaTarget, QuotaWant } from '../credits/quotas.js';
import { header, type S3Request } from './operation.js';

/** An object's bytes count against its bucket's owner and the bucket. */
export function quotaTarget(bucket: Bucket): QuotaTarget {
  return { userId: bucket.ownerId, bucket: { id: bucket.id, name: bucket.name } };
}

/**
 * What a request body may add: exactly its length when it is declared (Content-Length of a plain body,
 * x-amz-decoded-content-length of an aws-chunked one), else up to its Content-Length (an aws-chunked
 * body's framing makes that an upper bound), else up to what the quota leaves.
 */
export function bodyWant(r: S3Request): QuotaWant {
  const decoded = header(r, 'x-amz-decoded-content-length');
  const framed = r.auth.payload.kind === 'streaming-signed' || r.auth.payload.kind === 'streaming-unsigned-trailer';
  const length = header(r, 'content-length');
  const n = (v: string | undefined): number | undefined => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);
  const exact = framed ? n(decoded) : (n(length) ?? n(decoded));
  if (exact !== undefined) return { bytes: exact };
  return { upTo: n(length) };
}

/** Reserves room for the request's body in its bucket (S3 PutObject, UploadPart). */
export function reserveBody(r: S3Request, bucket: Bucket): Promise<QuotaReservation> {
  return r.ctx.quotas.reserve(quotaTarget(bucket), bodyWant(r));
}

/**
 * A copy's reservation (CopyObject, UploadPartCopy), taken like its upload budget (copy-buffers.ts):
 * covered at once when no quota applies or what is held suffices; else the copy reserves (a query),
 * then looks its source up again, whose size may have changed meanwhile.
 */
export class CopyQuota {
  private held: QuotaReservation | undefined;
  private heldFor = 0;

  constructor(
    private readonly r: S3Request,
    private readonly bucket: Bucket,
  ) {}

  /** Reads the quotas that apply (held a second by every process): covers() then decides without waiting. */
  async ready(): Promise<void> {
    await this.r.ctx.quotas.limits(quotaTarget(this.bucket));
  }

  /** True when `size` bytes are covered now; false: call reserve(size), then look the source up again. */
  covers(size: number): boolean {
    if (this.held && this.heldFor >= size) return true;
    return this.held === undefined && this.r.ctx.quotas.unlimitedNow(quotaTarget(this.bucket));
  }

  /** Reserves `size` bytes (the QuotaExceeded refusal when they do not fit). */
  async reserve(size: number): Promise<void> {
    await this.release();
    this.held = await this.r.ctx.quotas.reserve(quotaTarget(this.bucket), { bytes: size });
    this.heldFor = this.held.maxBytes === Infinity ? Infinity : size;
  }

  /** After the commit, or a failure. */
  async release(): Promise<void> {
    const held = this.held;
    this.held = undefined;
    this.heldFor = 0;
    await held?.release();
  }
}
