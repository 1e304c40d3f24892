// Bucket creation and deletion rules shared by the S3 API and the admin CLI.
import { ConstraintError, type Bucket, type Repos } from '../db/repos/index.js';
import { S3Error } from '../errors/s3-errors.js';
import { validateBucketName } from './bucket-name.js';

export interface CreateBucketInput {
  name: string;
  ownerId: string;
  region: string;
}

function alreadyExists(existing: Bucket, ownerId: string): S3Error {
  return existing.ownerId === ownerId
    ? new S3Error('BucketAlreadyOwnedByYou', undefined, { BucketName: existing.name })
    : new S3Error('BucketAlreadyExists', undefined, { BucketName: existing.name });
}

/** Validates the name and creates the bucket; BucketAlreadyOwnedByYou / BucketAlreadyExists when taken. */
export async function createBucket(repos: Pick<Repos, 'buckets'>, input: CreateBucketInput): Promise<Bucket> {
  validateBucketName(input.name);
  const existing = await repos.buckets.getByName(input.name);
  if (existing) throw alreadyExists(existing, input.ownerId);
  try {
    return await repos.buckets.insert(input);
  } catch (err) {
    if (err instanceof ConstraintError && err.reason === 'duplicate') {
      // Lost a race with a concurrent create.
      const winner = await repos.buckets.getByName(input.name);
      if (winner) throw alreadyExists(winner, input.ownerId);
    }
    throw err;
  }
}

/** Deletes an empty bucket (and its bucket keys); BucketNotEmpty while it holds objects. */
export async function deleteBucket(repos: Pick<Repos, 'buckets'>, bucket: Pick<Bucket, 'id' | 'name'>): Promise<void> {
  const result = await repos.buckets.delete(bucket.id);
  if (result === 'not_empty') throw new S3Error('BucketNotEmpty', undefined, { BucketName: bucket.name });
  if (result === 'not_found') throw new S3Error('NoSuchBucket', undefined, { BucketName: bucket.name });
}
