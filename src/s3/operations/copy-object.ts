// CopyObject (PUT with x-amz-copy-source): the source is read like a GET and streamed through the
// hasher into a new staged blob, then committed like a PutObject (conditional writes included).
// Metadata is the source's (COPY, the default) or the request's (REPLACE), never a merge; so are the
// tags, by their own directive (x-amz-tagging-directive).
import { pipeline } from 'node:stream';
import { S3Error } from '../../errors/s3-errors.js';
import { parseChecksumAlgorithm, type ChecksumAlgorithm } from '../../hashing/checksums.js';
import { UploadHasher } from '../../hashing/upload-hasher.js';
import type { ObjectRecord } from '../../db/repos/objects.js';
import { resolveCopySource } from '../copy-source.js';
import { pickObjectHeaders, type StoredHeaders } from '../object-headers.js';
import { openObjectBody } from '../../storage/object-reader.js';
import { checkWriteCondition, commitObject, singleBlobRecord, stageObjectBody, type WriteCondition } from '../object-writes.js';
import { header, isoDate, requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { CopyBuffers } from '../copy-buffers.js';
import { CopyQuota } from '../quota.js';
import type { ReceivedUpload } from '../receive-upload.js';
import { xmlResponse } from '../respond.js';
import { taggingFromHeader } from '../tagging.js';
import { toXml } from '../xml.js';
import { changeEvents } from '../object-events.js';
import { cannedAcl, objectAclOf } from './acl.js';
import { versionHeaders } from '../versioning.js';

const SELF_COPY_MESSAGE =
  "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.";

type Directive = 'COPY' | 'REPLACE';

function directive(r: S3Request, name: 'metadata' | 'tagging'): Directive {
  const raw = header(r, `x-amz-${name}-directive`);
  if (raw === undefined) return 'COPY';
  const v = raw.trim().toUpperCase();
  if (v !== 'COPY' && v !== 'REPLACE') {
    throw new S3Error('InvalidArgument', `Unknown ${name} directive.`, { ArgumentName: `x-amz-${name}-directive`, ArgumentValue: raw });
  }
  return v;
}

function storedHeadersOf(rec: ObjectRecord): StoredHeaders {
  return {
    contentType: rec.contentType,
    contentEncoding: rec.contentEncoding,
    contentDisposition: rec.contentDisposition,
    contentLanguage: rec.contentLanguage,
    cacheControl: rec.cacheControl,
    expires: rec.expires,
    userMetadata: rec.userMetadata,
  };
}

/**
 * Streams the source's bytes into a staged blob, hashing on the way. The caller commits or aborts.
 * Must be called in the tick of the lookup that produced `source`: openObjectBody leases its blobs
 * synchronously, before the first await.
 */
async function stageCopy(r: S3Request, source: ObjectRecord, algorithm: ChecksumAlgorithm | undefined): Promise<Omit<ReceivedUpload, 'release'>> {
  const hasher = new UploadHasher({ checksumAlgorithm: algorithm, maxSize: r.ctx.config.maxObjectSize, pool: r.ctx.hashPool, expectedSize: source.size });
  const body = await openObjectBody(r.ctx, source, { signal: r.signal });
  const staged = await stageObjectBody(r.ctx, pipeline(body, hasher, () => undefined), { maxSize: source.size, signal: r.signal });
  try {
    const digests = await hasher.digests();
    // A short read (a vanished or truncated blob) must never become a smaller copy.
    if (digests.size !== source.size) throw new Error(`copy source read ${digests.size} of ${source.size} bytes`);
    return { staged, digests };
  } catch (err) {
    await staged.abort();
    throw err;
  }
}

export const copyObject: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  const { ctx } = r;
  const metadata = directive(r, 'metadata');
  const taggingDirective = directive(r, 'tagging');
  const requestedRaw = header(r, 'x-amz-checksum-algorithm');
  const requested = requestedRaw === undefined ? undefined : parseChecksumAlgorithm(requestedRaw);
  // REPLACE headers are validated before any byte is copied.
  const replaced = metadata === 'REPLACE' ? pickObjectHeaders(r.req) : undefined;
  // REPLACE takes the request's x-amz-tagging (none: no tags); COPY ignores it, as AWS does.
  const replacedTags = taggingDirective === 'REPLACE' ? (taggingFromHeader(header(r, 'x-amz-tagging')) ?? []) : undefined;
  // A copy's ACL is its request's (x-amz-acl), never the source's: as on AWS, a copy is private unless asked.
  const acl = objectAclOf(cannedAcl(r));
  const cond: WriteCondition = { ifMatch: header(r, 'if-match'), ifNoneMatch: header(r, 'if-none-match') };

  const buffers = new CopyBuffers(r);
  // The copy's bytes count against the storage quotas in full (an overwrite too): the source's size is reserved.
  const quota = new CopyQuota(r, bucket);
  try {
    await quota.ready();
    for (let attempt = 0; ; attempt++) {
      const source = await resolveCopySource(r);
      const selfCopy = source.bucket.id === bucket.id && source.key === key;
      if (selfCopy && metadata === 'COPY' && (requested === undefined || requested === source.record.checksumAlgorithm)) {
        throw new S3Error('InvalidRequest', SELF_COPY_MESSAGE);
      }
      if (source.record.size > ctx.config.maxObjectSize) {
        throw new S3Error('InvalidRequest', `The specified copy source is larger than the maximum allowable size for a copy source: ${ctx.config.maxObjectSize}`);
      }
      checkWriteCondition(await ctx.objects.get(bucket.id, key), cond, 'request');
      // Room under the quotas; when that took a query, the source is looked up again.
      if (!quota.covers(source.record.size)) {
        await quota.reserve(source.record.size);
        attempt--;
        continue;
      }
      // The memory the copy holds, reserved in this tick; if it had to wait, the source is looked up again.
      if (!buffers.cover(source.record.size, { objectBody: true })) {
        await buffers.wait();
        attempt--;
        continue;
      }
      // Without a requested algorithm the source's is kept: recomputed over the copied bytes, it equals
      // the source's FULL_OBJECT value and turns a multipart COMPOSITE one into the whole object's.
      const algorithm = requested ?? (source.record.checksumAlgorithm as ChecksumAlgorithm | null) ?? undefined;
      let copied: Omit<ReceivedUpload, 'release'>;
      try {
        copied = await stageCopy(r, source.record, algorithm);
      } catch (err) {
        // An overwrite may delete the source's blob between lookup and open: look again.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' && attempt < 3) continue;
        throw err;
      }
      const { staged, digests } = copied;
      const record = singleBlobRecord({ bucketId: bucket.id, key }, staged, digests, replaced ?? storedHeadersOf(source.record), ctx.clock());
      const tags = replacedTags ?? source.record.tagging;
      if (tags?.length) record.tagging = tags;
      if (acl) record.acl = acl;
      const etag = record.etag;
      const report = await changeEvents(r, bucket, key);
      const versionId = await commitObject(ctx, record, staged, cond, report && { report, name: 's3:ObjectCreated:Copy' });
      const result: Record<string, string> = { LastModified: isoDate(record.lastModified), ETag: etag };
      if (digests.checksum) {
        result[`Checksum${digests.checksum.algorithm}`] = digests.checksum.value;
        result['ChecksumType'] = 'FULL_OBJECT';
      }
      const headers: Record<string, string> = versionHeaders(versionId);
      if (source.versionId !== undefined) headers['x-amz-copy-source-version-id'] = source.versionId;
      const expiry = await ctx.lifecycleRules.expiration(bucket.id, record);
      if (expiry !== undefined) headers['x-amz-expiration'] = expiry;
      return xmlResponse(toXml('CopyObjectResult', result), 200, headers);
    }
  } finally {
    buffers.release();
    // After the commit (or a failure): the copy's bytes count as stored from the commit on.
    await quota.release();
  }
};
