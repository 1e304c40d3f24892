// /api/v3/cdn/assets: upload (streamed multipart), list, download, delete, and signed CDN URLs. Thin:
// the work lives in src/assets (upload, delivery) and src/assets/signed-url.ts. Every route is owner-only:
// another user's asset is "not found", never "forbidden", so ids reveal nothing.
import multipart from '@fastify/multipart';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { decideDelivery, hostnameOf, isBlobGone, openAssetBody, sendAssetBody, type DeliveryStyle } from '../../assets/delivery.js';
import { drainLimitsFor, drainRequest } from '../../http/request-drain.js';
import { multipartLimits, uploadAsset } from '../../assets/upload.js';
import { assetListItem, assetView, displayKey, publicUrl, type ViewContext } from '../../assets/view.js';
import type { AppContext } from '../../context.js';
import type { AssetRecord } from '../../db/repos/assets.js';
import { DEFAULT_EXPIRES_IN, MAX_EXPIRES_IN, MIN_EXPIRES_IN, UrlSigner } from '../../assets/signed-url.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { ownedAsset, ownedProject } from './owned.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { Asset, AssetListItem, ERROR_RESPONSES, ErrorBody, Pagination, SuccessMessage } from './schemas.js';
import { DEFAULT_LIMIT, MAX_LIMIT, pageCount, parseAssetListQuery } from './asset-list-query.js';

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
type IdParams = Static<typeof IdParams>;

const UPLOAD_RESPONSES = {
  201: Type.Object({ success: Type.Boolean(), asset: Asset }),
  ...ERROR_RESPONSES,
  402: ErrorBody,
  413: ErrorBody,
  415: ErrorBody,
} as const;

const LIST_RESPONSES = {
  200: Type.Object({ success: Type.Boolean(), assets: Type.Array(AssetListItem), pagination: Pagination }),
  ...ERROR_RESPONSES,
} as const;

/** The bytes themselves (hijacked replies: Fastify never serializes them, the document shows them). */
const bytes = (description: string, example: string) => ({ description, content: { 'application/octet-stream': { schema: Type.String({ contentMediaType: 'application/octet-stream' }), example } } });

const DOWNLOAD_RESPONSES = {
  200: bytes("The asset's bytes, with its Content-Type, Content-Disposition, ETag and Last-Modified", 'hello'),
  206: bytes('The range asked for (Range: bytes=...), with Content-Range', 'he'),
  304: { description: 'Not modified (If-None-Match, If-Modified-Since)' },
  ...ERROR_RESPONSES,
  412: ErrorBody,
  416: ErrorBody,
} as const;

const SignedUrlResponse = Type.Object({ success: Type.Boolean(), url: Type.String(), expiresAt: Type.String() });

/** The upload form (multipart/form-data), read by uploadAsset (src/assets/upload.ts). */
const UploadForm = Type.Object(
  {
    file: Type.String({ contentMediaType: 'application/octet-stream', description: "The file: one part named 'file', with its file name" }),
    visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')], { description: 'Default public; unsafe active content is private whatever is asked' })),
    kind: Type.Optional(Type.Union([Type.Literal('file'), Type.Literal('artifact')])),
    projectId: Type.Optional(Type.String({ description: "One of the caller's projects" })),
    deploymentId: Type.Optional(Type.String({ description: "A deployment of that project" })),
  },
  { examples: [{ file: 'hello', visibility: 'public' }] },
);

/** The asset list's query, read leniently (asset-list-query.ts): a bad page or limit means the default. */
const ListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1, description: 'An invalid value means 1' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: `An invalid value means ${DEFAULT_LIMIT}; above ${MAX_LIMIT} means ${MAX_LIMIT}` })),
  search: Type.Optional(Type.String({ description: 'Part of the file name or key' })),
  kind: Type.Optional(Type.Union([Type.Literal('file'), Type.Literal('artifact')])),
  projectId: Type.Optional(Type.String({ description: "Only this project's assets (404 when not the caller's)" })),
  sort: Type.Optional(Type.Union([Type.Literal('createdAt'), Type.Literal('name'), Type.Literal('size')], { description: 'Default createdAt, newest first' })),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { description: 'Default desc for createdAt, asc for name and size' })),
});

const SignedUrlBody = Type.Object(
  { expiresIn: Type.Optional(Type.Integer({ minimum: MIN_EXPIRES_IN, maximum: MAX_EXPIRES_IN, default: DEFAULT_EXPIRES_IN, description: 'Seconds' })) },
  { additionalProperties: false, examples: [{ expiresIn: 3600 }] },
);

/** The authenticated download: always an attachment, never cached by shared caches. */
const DOWNLOAD_STYLE: DeliveryStyle = { disposition: 'attachment', cacheControl: 'private, no-store' };
// The dashboard's thumbnails: inline, kept by the browser a few minutes, and not a download (the owner
// looking at their list is not traffic to count). Raster images only (an SVG is a document), and small.
const PREVIEW_STYLE: DeliveryStyle = { disposition: 'inline', cacheControl: 'private, max-age=300' };
const PREVIEW_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif']);
export const PREVIEW_MAX_BYTES = 5 * 1024 * 1024;

function declaredLength(request: FastifyRequest): number | undefined {
  const raw = request.headers['content-length'];
  return raw !== undefined && /^\d{1,16}$/.test(raw) ? Number(raw) : undefined;
}

/** An AbortSignal that fires when the client goes away before its request body ended. */
function clientGone(request: FastifyRequest): AbortSignal {
  const controller = new AbortController();
  request.raw.once('close', () => {
    if (!request.raw.complete) controller.abort(new Error('client went away'));
  });
  return controller.signal;
}

/** Parses `{ expiresIn?: integer seconds }` by hand, so a missing or empty body means the default. */
function parseExpiresIn(body: unknown): number {
  if (body === undefined || body === null) return DEFAULT_EXPIRES_IN;
  if (typeof body !== 'object' || Array.isArray(body)) throw badRequest('The body must be a JSON object');
  const value = (body as Record<string, unknown>)['expiresIn'];
  if (value === undefined) return DEFAULT_EXPIRES_IN;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < MIN_EXPIRES_IN || value > MAX_EXPIRES_IN) {
    throw badRequest(`expiresIn must be an integer number of seconds from ${MIN_EXPIRES_IN} to ${MAX_EXPIRES_IN}`);
  }
  return value;
}

export const assetRoutes: RouteModule = (app, { ctx, requireScope }) => {
  // Its own encapsulated context: the multipart parser applies to these routes only.
  void app.register(async (scope) => {
    await scope.register(multipart, {
      limits: multipartLimits(ctx.config.maxObjectSize),
      // The meter answers 413 itself; busboy should never truncate silently first.
      throwFileSizeLimit: false,
    });
    registerRoutes(scope, ctx, requireScope);
  });
};

function registerRoutes(app: Parameters<RouteModule>[0], ctx: AppContext, requireScope: Parameters<RouteModule>[1]['requireScope']): void {
  // Authentication runs onRequest, before any body parser could read a byte.
  const read = requireScope('assets:read');
  const write = requireScope('assets:write');
  const view = (): ViewContext => ({ cdnBase: ctx.endpoints.cdn, storageName: ctx.config.storageName });
  const signer = UrlSigner.fromMasterKey(ctx.masterKey, ctx.clock);

  const callersAsset = (request: FastifyRequest, id: string): Promise<AssetRecord> => ownedAsset(ctx, principalOf(request).userId, id);

  app.post(
    '/api/v3/cdn/assets',
    {
      onRequest: [
        write,
        async (request) => {
          // From the header: no body parser has run yet, and none but the multipart one may.
          if (!/^multipart\/form-data\b/i.test(request.headers['content-type'] ?? '')) {
            throw new ApiError(415, 'unsupported_media_type', "Uploads must be multipart/form-data with a file part named 'file'");
          }
        },
      ],
      schema: {
        operationId: 'uploadAsset',
        summary: 'Upload a file (multipart/form-data)',
        description: 'Stores the file, records an upload usage event and, with credits on, charges for it (402 when the balance cannot pay).',
        tags: ['assets'],
        documentedBody: { schema: UploadForm, contentType: 'multipart/form-data' },
        response: UPLOAD_RESPONSES,
      },
    },
    async (request, reply) => {
      const { userId } = principalOf(request);
      try {
        const asset = await uploadAsset(ctx, {
          userId,
          declaredLength: declaredLength(request),
          // A lazy generator: the body is not touched until uploadAsset iterates it, after its checks.
          parts: request.parts(),
          signal: clientGone(request),
          req: request.raw,
          hostname: hostnameOf(request.headers.host),
          clientIp: request.ip,
        });
        void reply.code(201);
        return { success: true, asset: assetView(asset, view()) };
      } catch (err) {
        // Whatever is left of the body is read first, so the client can read the refusal.
        if (!(await drainRequest(request.raw, drainLimitsFor(declaredLength(request), ctx.config.maxObjectSize)))) void reply.header('connection', 'close');
        throw err;
      }
    },
  );

  const listSchema = { operationId: 'listAssets', summary: "A page of the caller's assets", tags: ['assets'], documentedQuery: ListQuery, response: LIST_RESPONSES };
  app.get('/api/v3/cdn/assets', { onRequest: read, schema: listSchema }, async (request) => {
    const { userId } = principalOf(request);
    const q = parseAssetListQuery(request.query);
    const { assets, total } = await ctx.repos.assets.page({
      userId,
      ...(q.search !== undefined ? { search: q.search } : {}),
      ...(q.kind !== undefined ? { kind: q.kind } : {}),
      ...(q.sort !== undefined ? { sort: q.sort } : {}),
      ...(q.projectId !== undefined ? { projectId: (await ownedProject(ctx, userId, q.projectId)).id } : {}),
      limit: q.limit,
      offset: (q.page - 1) * q.limit,
    });
    const v = view();
    return {
      success: true,
      assets: assets.map((a) => assetListItem(a, v)),
      pagination: { page: q.page, limit: q.limit, total, pages: pageCount(total, q.limit) },
    };
  });

  app.get<{ Params: IdParams }>(
    '/api/v3/cdn/assets/:id/download',
    {
      onRequest: read,
      schema: {
        operationId: 'downloadAsset',
        summary: "An asset's bytes, as an attachment",
        description: 'Raw bytes, not JSON (errors before the first byte are JSON). Takes Range, If-Match, If-None-Match, If-Modified-Since and If-Unmodified-Since.',
        tags: ['assets'],
        params: IdParams,
        response: DOWNLOAD_RESPONSES,
      },
    },
    async (request, reply) => download(ctx, request, reply, await callersAsset(request, request.params.id)),
  );

  app.get<{ Params: IdParams }>(
    '/api/v3/cdn/assets/:id/preview',
    {
      onRequest: read,
      schema: {
        operationId: 'previewAsset',
        summary: "A raster image asset's bytes, inline (the dashboard's thumbnails)",
        description: 'PNG, JPEG, GIF, WebP and AVIF up to 5 MiB; anything else is 415 not_previewable. Not counted as a download.',
        tags: ['assets'],
        params: IdParams,
        response: { ...DOWNLOAD_RESPONSES, 415: ErrorBody },
      },
    },
    async (request, reply) => {
      const asset = await callersAsset(request, request.params.id);
      if (!PREVIEW_TYPES.has(asset.contentType.split(';')[0]!.trim().toLowerCase()) || asset.size > PREVIEW_MAX_BYTES) {
        throw new ApiError(415, 'not_previewable', 'Only PNG, JPEG, GIF, WebP and AVIF images up to 5 MiB have a preview; download the asset instead');
      }
      return download(ctx, request, reply, asset, PREVIEW_STYLE, false);
    },
  );

  app.delete<{ Params: IdParams }>(
    '/api/v3/cdn/assets/:id',
    {
      onRequest: write,
      schema: { operationId: 'deleteAsset', summary: 'Delete an asset (and its cached copies)', tags: ['assets'], params: IdParams, response: { 200: SuccessMessage, ...ERROR_RESPONSES } },
    },
    async (request) => {
      const asset = await callersAsset(request, request.params.id);
      const deleted = await ctx.repos.transact(async (r) => {
        if (!(await r.assets.delete(asset.id))) return false;
        await r.usage.record({
          userId: asset.userId, assetId: asset.id, eventType: 'delete', source: 'api', bytes: asset.size,
          hostname: hostnameOf(request.headers.host), statusCode: 200, metadata: { key: displayKey(asset) },
          clientIp: request.ip,
        });
        return true;
      });
      // A concurrent delete of the same asset won the race.
      if (!deleted) throw notFound('Asset not found');
      ctx.assetDirectory.forget(asset.id);
      ctx.cachePurges.purge({ kind: 'asset', assetId: asset.id });
      // The row is gone durably before the bytes go (a crash in between must not leave a row without
      // bytes); a reader still streaming them keeps them until it is done (blob leases).
      await ctx.durability.sync();
      await ctx.leases.removeWhenFree(asset.blobId);
      return { success: true, message: 'Asset deleted' };
    },
  );

  app.post<{ Params: IdParams }>(
    '/api/v3/cdn/assets/:id/signed-url',
    {
      onRequest: read,
      schema: {
        operationId: 'createSignedUrl',
        summary: 'A signed, expiring CDN URL of an asset (private ones too)',
        tags: ['assets'],
        params: IdParams,
        documentedBody: { schema: SignedUrlBody, required: false },
        response: { 200: SignedUrlResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const asset = await callersAsset(request, request.params.id);
      const expiresIn = parseExpiresIn(request.body);
      const sig = signer.sign(asset, expiresIn);
      return {
        success: true,
        url: `${publicUrl(ctx.endpoints.cdn, asset)}?${UrlSigner.query(sig)}`,
        expiresAt: new Date(sig.expires * 1000).toISOString(),
      };
    },
  );
}

/** GET/HEAD of the caller's asset: JSON errors before the first byte, raw bytes after. */
async function download(
  ctx: AppContext, request: FastifyRequest, reply: FastifyReply, asset: AssetRecord, style: DeliveryStyle = DOWNLOAD_STYLE, recorded = true,
): Promise<unknown> {
  const decision = decideDelivery(asset, request.headers, style);
  switch (decision.kind) {
    case 'precondition-failed':
      throw new ApiError(412, 'precondition_failed', 'A precondition (If-Match / If-Unmodified-Since) failed');
    case 'range-not-satisfiable':
      void reply.header('content-range', decision.contentRange);
      throw new ApiError(416, 'range_not_satisfiable', 'The requested range is not satisfiable');
    case 'not-modified':
      return reply.code(304).headers(decision.headers).send();
    case 'body':
      break;
  }
  const head = request.method === 'HEAD';
  let body: Readable | undefined;
  try {
    // Leased here; an asset deleted since the lookup has its blob gone: answered 404 below.
    body = head ? undefined : await openAssetBody(ctx, asset, decision.range);
  } catch (err) {
    if (isBlobGone(err)) throw notFound('Asset not found');
    throw err;
  }
  reply.hijack();
  const sent = await sendAssetBody(reply.raw, decision, body, ctx.log);
  if (!head && recorded) {
    try {
      await ctx.repos.usage.record({
        userId: asset.userId, assetId: asset.id, eventType: 'download', source: 'api', bytes: sent.bytes,
        hostname: hostnameOf(request.headers.host), statusCode: sent.status, metadata: { key: displayKey(asset) },
        clientIp: request.ip,
      });
    } catch (err) {
      // The response is over; a lost usage event is logged, not answered.
      request.log.error({ err }, 'download usage event not recorded');
    }
  }
  return reply;
}
