// Sign-in, who-am-I and sign-out of the account dashboard: /dashboard/session. A sign-in checks the
// password (src/auth/passwords.ts) and opens a session (src/auth/sessions.ts) whose token goes into the
// HttpOnly cookie and whose CSRF token goes into the answer, for the page to echo in X-CSRF-Token.
// Attempts are limited per account name and per client IP (@fastify/rate-limit's store), right or
// wrong, so a guesser gets a few tries a window whichever of the two it varies.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { SCOPES } from '../auth/api-keys.js';
import { hashPassword, MAX_PASSWORD_LENGTH, verifyPassword } from '../auth/passwords.js';
import { ApiError } from './errors.js';
import type { RouteModule } from './route-module.js';
import { ERROR_RESPONSES } from './v3/schemas.js';
import { clearSessionCookie, sameOrigin, SESSION_SCOPES, sessionPrincipal, sessionToken, setSessionCookie } from './session-cookie.js';

const SignInBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 256 }),
    password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH * 4 }),
  },
  { additionalProperties: false },
);

const SessionView = Type.Object({
  success: Type.Literal(true),
  user: Type.Object({ id: Type.String(), name: Type.String() }),
  csrfToken: Type.String(),
  /** The scopes the session may grant its API keys, and what each allows, for the dashboard's key form. */
  scopes: Type.Array(Type.Object({ name: Type.String(), description: Type.String() })),
});

const SCOPE_LIST = SESSION_SCOPES.map((name) => ({ name, description: SCOPES[name] }));

const NO_STORE = { 'cache-control': 'no-store' } as const;

export const sessionRoutes: RouteModule = (app, { ctx }) => {
  if (!ctx.config.dashboard.enabled) return;
  const { signIn } = ctx.config.dashboard;
  const timeWindow = signIn.windowSeconds * 1000;
  // The client as the CDN and the proxy see it: behind a trusted proxy (cdn.trustedProxies), the address
  // it forwards, so users behind one load balancer do not share one budget.
  const clientIp = (request: FastifyRequest): string => ctx.clients.resolve(request.raw).ip;
  const perIp = app.createRateLimit({ max: signIn.perIp, timeWindow, keyGenerator: (request) => `sign-in ip ${clientIp(request)}` });
  const perAccount = app.createRateLimit({
    max: signIn.perAccount,
    timeWindow,
    keyGenerator: (request) => `sign-in account ${(request.body as { name?: string } | undefined)?.name?.toLowerCase() ?? ''}`,
  });
  // Compared against when the name is unknown, so a wrong name costs what a wrong password does.
  let decoy: Promise<string> | undefined;

  const refuseIfLimited = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    for (const [limit, what] of [[perIp, 'from this address'], [perAccount, 'for this account']] as const) {
      const result = await limit(request);
      if (result.isAllowed === false && result.isExceeded) {
        void reply.header('retry-after', String(result.ttlInSeconds));
        throw new ApiError(429, 'rate_limited', `Too many sign-in attempts ${what}; retry in ${result.ttlInSeconds} seconds`);
      }
    }
  };

  app.post<{ Body: Static<typeof SignInBody> }>(
    '/dashboard/session',
    {
      onRequest: async (request) => {
        // A sign-in made by another site's form (login CSRF) is refused; forms cannot send JSON either.
        if (!sameOrigin(request)) throw new ApiError(403, 'csrf_failed', 'Sign-in is accepted from the dashboard only');
      },
      preHandler: refuseIfLimited,
      schema: { body: SignInBody, response: { 200: SessionView, ...ERROR_RESPONSES } },
    },
    async (request, reply) => {
      const { name, password } = request.body;
      const user = await ctx.repos.users.getByName(name);
      const stored = user ? await ctx.repos.users.passwordHash(user.id) : undefined;
      decoy ??= hashPassword(randomBytes(24).toString('base64url'));
      const matches = await verifyPassword(password, stored ?? (await decoy));
      if (!user || stored === undefined || !matches) {
        request.log.info({ name: name.slice(0, 64), ip: clientIp(request) }, 'dashboard sign-in refused');
        throw new ApiError(401, 'invalid_credentials', 'Wrong user name or password');
      }
      const session = await ctx.sessions.open(user.id);
      setSessionCookie(request, reply, session.token, ctx.config.dashboard.sessionMaxSeconds);
      void reply.headers(NO_STORE);
      return { success: true, user: { id: user.id, name: user.name }, csrfToken: session.csrfToken, scopes: SCOPE_LIST };
    },
  );

  app.get('/dashboard/session', { schema: { response: { 200: SessionView, ...ERROR_RESPONSES } } }, async (request, reply) => {
    const token = sessionToken(request);
    const session = token === undefined ? undefined : await ctx.sessions.resolve(token);
    const user = session && (await ctx.repos.users.getById(session.userId));
    if (!user || !session) throw new ApiError(401, 'unauthorized', 'Not signed in');
    void reply.headers(NO_STORE);
    return { success: true, user: { id: user.id, name: user.name }, csrfToken: session.csrfToken, scopes: SCOPE_LIST };
  });

  app.delete('/dashboard/session', { schema: { response: ERROR_RESPONSES } }, async (request, reply) => {
    // Needs the CSRF token like any state change (sessionPrincipal throws 403 without it).
    const principal = await sessionPrincipal(request, ctx.sessions);
    const token = sessionToken(request);
    if (principal && token !== undefined) await ctx.sessions.close(token);
    clearSessionCookie(request, reply);
    return { success: true, message: 'Signed out' };
  });
};
