// PUT /api/v3/buckets/:bucket/public (also /storage/buckets/:bucket/public, next to the access keys):
// `{ "public": true }` serves the bucket's objects to anyone on the CDN host at /b/<bucket>/<key>,
// `{ "public": false }` stops it (the default). Scope `buckets:manage`; :bucket is the bucket's name;
// another user's bucket and an unknown one are the same 404.
import { Type, type Static } from '@sinclair/typebox';
import { notFound } from '../errors.js';
import { BUCKET_NOT_FOUND, ownedBucket } from './owned.js';
import { principalOf, type RouteModule } from '../plugin.js';
import { ERROR_RESPONSES } from './schemas.js';

/** The same route at both places. */
const PATHS = ['/api/v3/buckets/:bucket/public', '/storage/buckets/:bucket/public'] as const;

const Params = Type.Object({ bucket: Type.String({ minLength: 1, maxLength: 255 }) });
const Body = Type.Object({ public: Type.Boolean() }, { additionalProperties: false });

export const BucketVisibility = Type.Object({ name: Type.String(), public: Type.Boolean() });
export type BucketVisibility = Static<typeof BucketVisibility>;
const Response = Type.Object({ success: Type.Boolean(), bucket: BucketVisibility });

export const bucketRoutes: RouteModule = (app, { ctx, requireScope }) => {
  const auth = requireScope('buckets:manage');
  for (const path of PATHS) {
    app.put<{ Params: Static<typeof Params>; Body: Static<typeof Body> }>(
      path,
      { onRequest: auth, schema: { params: Params, body: Body, response: { 200: Response, ...ERROR_RESPONSES } } },
      async (request) => {
        const bucket = ownedBucket(ctx, principalOf(request).userId, request.params.bucket);
        const isPublic = request.body.public;
        if (!ctx.repos.buckets.setPublic(bucket.id, isPublic)) throw notFound(BUCKET_NOT_FOUND);
        // Access is checked on every CDN request anyway; this only frees the room its objects took.
        if (!isPublic) ctx.edge.purgePrefix(bucket.id, '');
        return { success: true, bucket: { name: bucket.name, public: isPublic } };
      },
    );
  }
};
