// StorageBackend on an upstream S3 bucket: each blob is one object <prefix>blobs/<id>, never named
// after a client's key. A body of up to one part (storage.s3.partBytes, 8 MiB) is a single PutObject;
// a longer one is a multipart upload aimed at that key (multipart-writer.ts), invisible until commit()
// completes it. The caller reserves one part buffer in the upload budget (stageBufferBytes); a second
// one, for a part to fill while the last uploads, is taken from the budget only when it has room.
// Crash leftovers of the second kind are pending uploads, which init aborts once they are stale.
import { XMLParser } from 'fast-xml-parser';
import type { Readable } from 'node:stream';
import { isBackendBlobId, newBlobId } from '../blob-id.js';
import type { ReadOptions, StageOptions, StagedBlob, StorageBackend, StoredBlob } from '../backend.js';
import { S3Error } from '../../errors/s3-errors.js';
import type { UploadBudget } from '../upload-budget.js';
import { Crc32c, verifiedStream } from '../blob-digest.js';
import { UpstreamClient, type UpstreamClientOptions } from './client.js';
import { blobMissing } from './errors.js';
import { abortUpload, MIN_PART_BYTES, MultipartWriter, PART_BYTES } from './multipart-writer.js';

export interface S3StorageOptions extends UpstreamClientOptions {
  /** Key prefix in the upstream bucket ('' or ending in '/'), so deployments can share a bucket. */
  prefix: string;
  /** Uploads older than this are orphans that init aborts; younger ones may be another gateway's. */
  staleUploadMs?: number;
  /** Bytes of one part buffer (at least 5 MiB, S3's smallest part); default 8 MiB. */
  partBytes?: number;
  /** Where a second part buffer's bytes come from (src/storage/upload-budget.ts); absent: not counted. */
  budget?: UploadBudget;
}

const xml = new XMLParser({ isArray: (name) => name === 'Upload' || name === 'Contents', parseTagValue: false });

export class S3Storage implements StorageBackend {
  private readonly client: UpstreamClient;
  private readonly prefix: string;
  private readonly staleUploadMs: number;
  private readonly bucket: string;
  private readonly endpoint: string;
  private readonly partBytes: number;
  private readonly budget: UploadBudget | undefined;

  constructor(opts: S3StorageOptions) {
    this.partBytes = opts.partBytes ?? PART_BYTES;
    if (!Number.isInteger(this.partBytes) || this.partBytes < MIN_PART_BYTES) throw new Error('storage.s3.partBytes must be at least 5 MiB');
    this.budget = opts.budget;
    this.bucket = opts.bucket;
    this.endpoint = opts.endpoint;
    if (opts.prefix !== '' && !opts.prefix.endsWith('/')) throw new Error('storage.s3.prefix must be empty or end with /');
    this.client = new UpstreamClient(opts);
    this.prefix = opts.prefix;
    this.staleUploadMs = opts.staleUploadMs ?? 24 * 3600 * 1000;
  }

  /** Upstream requests that failed for good (the gateway's metrics). */
  get upstreamFailures(): number {
    return this.client.failureCount;
  }

  async probe(signal: AbortSignal): Promise<void> {
    const res = await this.client.expect({ method: 'HEAD', key: '', idempotent: false, signal }, [200]);
    await res.body.dump();
  }

  private blobKey(blobId: string): string {
    if (!isBackendBlobId(blobId)) throw new Error('invalid blob id');
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
      if (Date.parse(upload.initiated) <= cutoff) await abortUpload(this.client, upload.key, upload.uploadId);
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

  /** One part buffer, no longer than the body. */
  stageBufferBytes(sizeHint?: number): number {
    return Math.min(sizeHint ?? this.partBytes, this.partBytes);
  }

  async stage(body: Readable, opts: StageOptions = {}): Promise<StagedBlob> {
    const blobId = newBlobId();
    const key = this.blobKey(blobId);
    const { signal } = opts;
    // A body that fits the first part buffer is one PutObject. Only a longer one becomes a multipart
    // upload, opened when more bytes arrive for a full buffer.
    let multipart: MultipartWriter | undefined;
    let part: Buffer = Buffer.allocUnsafe(this.stageBufferBytes(opts.sizeHint));
    let filled = 0;
    let size = 0;
    const crc = new Crc32c();
    let putSent = false;
    try {
      for await (const chunk of body) {
        signal?.throwIfAborted();
        const buf = chunk as Buffer;
        size += buf.length;
        crc.update(buf);
        for (let at = 0; at < buf.length; ) {
          if (filled === part.length) {
            // More bytes than the declared length (buffers are cut to it): the body is longer than it said.
            const consumed = size - buf.length + at;
            if (opts.sizeHint !== undefined && consumed >= opts.sizeHint) {
              throw new S3Error('IncompleteBody', 'The request body is longer than its declared length.');
            }
            multipart ??= await MultipartWriter.open(this.client, key, { partBytes: this.partBytes, budget: this.budget, signal });
            part = await multipart.send(part, filled, opts.sizeHint === undefined ? undefined : opts.sizeHint - consumed);
            filled = 0;
          }
          const n = Math.min(part.length - filled, buf.length - at);
          buf.copy(part, filled, at, at + n);
          filled += n;
          at += n;
        }
      }
      signal?.throwIfAborted();
      if (multipart) {
        if (filled > 0) await multipart.send(part, filled);
        await multipart.finish();
      } else {
        putSent = true;
        await this.putBlob(key, part.subarray(0, filled), signal);
      }
    } catch (err) {
      body.destroy();
      await multipart?.abort();
      // A PutObject whose answer was lost may have stored the blob after all.
      if (putSent) await this.remove(blobId).catch(() => undefined);
      throw err;
    }
    if (multipart) {
      const upload = multipart;
      return { blobId, size, crc32c: crc.value, commit: () => upload.complete(), abort: () => upload.abort() };
    }
    // Already at its key; only the metadata commit makes it reachable, so commit has nothing to do.
    let removed = false;
    return {
      blobId,
      size,
      crc32c: crc.value,
      commit: async () => undefined,
      abort: async () => {
        if (removed) return;
        removed = true;
        await this.remove(blobId).catch(() => undefined);
      },
    };
  }

  /** One PutObject of a buffered body (safe to retry: the same bytes again). */
  private async putBlob(key: string, body: Buffer, signal?: AbortSignal): Promise<void> {
    const res = await this.client.expect(
      { method: 'PUT', key, headers: { 'content-length': String(body.length) }, body: () => body, idempotent: true, signal },
      [200],
    );
    await res.body.dump();
  }

  async read(blobId: string, opts: ReadOptions = {}): Promise<Readable> {
    const key = this.blobKey(blobId);
    const headers: Record<string, string> = opts.range ? { range: `bytes=${opts.range.start}-${opts.range.end}` } : {};
    const res = await this.client.expect({ method: 'GET', key, headers, idempotent: true, signal: opts.signal }, [200, 206, 404]);
    if (res.statusCode === 404) {
      await res.body.dump().catch(() => undefined);
      throw blobMissing();
    }
    // undici's body is a Readable: it errors (never ends short) if the upstream breaks or idles out.
    return opts.verify ? verifiedStream(res.body, opts.verify) : res.body;
  }

  async remove(blobId: string): Promise<void> {
    const res = await this.client.expect({ method: 'DELETE', key: this.blobKey(blobId), idempotent: true }, [204, 200, 404]);
    await res.body.dump();
  }

  /** Every object under <prefix>blobs/ (ListObjectsV2, every page). */
  async *list(): AsyncIterable<StoredBlob> {
    const keyPrefix = `${this.prefix}blobs/`;
    let token: Record<string, string> = {};
    for (;;) {
      const res = await this.client.expect(
        { method: 'GET', key: '', query: { 'list-type': '2', prefix: keyPrefix, ...token }, idempotent: true },
        [200],
      );
      const doc = xml.parse(await res.body.text()) as {
        ListBucketResult?: {
          Contents?: { Key: string; Size: string | number; LastModified: string }[] | { Key: string; Size: string | number; LastModified: string };
          IsTruncated?: boolean | string;
          NextContinuationToken?: string;
        };
      };
      const page = doc.ListBucketResult;
      const contents = page?.Contents === undefined ? [] : Array.isArray(page.Contents) ? page.Contents : [page.Contents];
      for (const c of contents) {
        const blobId = String(c.Key).slice(keyPrefix.length);
        // Keys under the prefix that are not blob ids are someone else's: never listed, so never collected.
        if (isBackendBlobId(blobId)) yield { blobId, size: Number(c.Size), modifiedAt: Date.parse(String(c.LastModified)) };
      }
      if (String(page?.IsTruncated) !== 'true' || !page?.NextContinuationToken) return;
      token = { 'continuation-token': String(page.NextContinuationToken) };
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
