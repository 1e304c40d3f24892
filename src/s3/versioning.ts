// Version ids in requests and answers (bucket versioning, docs/COMPATIBILITY.md "Versioning").
import { isVersionId } from '../db/repos/object-versions.js';
import { S3Error } from '../errors/s3-errors.js';

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
