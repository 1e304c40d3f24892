// GET /api/v3/openapi.json, without credentials: the OpenAPI 3.1 document of this server's /api/ and
// /storage/ routes (api/openapi/document.ts). Mounted first (plugin.ts), its onRoute hook sees every
// route registered after it, itself included; the document is made on its first request and kept, so a
// start pays nothing for it. docs/openapi.json is a copy (`npm run openapi`), checked by test/e2e/openapi.test.ts.
import { Type } from '@sinclair/typebox';
import { SCOPES, type Scope } from '../../auth/api-keys.js';
import type { RouteModule } from '../route-module.js';
import { SESSION_COOKIE } from '../session-cookie.js';
import { openApiDocument, type DocumentedRoute } from './document.js';

export const OPENAPI_PATH = '/api/v3/openapi.json';

/** The paths of the management API: the dashboard's own (/dashboard/session) are not in the document. */
const DOCUMENTED = /^\/(api|storage)\//;

const DocumentShape = Type.Object(
  { openapi: Type.Literal('3.1.0'), info: Type.Object({}), paths: Type.Object({}), components: Type.Object({}) },
  { additionalProperties: true, description: 'An OpenAPI 3.1 document' },
);

function scopesOf(hooks: unknown): Scope[] {
  const list = Array.isArray(hooks) ? hooks : [hooks];
  return list.flatMap((h: unknown) => {
    const scope = typeof h === 'function' ? (h as { scope?: unknown }).scope : undefined;
    return typeof scope === 'string' && Object.hasOwn(SCOPES, scope) ? [scope as Scope] : [];
  });
}

function rateLimitOf(config: unknown): DocumentedRoute['rateLimit'] {
  const limit = (config as { rateLimit?: { max?: unknown; timeWindow?: unknown } } | undefined)?.rateLimit;
  if (typeof limit?.max !== 'number' || typeof limit.timeWindow !== 'number') return undefined;
  return { max: limit.max, windowSeconds: limit.timeWindow / 1000 };
}

export const openApiRoutes: RouteModule = (app, { ctx }) => {
  const routes: DocumentedRoute[] = [];
  app.addHook('onRoute', (route) => {
    if (!DOCUMENTED.test(route.url)) return;
    // Fastify's own HEAD twin of each GET is the GET's (the document says so once).
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      routes.push({ method, url: route.url, schema: route.schema, scopes: scopesOf(route.onRequest), rateLimit: rateLimitOf(route.config) });
    }
  });

  let body: string | undefined;
  app.get(
    OPENAPI_PATH,
    {
      schema: {
        operationId: 'getOpenApiDocument',
        summary: 'This document',
        description: 'The OpenAPI 3.1 document of this server, made from its routes. No credentials needed.',
        tags: ['meta'],
        response: { 200: { description: 'The document', content: { 'application/json': { schema: DocumentShape } } } },
      },
    },
    async (_request, reply) => {
      body ??= `${JSON.stringify(
        openApiDocument(routes, { scopes: SCOPES, sessionCookie: ctx.config.dashboard.enabled ? SESSION_COOKIE : undefined }),
        null,
        2,
      )}\n`;
      // Sent as made: a string is not serialized again by the response schema.
      return reply.type('application/json; charset=utf-8').header('cache-control', 'no-cache').send(body);
    },
  );
};
