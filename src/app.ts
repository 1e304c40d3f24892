// buildApp(ctx): the request listener for every surface. Requests for the CDN hostname go to the CDN;
// S3 traffic goes straight to the S3 handler (raw URLs matter: keys are opaque bytes, no router
// normalisation); the management prefixes (/api/, /storage/) go through fastify. Never listens, never
// reads env.
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import Fastify, { type FastifyReply } from 'fastify';
import type { AppContext } from './context.js';
import { createS3Handler } from './s3/handler.js';
import { managementApi } from './api/plugin.js';
import { parseQueryFirstValue } from './api/query.js';
import { createCdnHandler, isCdnHost, notFound as cdnNotFound } from './cdn/handler.js';

export interface App {
  close(): Promise<void>;
  /** Serves one request; attach it to any number of http/https servers. */
  listener: RequestListener;
  /** The CDN's own listener: CDN requests (Host = the CDN hostname) only, a bare 404 for anything else. */
  cdnListener: RequestListener;
}

/** Path prefixes of the management API; `api` and `storage` are therefore reserved bucket names. */
export function isManagementPath(url: string | undefined): boolean {
  return !!url && (url === '/api' || url.startsWith('/api/') || url.startsWith('/api?') || url.startsWith('/storage/'));
}

export async function buildApp(ctx: AppContext): Promise<App> {
  let fastifyListener: RequestListener | undefined;
  const fastify = Fastify({
    loggerInstance: ctx.log,
    routerOptions: { querystringParser: parseQueryFirstValue },
    // Malformed URLs (bad percent-encoding, over-long segments) get the API's JSON envelope too.
    frameworkErrors: (err, _req, reply) => {
      const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
      void (reply as FastifyReply).code(status).send({ success: false, message: 'Malformed request URL', code: 'invalid_request' });
    },
    serverFactory: (handler) => {
      fastifyListener = handler;
      // Never listens: server.ts creates the http/https servers around `listener`.
      return createServer();
    },
  });
  fastify.setNotFoundHandler((_req, reply) => {
    void reply.code(404).send({ success: false, message: 'Not found', code: 'not_found' });
  });
  await fastify.register(managementApi, { ctx });
  await fastify.ready();
  const management = fastifyListener as RequestListener;
  const s3 = createS3Handler(ctx);
  const cdn = createCdnHandler(ctx);
  const cdnHostname = ctx.config.cdn.hostname;

  const listener: RequestListener = (req: IncomingMessage, res: ServerResponse) => {
    if (isCdnHost(req.headers.host, cdnHostname)) {
      void cdn(req, res);
      return;
    }
    if (isManagementPath(req.url)) {
      // The management API reads bodies itself: let clients that wait for 100 Continue send them.
      if ((req.headers.expect ?? '').toLowerCase() === '100-continue') res.writeContinue();
      management(req, res);
      return;
    }
    void s3(req, res);
  };
  const cdnListener: RequestListener = (req, res) => {
    if (isCdnHost(req.headers.host, cdnHostname)) void cdn(req, res);
    else cdnNotFound(req, res);
  };
  return { listener, cdnListener, close: () => fastify.close() };
}
