// CreateMultipartUpload: remembers the future object's headers and checksum settings under a new
// upload id. Nothing is visible at the key until the upload completes.
import { newUploadId } from '../../../db/repos/multipart.js';
import { pickObjectHeaders } from '../../object-headers.js';
import { header, requireBucket, requireKey, type OperationHandler } from '../../operation.js';
import { xmlResponse } from '../../respond.js';
import { taggingFromHeader } from '../../tagging.js';
import { cannedAcl, objectAclOf } from '../acl.js';
import { toXml } from '../../xml.js';
import { parseChecksumSettings } from './common.js';

export const createMultipartUpload: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  const meta = pickObjectHeaders(r.req);
  const tagging = taggingFromHeader(header(r, 'x-amz-tagging'));
  const acl = objectAclOf(cannedAcl(r));
  const checksum = parseChecksumSettings(header(r, 'x-amz-checksum-algorithm'), header(r, 'x-amz-checksum-type'));
  const initiated = r.ctx.clock().getTime();
  const uploadId = newUploadId(initiated);
  await r.ctx.multipart.create({
    uploadId,
    bucketId: bucket.id,
    key,
    // An upload opened anonymously (a public-read-write bucket) is the bucket owner's, as its object will be.
    ownerId: r.principal.kind === 'anonymous' ? bucket.ownerId : r.principal.userId,
    initiated,
    checksumAlgorithm: checksum.algorithm,
    checksumType: checksum.type,
    ...meta,
    ...(tagging?.length ? { tagging } : {}),
    ...(acl ? { acl } : {}),
  });
  const headers: Record<string, string> = {};
  if (checksum.algorithm && checksum.type) {
    headers['x-amz-checksum-algorithm'] = checksum.algorithm;
    headers['x-amz-checksum-type'] = checksum.type;
  }
  return xmlResponse(toXml('InitiateMultipartUploadResult', { Bucket: bucket.name, Key: key, UploadId: uploadId }), 200, headers);
};
