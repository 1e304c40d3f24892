// /api/v3/api-keys: a key with `api-keys:manage` lists, creates and deletes its user's API keys.
// A new key may only carry scopes the calling key holds, so the scope cannot be used to escalate.
import { Type, type Static } from '@sinclair/typebox';
import { ALL_SCOPES, mintApiKey, type Scope } from '../../auth/api-keys.js';
import type { ApiKey } from '../../db/repos/api-keys.js';
import { ApiError, notFound } from '../errors.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { ApiKeyInfo, CreatedApiKey, ERROR_RESPONSES, SuccessMessage } from './schemas.js';

const CreateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 128, pattern: '^[^\\u0000-\\u001f\\u007f]*$' })),
    scopes: Type.Array(Type.Union(ALL_SCOPES.map((s) => Type.Literal(s))), { minItems: 1, uniqueItems: true }),
  },
  { additionalProperties: false, examples: [{ name: 'uploads', scopes: ['assets:read', 'assets:write'] }] },
);

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

export function apiKeyInfo(key: ApiKey): ApiKeyInfo {
  return { id: key.id, name: key.name, scopes: key.scopes, createdAt: new Date(key.createdAt).toISOString() };
}

export const apiKeyRoutes: RouteModule = (app, { ctx, requireScope }) => {
  const auth = requireScope('api-keys:manage');

  app.get(
    '/api/v3/api-keys',
    {
      onRequest: auth,
      schema: {
        operationId: 'listApiKeys',
        summary: "The caller's API keys (never their tokens)",
        tags: ['api-keys'],
        response: { 200: Type.Object({ success: Type.Boolean(), apiKeys: Type.Array(ApiKeyInfo) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { userId } = principalOf(request);
      return { success: true, apiKeys: (await ctx.repos.apiKeys.list(userId)).map(apiKeyInfo) };
    },
  );

  app.post<{ Body: Static<typeof CreateBody> }>(
    '/api/v3/api-keys',
    {
      onRequest: auth,
      schema: {
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description: 'The token is in this answer only. A key may grant only scopes the calling key holds (403 otherwise).',
        tags: ['api-keys'],
        body: CreateBody,
        response: { 201: Type.Object({ success: Type.Boolean(), apiKey: CreatedApiKey }), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const scopes = request.body.scopes as Scope[];
      const missing = scopes.filter((s) => !principal.scopes.has(s));
      if (missing.length > 0) throw new ApiError(403, 'forbidden', `A key cannot grant scopes it does not hold: ${missing.join(', ')}`);
      const { key, token } = await mintApiKey(ctx.repos.apiKeys, principal.userId, request.body.name ?? '', scopes);
      void reply.code(201);
      return { success: true, apiKey: { ...apiKeyInfo(key), token } };
    },
  );

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/api/v3/api-keys/:id',
    {
      onRequest: auth,
      schema: { operationId: 'deleteApiKey', summary: 'Delete an API key: it stops working at once', tags: ['api-keys'], params: IdParams, response: { 200: SuccessMessage, ...ERROR_RESPONSES } },
    },
    async (request) => {
      const { userId } = principalOf(request);
      const key = await ctx.repos.apiKeys.get(request.params.id);
      if (!key || key.userId !== userId) throw notFound('API key not found');
      await ctx.repos.apiKeys.delete(key.id);
      ctx.apiKeys.forget(key.id);
      return { success: true, message: 'API key deleted' };
    },
  );
};
