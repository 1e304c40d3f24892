// The dashboard's session cookie and how a request proves it is the dashboard's own: the cookie is
// HttpOnly and SameSite=Strict (Secure under TLS); a state-changing request also carries the session's
// CSRF token in X-CSRF-Token, and, when the browser sends Origin, an Origin of this very host.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TLSSocket } from 'node:tls';
import { ALL_SCOPES, type ApiPrincipal, type Scope } from '../auth/api-keys.js';
import { csrfMatches, type DashboardSessions } from '../auth/sessions.js';
import { ApiError } from './errors.js';

export const SESSION_COOKIE = 's3edge_session';
export const CSRF_HEADER = 'x-csrf-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * What a signed-in user may do in the dashboard: everything an API key of theirs could be given, but
 * the gateway's own metrics (metrics:read: every user's cache and log figures), which stay an
 * operator's grant.
 */
export const SESSION_SCOPES: readonly Scope[] = ALL_SCOPES.filter((s) => s !== 'metrics:read');

function overTls(request: FastifyRequest): boolean {
  return (request.raw.socket as Partial<TLSSocket>).encrypted === true;
}

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string, maxAgeSeconds: number): void {
  void reply.setCookie(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'strict', secure: overTls(request), path: '/', maxAge: maxAgeSeconds });
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  void reply.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'strict', secure: overTls(request), path: '/' });
}

export function sessionToken(request: FastifyRequest): string | undefined {
  return request.cookies[SESSION_COOKIE] || undefined;
}

/** False when the browser names another origin than this host as the request's source. */
export function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  try {
    const scheme = overTls(request) ? 'https' : 'http';
    // Through URL both ways, so `example.com:443` and `https://example.com` compare equal.
    return new URL(origin).origin === new URL(`${scheme}://${request.headers.host ?? ''}`).origin;
  } catch {
    return false;
  }
}

/**
 * The principal of a request signed in by the session cookie: the session's user with SESSION_SCOPES
 * (the dashboard is the user's own console). A state-changing request without the session's CSRF
 * token, or from another origin, is refused 403 whatever its cookie.
 */
export async function sessionPrincipal(request: FastifyRequest, sessions: DashboardSessions): Promise<ApiPrincipal | undefined> {
  const token = sessionToken(request);
  if (token === undefined) return undefined;
  const session = await sessions.resolve(token);
  if (!session) return undefined;
  if (!SAFE_METHODS.has(request.method) && (!csrfMatches(session, request.headers[CSRF_HEADER]) || !sameOrigin(request))) {
    throw new ApiError(403, 'csrf_failed', 'This request lacks the CSRF token of its dashboard session');
  }
  return { keyId: `session:${session.id}`, userId: session.userId, scopes: new Set(SESSION_SCOPES) };
}
