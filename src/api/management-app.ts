// The management API and the dashboard (/api/, /storage/, /dashboard) as one fastify instance that
// never listens: src/app.ts hands it the requests of those paths. It is the largest part of the
// server's code (fastify, its schemas, every route module), so it is loaded and built for the first
// request to it (api/management-lazy.ts).
import { randomUUID } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import { Readable } from 'node:stream';
import Fastify, { LogController, type FastifyError, type FastifyReply } from 'fastify';
import type { AppContext } from '../context.js';
import { sendError, sendOtherError } from './errors.js';
import { managementApi } from './plugin.js';
import { observeApiRequests } from './api-request-line.js';
import { parseQueryFirstValue } from './query.js';
import { lazySerializerFactory } from './lazy-schemas.js';

export interface BuiltManagement {
  listener: RequestListener;
  close(): Promise<void>;
}

export async function buildManagement(ctx: AppContext): Promise<BuiltManagement> {
  let fastifyListener: RequestListener | undefined;
  const fastify = Fastify({
    loggerInstance: ctx.log,
    // One line per request of our own (api/api-request-line.ts), under an id the client is shown. (Set on a
    // LogController: the top-level options of the same names are deprecated, FSTDEP023/024.)
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: () => randomUUID(),
    // Serializers and (below) validators compiled at each route's first use, not here (api/lazy-schemas.ts).
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() } },
    routerOptions: { querystringParser: parseQueryFirstValue },
    // Malformed URLs (bad percent-encoding, over-long segments) get the API's JSON envelope too.
    frameworkErrors: (err, _req, reply) => {
      const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
      sendError(reply as FastifyReply, status, 'invalid_request', 'Malformed request URL');
    },
    serverFactory: (handler) => {
      fastifyListener = handler;
      // Never listens: server.ts creates the http/https servers around app.ts's listener.
      return createServer();
    },
  });
  observeApiRequests(fastify, ctx);
  // A request with neither Content-Length nor Transfer-Encoding has no body, and node hands it over
  // already ended (server.ts: optimizeEmptyRequests), so its 'end' never comes: fastify's body parser
  // (a POST with a Content-Type) would wait for it for ever. It reads an empty stream instead.
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    done(null, request.raw.readableEnded ? Readable.from([]) : payload);
  });
  fastify.setNotFoundHandler((_req, reply) => {
    sendError(reply, 404, 'not_found', 'Not found');
  });
  // Errors outside the API plugin's own handler: fastify parses a body before it knows no route wants
  // it, so a bad body to an unknown path is still that path's 404; the dashboard's are enveloped too.
  fastify.setErrorHandler((err: FastifyError, request, reply) => {
    if (request.is404) return sendError(reply, 404, 'not_found', 'Not found');
    return sendOtherError(err, request, reply);
  });
  await fastify.register(managementApi, { ctx, lazySchemas: true });
  if (ctx.config.dashboard.enabled) {
    const { dashboardFiles } = await import('../web/static.js');
    await fastify.register(dashboardFiles);
  }
  await fastify.ready();
  return { listener: fastifyListener as RequestListener, close: () => fastify.close() };
}
