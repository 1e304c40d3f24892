// A bucket configuration s3edge does not have, answered the way AWS answers a bucket without it, so
// that clients which ask (s3cmd info) carry on: the owner pays.
import { requireBucket, type OperationHandler } from '../operation.js';
import { xmlResponse } from '../respond.js';
import { toXml } from '../xml.js';

export const getBucketRequestPayment: OperationHandler = async (r) => {
  await requireBucket(r, 'BucketRead');
  return xmlResponse(toXml('RequestPaymentConfiguration', { Payer: 'BucketOwner' }));
};
