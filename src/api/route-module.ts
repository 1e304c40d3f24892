// What a route module of the management API is given and may ask of a request: the contract between
// the plugin (api/plugin.ts), which authenticates and mounts the modules, and the modules themselves
// (api/v3/*, api/session-routes.ts), kept apart from both so that neither imports the other.
import type { TObject, TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { ApiPrincipal, Scope } from '../auth/api-keys.js';
import type { AppContext } from '../context.js';
import type { ProjectsService } from '../projects/service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the scope check of an authenticated route. */
    apiPrincipal: ApiPrincipal | null;
  }

  /**
   * A route's words for the OpenAPI document (src/api/openapi): Fastify ignores these keys of a route's
   * schema (the first four are the ones @fastify/swagger reads too). Its body, params and response
   * schemas are the document's as they are.
   */
  interface FastifySchema {
    operationId?: string;
    summary?: string;
    description?: string;
    tags?: readonly string[];
    /** Query parameters the handler reads itself (leniently, SPEC.md §7): documented, never validated by Fastify. */
    documentedQuery?: TObject;
    /** A body the handler reads itself (multipart, or checked by hand to word its own errors): documented, never validated by Fastify. */
    documentedBody?: { schema: TSchema; contentType?: string; required?: boolean };
    /** The operationId of the same operation at its first path (/storage/... and /api/v3/storage/...). */
    aliasOf?: string;
  }
}

/** The onRequest hook of requireScope, carrying its scope for the OpenAPI document. */
export type ScopeHook = onRequestAsyncHookHandler & { readonly scope: Scope };

export interface ApiDeps {
  ctx: AppContext;
  /** The project and hostname routes' and the hostname-TLS routes' one ProjectsService. */
  projects: ProjectsService;
  /**
   * An onRequest hook: 401 without a valid bearer token (or dashboard session cookie), 403 without
   * `scope` (or, for a session, without its CSRF token). It runs before any body parser, so an
   * unauthenticated client never gets a parse or validation answer, nor has its body read.
   */
  requireScope(scope: Scope): ScopeHook;
}

/** The principal of a request that passed requireScope. */
export function principalOf(request: FastifyRequest): ApiPrincipal {
  if (!request.apiPrincipal) throw new Error('route reached without authentication');
  return request.apiPrincipal;
}

export type RouteModule = (app: FastifyInstance, deps: ApiDeps) => void;
