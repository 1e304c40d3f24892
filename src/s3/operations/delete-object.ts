// DeleteObject: 204 whether or not the key (or version) existed (S3 semantics); the blob goes after the
// row. On a versioned bucket a delete without a version id makes a delete marker; with `?versionId=`
// that version (or delete marker) goes for good (docs/COMPATIBILITY.md "Versioning").
import { removeObjectVersion } from '../../buckets/object-removal.js';
import { requireBucket, requireKey, type OperationHandler } from '../operation.js';
import { versionHeaders, versionIdParam } from '../versioning.js';
import { changeEvents } from '../object-events.js';

export const deleteObject: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const versionId = versionIdParam(r.addr.query);
  const key = requireKey(r);
  const result = await removeObjectVersion(r.ctx, bucket.id, key, { versionId, events: await changeEvents(r, bucket, key) });
  const headers: Record<string, string> = versionHeaders(result.versionId);
  if (result.deleteMarker) headers['x-amz-delete-marker'] = 'true';
  return { status: 204, headers };
};
