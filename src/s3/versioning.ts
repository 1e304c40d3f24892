// Version ids in requests and answers (bucket versioning, docs/COMPATIBILITY.md "Versioning").
import type { Bucket } from '../db/repos/index.js';
import { isVersionId } from '../db/repos/object-versions.js';
import type { ObjectRecord } from '../db/repos/objects.js';
import { S3Error } from '../errors/s3-errors.js';
import { httpDate } from '../http/http-date.js';
import type { S3Request } from './operation.js';

/**
 * A version id from a request: null for "null" (the null version), the id otherwise. One this server
 * cannot have made is 400 InvalidArgument "Invalid version id specified", as AWS answers for an id
 * not of its form (an unknown id of the right form is NoSuchVersion, decided by the caller).
 */
export function parseVersionId(raw: string, argumentName = 'versionId'): string | null {
  if (raw === 'null') return null;
  if (raw === '') throw new S3Error('InvalidArgument', 'Version id cannot be the empty string', { ArgumentName: argumentName, ArgumentValue: raw });
  if (!isVersionId(raw)) throw new S3Error('InvalidArgument', 'Invalid version id specified', { ArgumentName: argumentName, ArgumentValue: raw });
  return raw;
}

/** `?versionId=` of an object request: undefined when absent. */
export function versionIdParam(query: ReadonlyMap<string, string>): string | null | undefined {
  const raw = query.get('versionId');
  return raw === undefined ? undefined : parseVersionId(raw);
}

/** The x-amz-version-id header of an answer; none on a bucket versioning was never enabled on. */
export function versionHeaders(versionId: string | undefined): Record<string, string> {
  return versionId === undefined ? {} : { 'x-amz-version-id': versionId };
}

/**
 * The version a read or a tag change addresses: the key's current one without `?versionId=`, else
 * that version, current or not (null: the "null" version). With the record, for a small object, its
 * bytes (read with the row). On a versioned bucket a key whose latest version is a delete marker is
 * NoSuchKey with x-amz-delete-marker; a version id naming a delete marker is 405 MethodNotAllowed
 * with x-amz-delete-marker and Last-Modified. GetObject documents both; Scality CloudServer's
 * tagging tests (checked against AWS) expect the same of GetObjectTagging.
 */
export async function findVersion(
  r: S3Request,
  bucket: Bucket,
  key: string,
  versionId: string | null | undefined,
): Promise<{ rec: ObjectRecord; inline?: Buffer }> {
  if (versionId === undefined) {
    const found = await r.ctx.objects.getWithInline(bucket.id, key);
    if (found) return found;
    const marker = bucket.versioning == null ? undefined : await r.ctx.objects.versions.latestDeleteMarker(bucket.id, key);
    const headers: Record<string, string> = marker ? { 'x-amz-delete-marker': 'true', 'x-amz-version-id': marker.versionId ?? 'null' } : {};
    throw new S3Error('NoSuchKey', undefined, { Key: key }, headers);
  }
  const found = await r.ctx.objects.getVersion(bucket.id, key, versionId);
  if (!found) throw new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: versionId ?? 'null' });
  if (found.deleteMarker) {
    throw new S3Error('MethodNotAllowed', undefined, { Method: r.req.method ?? 'GET', ResourceType: 'DeleteMarker' }, {
      'x-amz-delete-marker': 'true',
      'x-amz-version-id': versionId ?? 'null',
      'last-modified': httpDate(found.lastModified),
    });
  }
  return found;
}

/**
 * x-amz-version-id of an answer about a stored version (GET/HEAD, tagging, attributes): only buckets
 * that were ever versioned name versions, or when a version was asked for; the "null" one as 'null'.
 */
export function servedVersionHeaders(bucket: Bucket, rec: ObjectRecord, asked: string | null | undefined): Record<string, string> {
  const id = servedVersionId(bucket, rec, asked);
  return id !== undefined ? { 'x-amz-version-id': id } : {};
}

/** servedVersionHeaders' x-amz-version-id value, or undefined when the answer names no version. */
export function servedVersionId(bucket: Bucket, rec: ObjectRecord, asked: string | null | undefined): string | undefined {
  const named = rec.versionId != null || bucket.versioning != null || asked !== undefined;
  return named ? (rec.versionId ?? 'null') : undefined;
}
