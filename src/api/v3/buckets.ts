// PUT /api/v3/buckets/:bucket/public (also /storage/buckets/:bucket/public, next to the access keys):
// `{ "public": true }` serves the bucket's objects to anyone on the CDN host at /b/<bucket>/<key>,
// `{ "public": false }` stops it (the default). Scope `buckets:manage`; :bucket is the bucket's name;
// another user's bucket and an unknown one are the same 404.
// GET /api/v3/buckets lists the caller's buckets; POST /api/v3/buckets `{ "name": "photos" }` creates
// one in the gateway's region, with the rules of S3 CreateBucket (src/buckets/bucket-service.ts).
import { Type, type Static } from '@sinclair/typebox';
import { ApiError, notFound } from '../errors.js';
import { createBucket } from '../../buckets/bucket-service.js';
import { S3Error } from '../../errors/s3-errors.js';
import { BUCKET_NOT_FOUND, ownedBucket } from './owned.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { BucketView, BucketVisibility, ERROR_RESPONSES, ErrorBody } from './schemas.js';

/** The same route at both places. */
const PATHS = ['/api/v3/buckets/:bucket/public', '/storage/buckets/:bucket/public'] as const;

const Params = Type.Object({ bucket: Type.String({ minLength: 1, maxLength: 255 }) });
const Body = Type.Object({ public: Type.Boolean() }, { additionalProperties: false, examples: [{ public: true }] });

const Response = Type.Object({ success: Type.Boolean(), bucket: BucketVisibility });

const ListResponse = Type.Object({ success: Type.Boolean(), buckets: Type.Array(BucketView) });
const CreateBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false, examples: [{ name: 'photos' }] });
const CreateResponse = Type.Object({ success: Type.Boolean(), bucket: BucketView });

export const bucketRoutes: RouteModule = (app, { ctx, requireScope }) => {
  const auth = requireScope('buckets:manage');
  const listSchema = { operationId: 'listBuckets', summary: "The caller's buckets", tags: ['buckets'], response: { 200: ListResponse, ...ERROR_RESPONSES } };
  app.get('/api/v3/buckets', { onRequest: auth, schema: listSchema }, async (request) => {
    const buckets = [];
    for (const b of await ctx.repos.buckets.list(principalOf(request).userId)) {
      buckets.push({
        name: b.name,
        region: b.region,
        public: b.public,
        objects: await ctx.repos.buckets.countObjects(b.id),
        createdAt: new Date(b.createdAt).toISOString(),
      });
    }
    return { success: true, buckets };
  });
  app.post<{ Body: Static<typeof CreateBody> }>(
    '/api/v3/buckets',
    {
      onRequest: auth,
      schema: {
        operationId: 'createBucket',
        summary: "Create a bucket in the gateway's region",
        description: "S3's naming rules (400 invalid_bucket_name); 409 bucket_exists when the name is taken, by the caller or anyone.",
        tags: ['buckets'],
        body: CreateBody,
        response: { 201: CreateResponse, ...ERROR_RESPONSES, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      try {
        const b = await createBucket(ctx.repos, { name: request.body.name, ownerId: principalOf(request).userId, region: ctx.config.region });
        ctx.bucketDirectory.forget(b.name);
        void reply.code(201);
        return { success: true, bucket: { name: b.name, region: b.region, public: b.public, objects: 0, createdAt: new Date(b.createdAt).toISOString() } };
      } catch (err) {
        if (!(err instanceof S3Error)) throw err;
        if (err.code === 'InvalidBucketName') throw new ApiError(400, 'invalid_bucket_name', err.message);
        if (err.code === 'BucketAlreadyOwnedByYou') throw new ApiError(409, 'bucket_exists', 'You already own a bucket of that name');
        if (err.code === 'BucketAlreadyExists') throw new ApiError(409, 'bucket_exists', 'That bucket name is taken; bucket names are shared by every user of the gateway');
        throw err;
      }
    },
  );
  for (const path of PATHS) {
    app.put<{ Params: Static<typeof Params>; Body: Static<typeof Body> }>(
      path,
      {
        onRequest: auth,
        schema: {
          operationId: path === PATHS[0] ? 'setBucketPublic' : 'setBucketPublicUnderStorage',
          ...(path === PATHS[0] ? {} : { aliasOf: 'setBucketPublic' }),
          summary: "Serve a bucket's objects on the CDN host at /b/<bucket>/<key>, or stop",
          tags: ['buckets'],
          params: Params,
          body: Body,
          response: { 200: Response, ...ERROR_RESPONSES },
        },
      },
      async (request) => {
        const bucket = await ownedBucket(ctx, principalOf(request).userId, request.params.bucket);
        const isPublic = request.body.public;
        if (!(await ctx.repos.buckets.setPublic(bucket.id, isPublic))) throw notFound(BUCKET_NOT_FOUND);
        // Access is checked on every CDN request anyway; this only frees the room its objects took.
        if (!isPublic) ctx.cachePurges.purge({ kind: 'prefix', bucketId: bucket.id, prefix: '' });
        return { success: true, bucket: { name: bucket.name, public: isPublic } };
      },
    );
  }
};
