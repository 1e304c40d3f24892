// POST /api/v3/buckets/:bucket/presign: a presigned S3 URL for one operation on one of the caller's
// buckets, for the dashboard's object browser (and any client without S3 credentials of its own). The
// browser then talks S3 itself, on this same origin, so listing, uploads, downloads and deletes take
// the S3 path every other client takes (its checks, versioning, quotas, request log), not a copy of it.
//   { "operation": "list", "prefix"?, "delimiter"?, "continuationToken"?, "maxKeys"? }   objects:read
//   { "operation": "get", "key", "download"?, "expiresIn"? }                                objects:read
//   { "operation": "put", "key" } | { "operation": "delete", "key" }                        objects:write
// -> { success, method, url (path and query, for this host), expiresAt }. URLs for list, put and delete
// are good for 5 minutes; a get for `expiresIn` seconds (default 300, at most 7 days: a link to share).
// They are signed with the user's console key (src/buckets/console-key.ts).
import { Type, type Static } from '@sinclair/typebox';
import { ApiError, badRequest } from '../errors.js';
import { presignPath, type PresignRequest } from '../../auth/sigv4/presign.js';
import { consoleCredentials } from '../../buckets/console-key.js';
import { ownedBucket } from './owned.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { ERROR_RESPONSES, MAX_OBJECT_KEY_BYTES as MAX_KEY_BYTES, ObjectPresignRequest } from './schemas.js';

const OPERATION_SECONDS = 300;

const Params = Type.Object({ bucket: Type.String({ minLength: 1, maxLength: 255 }) });
const Body = ObjectPresignRequest;
const Response = Type.Object({ success: Type.Boolean(), method: Type.String(), url: Type.String(), expiresAt: Type.String() });

const METHOD = { list: 'GET', get: 'GET', put: 'PUT', delete: 'DELETE' } as const;

/** The S3 query of a listing: ListObjectsV2 with the browser's folder and page. */
function listQuery(b: Static<typeof Body>): Record<string, string> {
  const q: Record<string, string> = { 'list-type': '2' };
  if (b.prefix) q['prefix'] = b.prefix;
  if (b.delimiter) q['delimiter'] = b.delimiter;
  if (b.continuationToken) q['continuation-token'] = b.continuationToken;
  if (b.maxKeys !== undefined) q['max-keys'] = String(b.maxKeys);
  return q;
}

/** A download's file name: the key's last segment, as RFC 6266 / 5987 spell any character. */
function attachment(key: string): string {
  const name = key.split('/').filter(Boolean).pop() ?? 'download';
  return `attachment; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export const bucketObjectRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.post<{ Params: Static<typeof Params>; Body: Static<typeof Body> }>(
    '/api/v3/buckets/:bucket/presign',
    {
      onRequest: requireScope('objects:read'),
      schema: {
        operationId: 'presignObjectRequest',
        summary: "A presigned S3 URL for one operation on one of the caller's buckets",
        description: "`list` and `get` need objects:read; `put` and `delete` need objects:write as well. The URL (path and query, for this host) is good for 5 minutes, a `get` for `expiresIn` seconds.",
        tags: ['buckets'],
        params: Params,
        body: Body,
        response: { 200: Response, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const b = request.body;
      if ((b.operation === 'put' || b.operation === 'delete') && !principal.scopes.has('objects:write')) {
        throw new ApiError(403, 'forbidden', "This API key lacks the 'objects:write' scope");
      }
      if (b.operation !== 'list' && b.key === undefined) throw badRequest(`body/key is required for '${b.operation}'`);
      if (b.key !== undefined && Buffer.byteLength(b.key, 'utf8') > MAX_KEY_BYTES) throw badRequest(`body/key must be at most ${MAX_KEY_BYTES} bytes`);
      if (b.expiresIn !== undefined && b.operation !== 'get') throw badRequest("body/expiresIn applies to 'get' only");
      const bucket = await ownedBucket(ctx, principal.userId, request.params.bucket);
      const credentials = await consoleCredentials(ctx.repos, ctx.masterKey, principal.userId);
      const expiresIn = b.expiresIn ?? OPERATION_SECONDS;
      const now = ctx.clock();
      const signed: PresignRequest = {
        method: METHOD[b.operation],
        host: request.host,
        bucket: bucket.name,
        ...(b.operation === 'list' ? { query: listQuery(b) } : { key: b.key as string }),
        ...(b.operation === 'get' && b.download ? { query: { 'response-content-disposition': attachment(b.key as string) } } : {}),
        ...credentials,
        region: ctx.config.region,
        expiresIn,
        now,
      };
      return { success: true, method: signed.method, url: presignPath(signed), expiresAt: new Date(now.getTime() + expiresIn * 1000).toISOString() };
    },
  );
};
