// Admin commands of buckets: create one for a user, list them with their object counts and stored bytes,
// delete an empty one, serve one publicly on the CDN host or stop, and set a bucket's storage quota.
import type { Bucket, Repos } from '../db/repos/index.js';
import { S3Error } from '../errors/s3-errors.js';
import { bucketNameProblem } from '../buckets/bucket-name.js';
import { createBucket, deleteBucket } from '../buckets/bucket-service.js';
import { AdminError, iso, type Command } from './command.js';
import { requireBucket, requireUser, userNames } from './lookups.js';
import { parseQuotaSize, QUOTA_FORM, quotaAnswer } from './quota-size.js';

export const BUCKET_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  buckets: { section: 'Buckets', summary: 'create, list and delete buckets; serve one publicly on the CDN' },
};

/** A running server checks the flag on every CDN request: the change applies to the next one. */
async function setBucketPublic(repos: Repos, name: string, isPublic: boolean) {
  const bucket = await requireBucket(repos, name);
  if (!(await repos.buckets.setPublic(bucket.id, isPublic))) throw new AdminError('NoSuchBucket', `no bucket named '${name}'`);
  return { name: bucket.name, public: isPublic };
}

export const BUCKET_COMMANDS = {
  buckets: {
    create: {
      args: ['NAME'],
      flags: ['user'],
      required: ['user'],
      summary: 'create a bucket owned by a user',
      example: 's3edge buckets create photos --user alice',
      run: async ({ repos, server, args, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        const name = args.NAME as string;
        const problem = bucketNameProblem(name);
        if (problem) throw new AdminError('InvalidBucketName', `invalid bucket name '${name}': the name ${problem}`);
        const { region } = await server();
        let bucket: Bucket;
        try {
          bucket = await createBucket(repos, { name, ownerId: user.id, region });
        } catch (err) {
          if (err instanceof S3Error && (err.code === 'BucketAlreadyExists' || err.code === 'BucketAlreadyOwnedByYou')) {
            const owner = await repos.buckets.getByName(name);
            const ownerName = owner ? (await repos.users.getById(owner.ownerId))?.name : undefined;
            throw new AdminError('BucketAlreadyExists', `bucket '${name}' already exists${ownerName ? ` (owner: ${ownerName})` : ''}`);
          }
          throw err;
        }
        return { name: bucket.name, owner: user.name, region: bucket.region, createdAt: iso(bucket.createdAt) };
      },
    },
    list: {
      args: [],
      flags: ['user'],
      summary: 'list buckets with their object counts, the bytes each stores (objects, noncurrent versions, unfinished multipart uploads) and its storage quota',
      example: 's3edge buckets list --user alice',
      run: async ({ repos, flags }) => {
        const ownerId = flags.user === undefined ? undefined : (await requireUser(repos, flags.user)).id;
        const nameOf = await userNames(repos);
        const rows = [];
        for (const b of await repos.buckets.list(ownerId)) {
          rows.push({
            name: b.name,
            owner: nameOf(b.ownerId),
            region: b.region,
            createdAt: iso(b.createdAt),
            objects: await repos.buckets.countObjects(b.id),
            public: b.public,
            storedBytes: await repos.storageUsage.bucketBytes(b.id),
            quotaBytes: (await repos.storageQuotas.limits(b.ownerId, b.id)).bucket,
          });
        }
        return rows;
      },
    },
    public: {
      args: ['NAME'],
      flags: [],
      summary: 'serve the bucket\'s objects to anyone on the CDN host at /b/NAME/<key>',
      example: 's3edge buckets public photos',
      run: ({ repos, args }) => setBucketPublic(repos, args.NAME as string, true),
    },
    private: {
      args: ['NAME'],
      flags: [],
      summary: 'stop serving the bucket\'s objects on the CDN host (the default)',
      example: 's3edge buckets private photos',
      run: ({ repos, args }) => setBucketPublic(repos, args.NAME as string, false),
    },
    'set-quota': {
      args: ['NAME'],
      flags: ['storage'],
      required: ['storage'],
      summary: `set a bucket's storage quota: what its objects, noncurrent versions and unfinished multipart uploads may store (--storage is ${QUOTA_FORM}); uploads past it are refused with S3 QuotaExceeded, every running server applies it within a second`,
      example: 's3edge buckets set-quota photos --storage 5GiB',
      run: async ({ repos, args, flags }) => {
        const quota = parseQuotaSize(flags.storage as string);
        const bucket = await requireBucket(repos, args.NAME as string);
        if (!(await repos.storageQuotas.setBucketQuota(bucket.id, quota))) throw new AdminError('NoSuchBucket', `no bucket named '${bucket.name}'`);
        const storedBytes = await repos.storageUsage.bucketBytes(bucket.id);
        return quotaAnswer(bucket.name, quota, storedBytes);
      },
    },
    delete: {
      args: ['NAME'],
      flags: [],
      summary: 'delete an empty bucket and its access keys',
      example: 's3edge buckets delete photos',
      run: async ({ repos, args }) => {
        const bucket = await requireBucket(repos, args.NAME as string);
        try {
          await deleteBucket(repos, bucket);
        } catch (err) {
          if (err instanceof S3Error && err.code === 'BucketNotEmpty') {
            throw new AdminError('BucketNotEmpty', `bucket '${bucket.name}' is not empty: delete its objects (and, if it was ever versioned, every version and delete marker) first`);
          }
          if (err instanceof S3Error && err.code === 'NoSuchBucket') throw new AdminError('NoSuchBucket', `no bucket named '${bucket.name}'`);
          throw err;
        }
        return { deleted: true, name: bucket.name };
      },
    },
  },
} satisfies Record<string, Record<string, Command>>;
