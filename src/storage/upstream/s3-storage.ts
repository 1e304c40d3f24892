// StorageBackend on an upstream S3 bucket. Every blob is staged as an upstream multipart upload
// aimed at its final key <prefix>blobs/<id>: the parts are durable but the object does not exist
// until CompleteMultipartUpload, which is commit(); abort() is AbortMultipartUpload. So staged bytes
// are invisible until commit without a copy, and orphans are simply stale uploads (init aborts them).
import { XMLParser } from 'fast-xml-parser';
import type { Readable } from 'node:stream';
import { newBlobId } from '../blob-id.js';
import type { ReadRange, StagedBlob, StorageBackend } from '../backend.js';
import { UpstreamClient, type UpstreamClientOptions } from './client.js';
import { blobMissing, upstreamRejected } from './errors.js';

/** Bytes buffered per part, one part at a time: the memory one upload costs. */
export const PART_BYTES = 8 * 1024 * 1024;
/** S3's part count limit; parts grow past each 1000 so ~440 GiB fits in 10000 parts. */
const MAX_PARTS = 10_000;

export interface S3StorageOptions extends UpstreamClientOptions {
  /** Key prefix in the upstream bucket ('' or ending in '/'), so deployments can share a bucket. */
  prefix: string;
  /** Uploads older than this are orphans that init aborts; younger ones may be another gateway's. */
  staleUploadMs?: number;
}

const xml = new XMLParser({ isArray: (name) => name === 'Upload' || name === 'Part' });

export class S3Storage implements StorageBackend {
  private readonly client: UpstreamClient;
  private readonly prefix: string;
  private readonly staleUploadMs: number;
  private readonly bucket: string;
  private readonly endpoint: string;

  constructor(opts: S3StorageOptions) {
    this.bucket = opts.bucket;
    this.endpoint = opts.endpoint;
    if (opts.prefix !== '' && !opts.prefix.endsWith('/')) throw new Error('storage.s3.prefix must be empty or end with /');
    this.client = new UpstreamClient(opts);
    this.prefix = opts.prefix;
    this.staleUploadMs = opts.staleUploadMs ?? 24 * 3600 * 1000;
  }

  private blobKey(blobId: string): string {
    if (!/^[0-9a-z]{16,64}$/.test(blobId)) throw new Error('invalid blob id');
    return `${this.prefix}blobs/${blobId}`;
  }

  async init(): Promise<void> {
    try {
      const res = await this.client.expect({ method: 'HEAD', key: '', idempotent: true }, [200]);
      await res.body.dump();
    } catch (err) {
      // For the operator at start-up, not a client: say what failed.
      throw new Error(`upstream storage: bucket ${this.bucket} at ${this.endpoint} is not reachable`, { cause: err });
    }
    const cutoff = Date.now() - this.staleUploadMs;
    for (const upload of await this.listUploads()) {
      if (Date.parse(upload.initiated) <= cutoff) await this.abortUpload(upload.key, upload.uploadId);
    }
  }

  /** Multipart uploads under <prefix>blobs/, every page. */
  async listUploads(): Promise<{ key: string; uploadId: string; initiated: string }[]> {
    const out: { key: string; uploadId: string; initiated: string }[] = [];
    let marker: Record<string, string> = {};
    for (;;) {
      const res = await this.client.expect(
        { method: 'GET', key: '', query: { uploads: '', prefix: `${this.prefix}blobs/`, ...marker }, idempotent: true },
        [200],
      );
      const doc = xml.parse(await res.body.text()) as {
        ListMultipartUploadsResult?: {
          Upload?: { Key: string; UploadId: string; Initiated: string }[];
          IsTruncated?: boolean | string;
          NextKeyMarker?: string;
          NextUploadIdMarker?: string;
        };
      };
      const page = doc.ListMultipartUploadsResult;
      for (const u of page?.Upload ?? []) out.push({ key: String(u.Key), uploadId: String(u.UploadId), initiated: String(u.Initiated) });
      if (String(page?.IsTruncated) !== 'true' || !page?.NextKeyMarker) return out;
      marker = { 'key-marker': String(page.NextKeyMarker), 'upload-id-marker': String(page.NextUploadIdMarker ?? '') };
    }
  }

  private async abortUpload(key: string, uploadId: string): Promise<void> {
    const res = await this.client.expect({ method: 'DELETE', key, query: { uploadId }, idempotent: true }, [204, 200, 404]);
    await res.body.dump();
  }

  async stage(body: Readable, opts: { signal?: AbortSignal } = {}): Promise<StagedBlob> {
    const blobId = newBlobId();
    const key = this.blobKey(blobId);
    const { signal } = opts;
    let uploadId: string;
    try {
      // Not idempotent: a retried create could leave a second, unknown upload behind.
      const res = await this.client.expect({ method: 'POST', key, query: { uploads: '' }, idempotent: false, signal }, [200]);
      const doc = xml.parse(await res.body.text()) as { InitiateMultipartUploadResult?: { UploadId?: string } };
      const id = doc.InitiateMultipartUploadResult?.UploadId;
      if (!id) throw new Error('upstream returned no UploadId');
      uploadId = String(id);
    } catch (err) {
      body.destroy();
      throw err;
    }

    const etags: string[] = [];
    let size = 0;
    try {
      // Two part buffers: one fills (by copy) while the other uploads, so the body keeps flowing;
      // a buffer is reused only once its upload has finished. 16 MiB per upload.
      const spare: Buffer[] = [];
      let part: Buffer = Buffer.allocUnsafe(partTarget(1));
      let filled = 0;
      let inFlight: Promise<void> | undefined;
      const flush = async (): Promise<void> => {
        await inFlight;
        const partNumber = etags.length + 1;
        const sent = part;
        etags.push('');
        const upload = this.uploadPart(key, uploadId, partNumber, sent.subarray(0, filled), signal).then((etag) => {
          etags[partNumber - 1] = etag;
          if (sent.length === partTarget(etags.length + 1)) spare.push(sent);
        });
        // Failures are taken by the next flush or the final await.
        upload.catch(() => undefined);
        inFlight = upload;
        filled = 0;
        const next = partTarget(etags.length + 1);
        part = spare.pop() ?? Buffer.allocUnsafe(next);
        if (part.length !== next) part = Buffer.allocUnsafe(next);
      };
      try {
        for await (const chunk of body) {
          signal?.throwIfAborted();
          const buf = chunk as Buffer;
          size += buf.length;
          for (let at = 0; at < buf.length; ) {
            const n = Math.min(part.length - filled, buf.length - at);
            buf.copy(part, filled, at, at + n);
            filled += n;
            at += n;
            if (filled === part.length) await flush();
          }
        }
        signal?.throwIfAborted();
        // The last part may be short, and an empty body is one empty part.
        if (filled > 0 || etags.length === 0) await flush();
      } finally {
        // Never leave an upload running behind a failure (its rejection is rethrown on success only).
        await inFlight?.catch(() => undefined);
      }
      await inFlight;
      if (etags.length > MAX_PARTS) throw new Error('body too large for upstream multipart');
    } catch (err) {
      body.destroy();
      await this.abortUpload(key, uploadId).catch(() => undefined);
      throw err;
    }

    let done = false;
    return {
      blobId,
      size,
      commit: async () => {
        const parts = etags.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`).join('');
        const doc = `<CompleteMultipartUpload>${parts}</CompleteMultipartUpload>`;
        // Idempotent in effect: completing an already completed upload is 200 or 404, both checked below.
        const res = await this.client.expect(
          { method: 'POST', key, query: { uploadId }, body: () => doc, headers: { 'content-type': 'application/xml' }, idempotent: true },
          [200, 404],
        );
        // S3 may report a failed completion inside a 200 response.
        const text = await res.body.text();
        if (res.statusCode === 404) {
          // A retry after a lost answer finds the upload gone: fine if the object is there.
          const head = await this.client.expect({ method: 'HEAD', key, idempotent: true }, [200, 404]);
          await head.body.dump();
          if (head.statusCode !== 200) throw upstreamRejected(404, 'POST');
        } else if (text.includes('<Error>')) {
          throw upstreamRejected(200, 'POST');
        }
        done = true;
      },
      abort: async () => {
        if (done) return;
        done = true;
        await this.abortUpload(key, uploadId).catch(() => undefined);
      },
    };
  }

  private async uploadPart(key: string, uploadId: string, partNumber: number, part: Buffer, signal?: AbortSignal): Promise<string> {
    const res = await this.client.expect(
      {
        method: 'PUT',
        key,
        query: { partNumber: String(partNumber), uploadId },
        headers: { 'content-length': String(part.length) },
        body: () => part,
        idempotent: true,
        signal,
      },
      [200],
    );
    await res.body.dump();
    const etag = res.headers.etag;
    if (typeof etag !== 'string') throw new Error('upstream returned no part ETag');
    return etag;
  }

  async read(blobId: string, opts: { range?: ReadRange; signal?: AbortSignal } = {}): Promise<Readable> {
    const key = this.blobKey(blobId);
    const headers: Record<string, string> = opts.range ? { range: `bytes=${opts.range.start}-${opts.range.end}` } : {};
    const res = await this.client.send({ method: 'GET', key, headers, idempotent: true, signal: opts.signal });
    if (res.statusCode === 404) {
      await res.body.dump().catch(() => undefined);
      throw blobMissing();
    }
    if (res.statusCode !== 200 && res.statusCode !== 206) {
      await res.body.dump().catch(() => undefined);
      throw upstreamRejected(res.statusCode, 'GET');
    }
    // undici's body is a Readable: it errors (never ends short) if the upstream breaks or idles out.
    return res.body;
  }

  async remove(blobId: string): Promise<void> {
    const res = await this.client.expect({ method: 'DELETE', key: this.blobKey(blobId), idempotent: true }, [204, 200, 404]);
    await res.body.dump();
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** Part n's target size: 8 MiB for the first 1000 parts, 16 MiB for the next 1000, and so on. */
function partTarget(partNumber: number): number {
  return PART_BYTES * (1 + Math.floor((partNumber - 1) / 1000));
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
