// One blob written as an upstream multipart upload aimed at its final key: the parts are durable
// but the object does not exist until complete() (the blob's commit); abort() discards them. Part N
// uploads while the caller fills part N+1, in two buffers that take turns.
import { XMLParser } from 'fast-xml-parser';
import type { UpstreamClient } from './client.js';
import { upstreamRejected } from './errors.js';

/** Bytes per part for the first 1000 parts: the memory one upload costs is two of these. */
export const PART_BYTES = 8 * 1024 * 1024;
/** S3's part count limit; parts grow past each 1000 so ~440 GiB fits in 10000 parts. */
const MAX_PARTS = 10_000;

const xml = new XMLParser();

/** Part n's target size: 8 MiB for the first 1000 parts, 16 MiB for the next 1000, and so on. */
function partTarget(partNumber: number): number {
  return PART_BYTES * (1 + Math.floor((partNumber - 1) / 1000));
}

export class MultipartWriter {
  private readonly etags: string[] = [];
  /** The buffer of the part before the one in flight, free to be filled again. */
  private spare: Buffer | undefined;
  private inFlight: Promise<void> | undefined;
  private done = false;

  private constructor(
    private readonly client: UpstreamClient,
    private readonly key: string,
    private readonly uploadId: string,
    private readonly signal: AbortSignal | undefined,
  ) {}

  static async open(client: UpstreamClient, key: string, signal?: AbortSignal): Promise<MultipartWriter> {
    // Not idempotent: a retried create could leave a second, unknown upload behind. Nor abortable:
    // an upload created upstream after we stopped listening would be unknown too.
    const res = await client.expect({ method: 'POST', key, query: { uploads: '' }, idempotent: false }, [200]);
    const doc = xml.parse(await res.body.text()) as { InitiateMultipartUploadResult?: { UploadId?: string } };
    const id = doc.InitiateMultipartUploadResult?.UploadId;
    if (!id) throw new Error('upstream returned no UploadId');
    return new MultipartWriter(client, key, String(id), signal);
  }

  /** Bytes the next part should hold. */
  get nextPartBytes(): number {
    return partTarget(this.etags.length + 1);
  }

  /**
   * Starts uploading buf[0, length) as the next part (the writer owns buf until that upload ends)
   * once the previous part is stored, and returns a buffer of nextPartBytes to fill meanwhile.
   */
  async send(buf: Buffer, length: number): Promise<Buffer> {
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
    const reuse = this.spare;
    this.spare = undefined;
    return reuse?.length === this.nextPartBytes ? reuse : Buffer.allocUnsafe(this.nextPartBytes);
  }

  /** Waits for the last part; rejects if it failed. */
  async finish(): Promise<void> {
    await this.inFlight;
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
