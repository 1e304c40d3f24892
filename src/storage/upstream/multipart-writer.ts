// One blob written as an upstream multipart upload aimed at its final key: the parts are durable
// but the object does not exist until complete() (the blob's commit); abort() discards them. Part N
// uploads while the caller fills part N+1, in two buffers that take turns, when the upload budget has
// room for the second one; otherwise each part uploads before the one buffer is filled again.
import { XMLParser } from 'fast-xml-parser';
import type { Reservation, UploadBudget } from '../upload-budget.js';
import type { UpstreamClient } from './client.js';
import { upstreamRejected } from './errors.js';

/** Default bytes per part for the first 1000 parts (storage.s3.partBytes): one upload holds one or two of these. */
export const PART_BYTES = 8 * 1024 * 1024;
/** S3's smallest part but the last. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
/** S3's part count limit; parts grow past each 1000 so ~440 GiB fits in 10000 parts (at 8 MiB). */
const MAX_PARTS = 10_000;

const xml = new XMLParser();

/** Part n's target size: partBytes for the first 1000 parts, twice that for the next 1000, and so on. */
function partTarget(partBytes: number, partNumber: number): number {
  return partBytes * (1 + Math.floor((partNumber - 1) / 1000));
}

export interface MultipartWriterOptions {
  partBytes: number;
  /**
   * Where the bytes of buffers beyond the caller's first one come from; the caller's reservation
   * covers one buffer of partBytes. Absent: no accounting, always two buffers.
   */
  budget?: UploadBudget;
  signal?: AbortSignal;
}

export class MultipartWriter {
  private readonly etags: string[] = [];
  /** The buffer of the part before the one in flight, free to be filled again. */
  private spare: Buffer | undefined;
  private inFlight: Promise<void> | undefined;
  private done = false;
  /** Budget taken beyond the caller's one buffer of partBytes (a second buffer, larger parts). */
  private readonly extras: Reservation[] = [];
  private readonly partBytes: number;
  private readonly budget: UploadBudget | undefined;
  private readonly signal: AbortSignal | undefined;

  private constructor(
    private readonly client: UpstreamClient,
    private readonly key: string,
    private readonly uploadId: string,
    opts: MultipartWriterOptions,
  ) {
    this.partBytes = opts.partBytes;
    this.budget = opts.budget;
    this.signal = opts.signal;
  }

  static async open(client: UpstreamClient, key: string, opts: MultipartWriterOptions): Promise<MultipartWriter> {
    // Not idempotent: a retried create could leave a second, unknown upload behind. Nor abortable:
    // an upload created upstream after we stopped listening would be unknown too.
    const res = await client.expect({ method: 'POST', key, query: { uploads: '' }, idempotent: false }, [200]);
    const doc = xml.parse(await res.body.text()) as { InitiateMultipartUploadResult?: { UploadId?: string } };
    const id = doc.InitiateMultipartUploadResult?.UploadId;
    if (!id) throw new Error('upstream returned no UploadId');
    return new MultipartWriter(client, key, String(id), opts);
  }

  /** Bytes the next part should hold. */
  get nextPartBytes(): number {
    return partTarget(this.partBytes, this.etags.length + 1);
  }

  /** Bytes of buffers the budget covers for this upload: the caller's one, and ours. */
  private get covered(): number {
    return this.partBytes + this.extras.reduce((n, r) => n + r.bytes, 0);
  }

  /**
   * Starts uploading buf[0, length) as the next part (the writer owns buf until that upload ends)
   * once the previous part is stored, and returns a buffer to fill meanwhile, of nextPartBytes or of
   * `remaining` (the bytes still to come at most, when the body's length is known) if fewer: a
   * second one if the budget has room for it now, else buf itself once its upload is over.
   */
  async send(buf: Buffer, length: number, remaining?: number): Promise<Buffer> {
    await this.inFlight;
    const partNumber = this.etags.length + 1;
    if (partNumber > MAX_PARTS) throw new Error('body too large for upstream multipart');
    this.etags.push('');
    const upload = this.uploadPart(partNumber, buf.subarray(0, length)).then((etag) => {
      this.etags[partNumber - 1] = etag;
      this.spare = buf;
    });
    // A failure is taken by the next send, finish or abort.
    upload.catch(() => undefined);
    this.inFlight = upload;
    const next = Math.min(this.nextPartBytes, remaining ?? Infinity);
    const reuse = this.spare;
    this.spare = undefined;
    if (reuse && reuse.length >= next) return reuse;
    // Room for buf (in flight) and a second buffer of `next`, now, without waiting: never wait while
    // holding a buffer, the others in line might be waiting for ours.
    const want = buf.length + next - this.covered;
    const more = want > 0 ? this.budget?.tryReserve(want) : undefined;
    if (want <= 0 || !this.budget || more) {
      if (more) this.extras.push(more);
      return Buffer.allocUnsafe(next);
    }
    // One buffer at a time: the next part fills buf once this one is stored.
    await upload;
    this.spare = undefined;
    if (buf.length >= next) return buf;
    // Parts grow past each 1000 (bodies over 1000 x partBytes): the larger buffer is waited for while
    // the caller's reservation is held, the one wait of a request that holds something (bounded by
    // the budget's deadline like any other, and only for bodies that large).
    const grow = next - this.covered;
    if (grow > 0) this.extras.push(await this.budget.reserve(grow, { signal: this.signal }));
    return Buffer.allocUnsafe(next);
  }

  /** Waits for the last part; rejects if it failed. */
  async finish(): Promise<void> {
    try {
      await this.inFlight;
    } finally {
      this.releaseBuffers();
    }
  }

  /** The buffers are the caller's garbage now: their budget goes back. */
  private releaseBuffers(): void {
    this.spare = undefined;
    for (const r of this.extras.splice(0)) r.release();
  }

  private async uploadPart(partNumber: number, part: Buffer): Promise<string> {
    const res = await this.client.expect(
      {
        method: 'PUT',
        key: this.key,
        query: { partNumber: String(partNumber), uploadId: this.uploadId },
        headers: { 'content-length': String(part.length) },
        body: () => part,
        idempotent: true,
        signal: this.signal,
      },
      [200],
    );
    await res.body.dump();
    const etag = res.headers.etag;
    if (typeof etag !== 'string') throw new Error('upstream returned no part ETag');
    return etag;
  }

  /** CompleteMultipartUpload: the object appears at its key. */
  async complete(): Promise<void> {
    const parts = this.etags.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`).join('');
    const doc = `<CompleteMultipartUpload>${parts}</CompleteMultipartUpload>`;
    // Idempotent in effect: completing an already completed upload is 200 or 404, both checked below.
    const res = await this.client.expect(
      {
        method: 'POST',
        key: this.key,
        query: { uploadId: this.uploadId },
        body: () => doc,
        headers: { 'content-type': 'application/xml' },
        idempotent: true,
      },
      [200, 404],
    );
    // S3 may report a failed completion inside a 200 response.
    const text = await res.body.text();
    if (res.statusCode === 404) {
      // A retry after a lost answer finds the upload gone: fine if the object is there.
      const head = await this.client.expect({ method: 'HEAD', key: this.key, idempotent: true }, [200, 404]);
      await head.body.dump();
      if (head.statusCode !== 200) throw upstreamRejected(404, 'POST');
    } else if (text.includes('<Error>')) {
      throw upstreamRejected(200, 'POST');
    }
    this.done = true;
  }

  /** Discards the parts, after any part still uploading; best effort, safe to repeat, no-op once completed. */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.inFlight?.catch(() => undefined);
    this.releaseBuffers();
    await abortUpload(this.client, this.key, this.uploadId).catch(() => undefined);
  }
}

export async function abortUpload(client: UpstreamClient, key: string, uploadId: string): Promise<void> {
  const res = await client.expect({ method: 'DELETE', key, query: { uploadId }, idempotent: true }, [204, 200, 404]);
  await res.body.dump();
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
