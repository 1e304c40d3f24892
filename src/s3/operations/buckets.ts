// Bucket-level operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation.
import { visibleBuckets } from '../../auth/authorize.js';
import { authorize } from '../../auth/authorize.js';
import { S3Error } from '../../errors/s3-errors.js';
import { createBucket, deleteBucket } from '../../buckets/bucket-service.js';
import { isoDate, requireBucket, type OperationHandler } from '../operation.js';
import { cannedAcl, publicAclOf, setBucketAcl } from './acl.js';
import { xmlResponse, type S3Response } from '../respond.js';
import type { Bucket } from '../../db/repos/index.js';
import { readXmlBody, toXml } from '../xml.js';

function owner(userId: string): { ID: string; DisplayName: string } {
  return { ID: userId, DisplayName: userId };
}

export const listBuckets: OperationHandler = async (r) => {
  // No bucket policy can list buckets: an unsigned ListBuckets is refused as on AWS.
  if (r.principal.kind === 'anonymous') throw new S3Error('AccessDenied');
  const buckets = await visibleBuckets(r.principal, r.ctx.repos);
  return xmlResponse(
    toXml('ListAllMyBucketsResult', {
      Owner: owner(r.principal.userId),
      Buckets: {
        Bucket: buckets.map((b) => ({ Name: b.name, CreationDate: isoDate(b.createdAt), BucketRegion: b.region })),
      },
    }),
  );
};

function created(name: string): S3Response {
  return { status: 200, headers: { location: `/${name}`, 'content-length': 0 } };
}

/**
 * Creating a bucket one already owns, as AWS answers it (error table, BucketAlreadyOwnedByYou): 200
 * in us-east-1, AWS's legacy behaviour (which also resets the ACLs; here they are fixed, nothing to
 * reset), and 409 BucketAlreadyOwnedByYou in every other region. The bucket's region decides.
 */
function alreadyOwned(bucket: Pick<Bucket, 'name' | 'region'>): S3Response {
  if (bucket.region === 'us-east-1') return created(bucket.name);
  throw new S3Error('BucketAlreadyOwnedByYou', undefined, { BucketName: bucket.name });
}

export const createBucketOp: OperationHandler = async (r) => {
  const name = r.addr.bucket as string;
  if (r.principal.kind === 'bucket') {
    // A bucket key may not create buckets, but its own bucket exists and it may use it: it gets the
    // owner's answer, which rclone (its check-bucket step), aws cli and restic take as success.
    // Any other name is AccessDenied, without learning whether that bucket exists.
    const own = name === r.principal.bucketName ? await r.ctx.repos.buckets.getByName(name) : undefined;
    if (!own) throw new S3Error('AccessDenied');
    return alreadyOwned(own);
  }
  if (r.principal.kind === 'anonymous') throw new S3Error('AccessDenied');
  authorize(r.principal, 'CreateBucket');
  const acl = publicAclOf(cannedAcl(r));
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
  try {
    const bucket = await createBucket(r.ctx.repos, { name, ownerId: r.principal.userId, region });
    // x-amz-acl public-read / public-read-write opens the new bucket to everyone (operations/acl.ts).
    if (acl !== null) await setBucketAcl(r, bucket, acl);
    return created(bucket.name);
  } catch (err) {
    const mine = err instanceof S3Error && err.code === 'BucketAlreadyOwnedByYou' ? await r.ctx.repos.buckets.getByName(name) : undefined;
    if (mine) return alreadyOwned(mine);
    throw err;
  }
};

export const headBucket: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  return { status: 200, headers: { 'x-amz-bucket-region': bucket.region, 'content-length': 0 } };
};

export const deleteBucketOp: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'DeleteBucket');
  await deleteBucket(r.ctx.repos, bucket);
  r.ctx.bucketDirectory.forget(bucket.name);
  return { status: 204 };
};

export const getBucketLocation: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  // AWS answers an empty constraint for us-east-1.
  return xmlResponse(toXml('LocationConstraint', { '#text': bucket.region === 'us-east-1' ? '' : bucket.region }));
};
