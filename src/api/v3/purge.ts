// POST /api/v3/cdn/purge (`assets:write`): drops cached copies of the caller's assets and public bucket
// objects from the edge cache. Another user's asset or bucket is "not found".
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { badRequest } from '../errors.js';
import { ownedAsset, ownedBucket } from './owned.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { ERROR_RESPONSES, type PurgeRequest } from './schemas.js';

const PurgeResult = Type.Object({ success: Type.Boolean(), purged: Type.Integer() });
/** PurgeRequest, for the document: the handler tells the three forms apart itself, naming what is wrong. */
const PurgeBody = Type.Union(
  [
    Type.Object({ assetId: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false }),
    Type.Object({ bucket: Type.String({ minLength: 1, maxLength: 255 }), prefix: Type.Optional(Type.String({ maxLength: 1024 })) }, { additionalProperties: false }),
    Type.Object({ all: Type.Literal(true) }, { additionalProperties: false }),
  ],
  { examples: [{ bucket: 'photos', prefix: 'holidays/' }] },
);


const FORMS = 'one of { "assetId": "..." }, { "bucket": "...", "prefix": "..." } or { "all": true }';
const MAX_PREFIX_BYTES = 1024;

function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  const extra = Object.keys(body).find((k) => !allowed.includes(k));
  if (extra !== undefined) throw badRequest(`body has an unknown field '${extra.slice(0, 64)}': send ${FORMS}`);
}

function nonEmptyString(value: unknown, field: string, maxLength: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw badRequest(`body/${field} must be a string of 1 to ${maxLength} characters`);
  }
  return value;
}

/** By hand: the three forms are told apart by their fields, each with an error that names them. */
function parsePurgeRequest(body: unknown): PurgeRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest(`The body must be a JSON object: ${FORMS}`);
  const b = body as Record<string, unknown>;
  if ('assetId' in b) {
    onlyFields(b, ['assetId']);
    return { assetId: nonEmptyString(b['assetId'], 'assetId', 128) };
  }
  if ('bucket' in b) {
    onlyFields(b, ['bucket', 'prefix']);
    const bucket = nonEmptyString(b['bucket'], 'bucket', 255);
    const prefix = b['prefix'];
    if (prefix === undefined) return { bucket };
    if (typeof prefix !== 'string' || Buffer.byteLength(prefix, 'utf8') > MAX_PREFIX_BYTES) {
      throw badRequest(`body/prefix must be a string of at most ${MAX_PREFIX_BYTES} bytes`);
    }
    return { bucket, prefix };
  }
  if ('all' in b) {
    onlyFields(b, ['all']);
    if (b['all'] !== true) throw badRequest('body/all must be true');
    return { all: true };
  }
  throw badRequest(`Nothing to purge: send ${FORMS}`);
}

async function purge(ctx: AppContext, userId: string, request: PurgeRequest): Promise<number> {
  if ('assetId' in request) {
    return ctx.cachePurges.purge({ kind: 'asset', assetId: (await ownedAsset(ctx, userId, request.assetId)).id });
  }
  if ('bucket' in request) {
    return ctx.cachePurges.purge({ kind: 'prefix', bucketId: (await ownedBucket(ctx, userId, request.bucket)).id, prefix: request.prefix ?? '' });
  }
  return ctx.cachePurges.purge({ kind: 'owner', userId });
}

export const purgeRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.post(
    '/api/v3/cdn/purge',
    {
      onRequest: requireScope('assets:write'),
      schema: {
        operationId: 'purgeCache',
        summary: "Drop cached CDN copies of the caller's assets or public bucket objects; returns how many",
        tags: ['assets'],
        documentedBody: { schema: PurgeBody },
        response: { 200: PurgeResult, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const purged = await purge(ctx, principalOf(request).userId, parsePurgeRequest(request.body));
      return { success: true, purged };
    },
  );

};
