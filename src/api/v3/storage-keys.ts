// /storage/buckets/:bucketId/access-keys, also mounted under /api/v3 (SPEC.md §4 leaves the prefix
// open): S3 access keys limited to one bucket of the caller's user, with `storage-keys:manage`.
// :bucketId is the bucket's name, the handle S3 users know. Another user's bucket and an unknown one
// get the same 404, so the API never tells whether a bucket name is taken. The scope check runs
// onRequest, before the body is read: without a valid token a request gets 401, never a parse or
// validation answer.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import { issueAccessKey, type IssuedAccessKey } from '../../auth/access-key-issuer.js';
import type { AppContext } from '../../context.js';
import { ConstraintError, type AccessKey, type Bucket, type BucketPermission } from '../../db/repos/index.js';
import { notFound } from '../errors.js';
import { BUCKET_NOT_FOUND, ownedBucket } from './owned.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { CreatedStorageAccessKey, ERROR_RESPONSES, StorageAccessKey, SuccessMessage } from './schemas.js';

/** The same routes answer at both prefixes. */
const PREFIXES = ['', '/api/v3'] as const;

const KEY_NOT_FOUND = 'Access key not found';

const BucketParams = Type.Object({ bucketId: Type.String() });
const KeyParams = Type.Object({ bucketId: Type.String(), keyId: Type.String() });

const CreateBody = Type.Object(
  {
    // Printable: no control characters, lone surrogates or line/paragraph separators (the name is
    // shown in dashboards and CLI tables).
    name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[^\\p{Cc}\\p{Cs}\\p{Zl}\\p{Zp}]*$' }),
    // An enum rather than a union of literals: one clear error ("must be one of: read, read_write").
    permission: Type.Unsafe<BucketPermission>({ type: 'string', enum: ['read', 'read_write'] }),
  },
  { additionalProperties: false, examples: [{ name: 'gallery CI', permission: 'read_write' }] },
);

/** operationIds: the /storage ones; under /api/v3 the same with this suffix, `aliasOf` the first. */
const ALIAS_SUFFIX = 'UnderApiV3';

function words(prefix: string, operationId: string, summary: string) {
  return { operationId: prefix === '' ? operationId : `${operationId}${ALIAS_SUFFIX}`, ...(prefix === '' ? {} : { aliasOf: operationId }), summary, tags: ['storage-keys'] };
}

const ListResponse = Type.Object({ success: Type.Boolean(), accessKeys: Type.Array(StorageAccessKey) });
const CreateResponse = Type.Object({ success: Type.Boolean(), accessKey: CreatedStorageAccessKey });

function storageAccessKey(key: AccessKey, permission: BucketPermission, bucket: Bucket): StorageAccessKey {
  return {
    id: key.accessKeyId,
    name: key.name,
    permission,
    bucket: bucket.name,
    accessKeyId: key.accessKeyId,
    createdAt: new Date(key.createdAt).toISOString(),
  };
}

async function issueBucketKey(ctx: AppContext, bucket: Bucket, permission: BucketPermission, name: string): Promise<IssuedAccessKey> {
  try {
    return await issueAccessKey(ctx.repos, ctx.masterKey, { kind: 'bucket', userId: bucket.ownerId, bucketId: bucket.id, permission, name });
  } catch (err) {
    // The bucket was deleted between the lookup and the insert.
    if (err instanceof ConstraintError && err.reason === 'in_use') throw notFound(BUCKET_NOT_FOUND);
    throw err;
  }
}

interface RouteDeps {
  ctx: AppContext;
  auth: onRequestAsyncHookHandler;
}

function register(app: FastifyInstance, { ctx, auth }: RouteDeps, prefix: string): void {
  const path = `${prefix}/storage/buckets/:bucketId/access-keys`;

  app.get<{ Params: Static<typeof BucketParams> }>(
    path,
    { onRequest: auth, schema: { ...words(prefix, 'listAccessKeys', "A bucket's S3 access keys (never their secrets)"), params: BucketParams, response: { 200: ListResponse, ...ERROR_RESPONSES } } },
    async (request) => {
      const bucket = await ownedBucket(ctx, principalOf(request).userId, request.params.bucketId);
      const keys = await ctx.repos.accessKeys.list({ kind: 'bucket', bucketId: bucket.id });
      // Bucket keys always carry a permission (the repository enforces it); the guard satisfies the types.
      const accessKeys = keys.flatMap((k) => (k.permission === null ? [] : [storageAccessKey(k, k.permission, bucket)]));
      return { success: true, accessKeys };
    },
  );

  app.post<{ Params: Static<typeof BucketParams>; Body: Static<typeof CreateBody> }>(
    path,
    {
      onRequest: auth,
      schema: {
        ...words(prefix, 'createAccessKey', 'Create an S3 access key for one bucket: the secret is in this answer only'),
        params: BucketParams,
        body: CreateBody,
        response: { 201: CreateResponse, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const bucket = await ownedBucket(ctx, principalOf(request).userId, request.params.bucketId);
      const { name, permission } = request.body;
      const { key, secretAccessKey } = await issueBucketKey(ctx, bucket, permission, name);
      // The key store may hold a cached "unknown" for this id: the key must work on its first request.
      ctx.keys.invalidate(key.accessKeyId);
      void reply.code(201);
      return {
        success: true,
        accessKey: {
          ...storageAccessKey(key, permission, bucket),
          secretAccessKey,
          endpoint: ctx.endpoints.s3,
          region: bucket.region,
          forcePathStyle: true,
        },
      };
    },
  );

  app.delete<{ Params: Static<typeof KeyParams> }>(
    `${path}/:keyId`,
    { onRequest: auth, schema: { ...words(prefix, 'deleteAccessKey', 'Delete an access key: it stops working at once'), params: KeyParams, response: { 200: SuccessMessage, ...ERROR_RESPONSES } } },
    async (request) => {
      const bucket = await ownedBucket(ctx, principalOf(request).userId, request.params.bucketId);
      const key = await ctx.repos.accessKeys.get(request.params.keyId);
      // Account and root keys, and keys of other buckets, are not this bucket's keys.
      if (!key || key.kind !== 'bucket' || key.bucketId !== bucket.id) throw notFound(KEY_NOT_FOUND);
      const deleted = await ctx.repos.accessKeys.delete(key.accessKeyId);
      // Drop the cached secret now, so the very next S3 request with this key is refused.
      ctx.keys.invalidate(key.accessKeyId);
      if (!deleted) throw notFound(KEY_NOT_FOUND);
      return { success: true, message: 'Access key deleted' };
    },
  );
}

export const storageKeyRoutes: RouteModule = (app, { ctx, requireScope }) => {
  const deps: RouteDeps = { ctx, auth: requireScope('storage-keys:manage') };
  for (const prefix of PREFIXES) register(app, deps, prefix);
};
