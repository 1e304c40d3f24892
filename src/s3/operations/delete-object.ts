// DeleteObject: 204 whether or not the key existed (S3 semantics); the blob goes after the row.
import { requireBucket, requireKey, type OperationHandler } from '../operation.js';

export const deleteObject: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'ObjectWrite');
  const blobId = r.ctx.objects.delete(bucket.id, requireKey(r));
  if (blobId) await r.ctx.storage.remove(blobId);
  return { status: 204 };
};
