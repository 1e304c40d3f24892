// Bucket-level operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation.
import { visibleBuckets } from '../../auth/authorize.js';
import { authorize } from '../../auth/authorize.js';
import { S3Error } from '../../errors/s3-errors.js';
import { createBucket, deleteBucket } from '../bucket-service.js';
import { isoDate, requireBucket, type OperationHandler } from '../operation.js';
import { xmlResponse } from '../respond.js';
import { readXmlBody, toXml } from '../xml.js';

function owner(userId: string): { ID: string; DisplayName: string } {
  return { ID: userId, DisplayName: userId };
}

export const listBuckets: OperationHandler = async (r) => {
  const buckets = visibleBuckets(r.principal, r.ctx.repos);
  return xmlResponse(
    toXml('ListAllMyBucketsResult', {
      Owner: owner(r.principal.userId),
      Buckets: {
        Bucket: buckets.map((b) => ({ Name: b.name, CreationDate: isoDate(b.createdAt), BucketRegion: b.region })),
      },
    }),
  );
};

export const createBucketOp: OperationHandler = async (r) => {
  const name = r.addr.bucket as string;
  if (r.principal.kind === 'bucket') {
    // A bucket key may not create buckets, but its own bucket exists and it may use it: it gets the
    // owner's answer, which rclone (its check-bucket step), aws cli and restic take as success.
    // Any other name is AccessDenied, without learning whether that bucket exists.
    if (name !== r.principal.bucketName) throw new S3Error('AccessDenied');
    throw new S3Error('BucketAlreadyOwnedByYou', undefined, { BucketName: name });
  }
  authorize(r.principal, 'CreateBucket');
  const body = await readXmlBody(r.req, 64 * 1024);
  const config = body?.CreateBucketConfiguration as { LocationConstraint?: unknown } | undefined;
  if (body && !config) throw new S3Error('MalformedXML');
  const location = typeof config?.LocationConstraint === 'string' ? config.LocationConstraint : '';
  const region = r.ctx.config.region;
  if (location && location !== region && !(location === 'US' && region === 'us-east-1')) {
    throw new S3Error(
      'InvalidArgument',
      `The specified location-constraint '${location}' is not valid for this endpoint; expecting '${region}'.`,
      { ArgumentName: 'LocationConstraint' },
    );
  }
  const bucket = createBucket(r.ctx.repos, { name, ownerId: r.principal.userId, region });
  return { status: 200, headers: { location: `/${bucket.name}`, 'content-length': 0 } };
};

export const headBucket: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'BucketRead');
  return { status: 200, headers: { 'x-amz-bucket-region': bucket.region, 'content-length': 0 } };
};

export const deleteBucketOp: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'DeleteBucket');
  deleteBucket(r.ctx.repos, bucket);
  r.ctx.bucketDirectory.forget(bucket.name);
  return { status: 204 };
};

export const getBucketLocation: OperationHandler = async (r) => {
  const bucket = requireBucket(r, 'BucketRead');
  // AWS answers an empty constraint for us-east-1.
  return xmlResponse(toXml('LocationConstraint', { '#text': bucket.region === 'us-east-1' ? '' : bucket.region }));
};
