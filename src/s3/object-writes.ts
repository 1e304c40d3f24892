// Making a new object version visible: the metadata commit, then the blob bookkeeping and the CDN purge
// that go with it (buckets/object-removal.ts, which DeleteObject(s) and the lifecycle job remove
// through). PutObject and CopyObject come here.
import type { AppContext } from '../context.js';
import type { ObjectRecord } from '../db/repos/objects.js';
import { versionReplaced } from '../buckets/object-removal.js';
import { S3Error } from '../errors/s3-errors.js';
import type { StagedBlob } from '../storage/backend.js';
import { stageInline } from '../storage/inline-stage.js';
import { commitStaged } from '../storage/commit-staged.js';
import type { Readable } from 'node:stream';
import type { UploadDigests } from '../hashing/upload-hasher.js';
import type { StoredHeaders } from './object-headers.js';
import type { ChangeEvents, ChangeOutcome } from '../notifications/bucket-notifications.js';
import type { EventName } from '../notifications/event-names.js';

/** Conditional write (If-Match / If-None-Match: *), re-checked inside the commit transaction. */
export interface WriteCondition {
  ifMatch?: string;
  ifNoneMatch?: string;
}

function stripQuotes(etag: string): string {
  return etag.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
}

/** Checks a write condition against the current record; `phase` picks 412 (at request start) or 409 (lost race). */
export function checkWriteCondition(current: ObjectRecord | undefined, cond: WriteCondition, phase: 'request' | 'commit'): void {
  const fail = (): never => {
    if (phase === 'commit') throw new S3Error('ConditionalRequestConflict');
    throw new S3Error('PreconditionFailed', undefined, { Condition: cond.ifMatch !== undefined ? 'If-Match' : 'If-None-Match' });
  };
  if (cond.ifNoneMatch !== undefined) {
    if (cond.ifNoneMatch.trim() !== '*') throw new S3Error('NotImplemented', 'If-None-Match on writes supports only *.');
    if (current) fail();
  }
  if (cond.ifMatch !== undefined) {
    if (!current) {
      if (phase === 'commit') fail();
      throw new S3Error('NoSuchKey');
    }
    const wanted = cond.ifMatch.split(',').map(stripQuotes);
    if (!wanted.includes('*') && !wanted.includes(stripQuotes(current.etag))) fail();
  }
}

/** The record of a one-blob version (PutObject, CopyObject): ETag = MD5, checksum FULL_OBJECT. */
export function singleBlobRecord(
  target: { bucketId: string; key: string },
  staged: StagedBlob,
  digests: UploadDigests,
  headers: StoredHeaders,
  now: Date,
): ObjectRecord {
  return {
    ...target,
    blobId: staged.blobId,
    blobCrc32c: staged.crc32c,
    size: digests.size,
    etag: `"${digests.md5Hex}"`,
    sha256: digests.sha256Hex,
    checksumAlgorithm: digests.checksum?.algorithm ?? null,
    checksumValue: digests.checksum?.value ?? null,
    checksumType: digests.checksum ? 'FULL_OBJECT' : null,
    ...headers,
    // S3 times have second precision; storing them so keeps conditionals and listings consistent.
    lastModified: Math.floor(now.getTime() / 1000) * 1000,
  };
}

/**
 * Stages the body of a new object version: in memory for the metadata database when its size is known
 * and at most inlineObjectMaxBytes (`maxSize`: a bound on the bytes to come), else in the backend.
 */
export function stageObjectBody(
  ctx: AppContext,
  body: Readable,
  opts: { maxSize?: number; signal?: AbortSignal },
): Promise<StagedBlob> {
  const limit = ctx.config.inlineObjectMaxBytes;
  if (opts.maxSize !== undefined && opts.maxSize <= limit) return stageInline(body, limit, opts.signal);
  return ctx.storage.stage(body, { ...(opts.signal ? { signal: opts.signal } : {}), ...(opts.maxSize !== undefined ? { sizeHint: opts.maxSize } : {}) });
}

/**
 * Commits staged bytes as `record` (record.blobId must be staged.blobId): rename into place, then one
 * metadata transaction, then the replaced version's bytes go. On failure nothing of the new version
 * stays. Resolves to the new version's id for x-amz-version-id (undefined: bucket never versioned).
 */
export async function commitObject(
  ctx: AppContext,
  record: ObjectRecord,
  staged: StagedBlob,
  cond: WriteCondition = {},
  events?: { report: ChangeEvents; name: EventName },
): Promise<string | undefined> {
  const guard = (current: ObjectRecord | undefined): void => checkWriteCondition(current, cond, 'commit');
  const written = await commitStaged(ctx, staged, () =>
    ctx.commits.run(async (r) => {
      const w = await r.objects.put(record, guard, staged.inline);
      // The change's events go in its own transaction: queued if and only if it commits.
      if (events) await r.notificationOutbox.insert(events.report(createdOutcome(events.name, record, w.versionId)));
      return w;
    }),
  );
  versionReplaced(ctx, record.bucketId, record.key, written.replaced);
  return written.versionId;
}

/** What a created version's events say of it. */
export function createdOutcome(name: EventName, record: ObjectRecord, versionId: string | undefined): ChangeOutcome {
  return { name, size: record.size, etag: record.etag, versionId: versionId ?? null, time: record.lastModified };
}
