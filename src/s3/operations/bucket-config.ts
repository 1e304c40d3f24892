// Bucket configurations s3edge does not have, answered the way AWS answers a bucket without them, so
// that clients which ask (s3cmd info) carry on: no policy, the owner pays.
import { S3Error } from '../../errors/s3-errors.js';
import { requireBucket, type OperationHandler } from '../operation.js';
import { xmlResponse } from '../respond.js';
import { toXml } from '../xml.js';

export const getBucketPolicy: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  throw new S3Error('NoSuchBucketPolicy', undefined, { BucketName: bucket.name });
};

export const getBucketRequestPayment: OperationHandler = async (r) => {
  await requireBucket(r, 'BucketRead');
  return xmlResponse(toXml('RequestPaymentConfiguration', { Payer: 'BucketOwner' }));
};
