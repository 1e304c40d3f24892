// What a route module of the management API is given and may ask of a request: the contract between
// the plugin (api/plugin.ts), which authenticates and mounts the modules, and the modules themselves
// (api/v3/*, api/session-routes.ts), kept apart from both so that neither imports the other.
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { ApiPrincipal, Scope } from '../auth/api-keys.js';
import type { AppContext } from '../context.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the scope check of an authenticated route. */
    apiPrincipal: ApiPrincipal | null;
  }
}

export interface ApiDeps {
  ctx: AppContext;
  /**
   * An onRequest hook: 401 without a valid bearer token (or dashboard session cookie), 403 without
   * `scope` (or, for a session, without its CSRF token). It runs before any body parser, so an
   * unauthenticated client never gets a parse or validation answer, nor has its body read.
   */
  requireScope(scope: Scope): onRequestAsyncHookHandler;
}

/** The principal of a request that passed requireScope. */
export function principalOf(request: FastifyRequest): ApiPrincipal {
  if (!request.apiPrincipal) throw new Error('route reached without authentication');
  return request.apiPrincipal;
}

export type RouteModule = (app: FastifyInstance, deps: ApiDeps) => void;
