// The management API as a fastify plugin: bearer authentication with scopes, the JSON error envelope
// ({ success: false, message, code }), and the route modules of /api/v3 and /storage.
import cookie from '@fastify/cookie';
import rateLimit from '@fastify/rate-limit';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError, sendError, sendOtherError } from './errors.js';
import { Refusal, type RefusalKind } from '../errors/refusal.js';
import { isMetadataBusy, isMetadataUnavailable, isOutOfSpace, isStorageUnavailable } from '../errors/s3-errors.js';
import { isUploadBufferFull } from '../storage/upload-budget.js';
import { strictValidation } from './strict-validation.js';
import { lazyValidatorCompiler } from './lazy-schemas.js';
import type { ApiDeps, RouteModule } from './route-module.js';
import { ProjectsService } from '../projects/service.js';
import { dnsTxtLookup } from '../projects/verification.js';
import { apiKeyRoutes } from './v3/api-keys.js';
import { assetRoutes } from './v3/assets.js';
import { proxyLogRoutes } from './v3/proxy-logs.js';
import { storageKeyRoutes } from './v3/storage-keys.js';
import { summaryRoutes } from './v3/summary.js';
import { usageRoutes } from './v3/usage.js';
import { quotaRoutes } from './v3/quota.js';
import { bucketRoutes } from './v3/buckets.js';
import { bucketObjectRoutes } from './v3/bucket-objects.js';
import { metricsRoutes } from './v3/metrics.js';
import { purgeRoutes } from './v3/purge.js';
import { domainRoutes } from './v3/domains.js';
import { projectRoutes } from './v3/projects.js';
import { hostnameTlsRoutes } from './v3/hostname-tls.js';
import { sessionPrincipal } from './session-cookie.js';
import { sessionRoutes } from './session-routes.js';
import { openApiRoutes } from './openapi/routes.js';

/** A service's refusal, as the API answers it. A storage quota is 403, as S3's QuotaExceeded: the account may not store more (413 is one request's size). */
const REFUSAL_STATUS: Record<RefusalKind, number> = { invalid: 400, too_large: 413, suspended: 403, insufficient_credits: 402, quota_exceeded: 403 };

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

/** Route modules, each owning its paths. */
const ROUTES: readonly RouteModule[] = [
  // First: it sees every route registered after it (api/openapi/routes.ts).
  openApiRoutes,
  apiKeyRoutes, assetRoutes, storageKeyRoutes, summaryRoutes, usageRoutes, quotaRoutes, proxyLogRoutes, purgeRoutes, bucketRoutes, bucketObjectRoutes, metricsRoutes, domainRoutes,
  projectRoutes, hostnameTlsRoutes, sessionRoutes,
];

export interface ManagementApiOptions {
  ctx: AppContext;
  /** Compile each route's request validators at its first request (api/lazy-schemas.ts), not at ready. */
  lazySchemas?: boolean;
}

export async function managementApi(app: FastifyInstance, opts: ManagementApiOptions): Promise<void> {
  const { ctx } = opts;
  app.decorateRequest('apiPrincipal', null);
  // Request schemas validate without coercion or silent removal of unknown fields (strict-validation.ts).
  const strict = strictValidation();
  app.setValidatorCompiler(opts.lazySchemas === true ? lazyValidatorCompiler(strict.validatorCompiler) : strict.validatorCompiler);
  app.setSchemaErrorFormatter(strict.schemaErrorFormatter);

  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof ApiError) {
      if (err.statusCode === 401) void reply.header('www-authenticate', 'Bearer');
      return sendError(reply, err.statusCode, err.code, err.message, err.extra);
    }
    if (err instanceof Refusal) return sendError(reply, REFUSAL_STATUS[err.kind], err.code, err.message, err.extra);
    if (err.validation) return sendError(reply, 400, 'invalid_request', `Invalid request: ${err.message}`);
    if (isUploadBufferFull(err)) {
      // The upload budget stayed spent for the whole wait (limits.uploadBufferWaitMs): nothing was read.
      void reply.headers(err.headers);
      return sendError(reply, 503, 'slow_down', 'Too many uploads in progress; retry later');
    }
    if (isStorageUnavailable(err)) {
      // The storage backend is unavailable (the upstream S3 is down or refusing us): a retry may
      // succeed. Its headers are Retry-After only; the cause, with upstream details, is logged.
      request.log.warn({ err }, 'management API: storage unavailable');
      void reply.headers(err.headers);
      return sendError(reply, 503, 'storage_unavailable', 'Storage is temporarily unavailable; retry later');
    }
    if (isMetadataBusy(err)) {
      // Another process held meta.db's lock for the whole wait (a backup, sqlite3 by hand): nothing was done.
      request.log.warn({ err }, 'management API: metadata database busy');
      void reply.headers({ 'retry-after': '1' });
      return sendError(reply, 503, 'busy', 'The metadata database is busy (locked by another process); retry shortly');
    }
    if (isMetadataUnavailable(err)) {
      // PostgreSQL restarting or failing over: nothing was done that a retry would repeat wrongly.
      request.log.warn({ err }, 'management API: metadata database unavailable');
      void reply.headers({ 'retry-after': '1' });
      return sendError(reply, 503, 'metadata_unavailable', 'The metadata database is temporarily unavailable; retry later');
    }
    if (isOutOfSpace(err)) {
      // The disk or the metadata database is full: nothing was stored; reads still work.
      request.log.warn({ err }, 'management API: storage full, write refused');
      return sendError(reply, 507, 'storage_full', 'Storage is full; delete some files and retry');
    }
    return sendOtherError(err, request, reply);
  });

  // The dashboard's session cookie (src/api/session-cookie.ts); bearer tokens need none of it.
  await app.register(cookie);
  // Per-route limits (a route's config.rateLimit), counted per API key and per route, after the scope
  // check (preHandler) so that only authenticated requests count. The counters live in
  // @fastify/rate-limit's store: its own in memory, or in a cluster worker the supervisor's
  // (ctx.rateLimitStore, src/cluster/shared-limits.ts), so a limit holds across every worker.
  // Answers carry RateLimit-Limit / -Remaining / -Reset, and a 429 also Retry-After.
  await app.register(rateLimit, {
    global: false,
    hook: 'preHandler',
    enableDraftSpec: true,
    keyGenerator: (request) => request.apiPrincipal?.keyId ?? request.ip,
    ...(ctx.rateLimitStore ? { store: ctx.rateLimitStore } : {}),
    errorResponseBuilder: (_request, context) =>
      new ApiError(429, 'rate_limited', `Too many requests to this endpoint (at most ${context.max} per window for one API key); retry in ${context.after}`),
  });

  const dashboardOn = ctx.config.dashboard.enabled;
  const deps: ApiDeps = {
    ctx,
    projects: new ProjectsService({
      repos: ctx.repos,
      config: ctx.config,
      lookupTxt: dnsTxtLookup(ctx.config.edge),
      changed: () => ctx.edgeRoutes.invalidate(),
      purgeCache: (hostnameId) => ctx.cachePurges.purge({ kind: 'hostname', hostnameId }),
    }),
    requireScope(scope) {
      const hook = async (request: FastifyRequest): Promise<void> => {
        const token = bearerToken(request);
        // A bearer token wins: a client sending one is not the dashboard, whatever cookies it has.
        // With the dashboard turned off, sessions opened before are worth nothing either.
        const principal = token !== undefined ? await ctx.apiKeys.verify(token) : dashboardOn ? await sessionPrincipal(request, ctx.sessions) : undefined;
        if (!principal) throw new ApiError(401, 'unauthorized', 'Missing or invalid API key');
        if (!principal.scopes.has(scope)) throw new ApiError(403, 'forbidden', `This API key lacks the '${scope}' scope`);
        request.apiPrincipal = principal;
      };
      // The scope rides on the hook for the OpenAPI document (api/openapi/routes.ts).
      return Object.assign(hook, { scope });
    },
  };
  for (const register of ROUTES) register(app, deps);
}
