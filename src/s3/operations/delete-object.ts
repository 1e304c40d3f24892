// DeleteObject: 204 whether or not the key existed (S3 semantics); the blob goes after the row.
import { removeObject } from '../object-writes.js';
import { requireBucket, requireKey, type OperationHandler } from '../operation.js';

export const deleteObject: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'ObjectWrite');
  await removeObject(r.ctx, bucket.id, requireKey(r));
  return { status: 204 };
};
