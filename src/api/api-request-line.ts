// One log line per management API or dashboard request (docs/ARCHITECTURE.md "Request logs"), in place
// of fastify's two ("incoming request", "request completed"), with the fields of the S3 line: the
// request id the client got (x-request-id), the route, status, the envelope's error code, bytes,
// duration, client address and the authenticated user. No header, query string or body: tokens and
// passwords travel there.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { AppContext } from '../context.js';
import { methodLabel } from '../metrics/request-metrics.js';
import { pathOf } from '../http/request-target.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Taken when the request arrives, while the socket still knows its peer. */
    logClientIp: string;
    /** The JSON envelope's `code` of an error answer. */
    logErrorCode: string | null;
  }
}

/** The error code of a JSON error envelope (`{ success: false, message, code }`). */
const ENVELOPE_CODE = /"code":"([A-Za-z0-9_.-]{1,64})"/;

const MAX_PATH = 1024;

function contentLength(value: unknown): number {
  const n = Number(value ?? 0);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** The line's fields; its requestId comes from the request's child logger (requestIdLogLabel). */
function lineOf(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
  const path = pathOf(request.url);
  return {
    surface: 'api',
    method: request.method,
    route: request.routeOptions.url ?? null,
    path: path.length > MAX_PATH ? path.slice(0, MAX_PATH) : path,
    userId: request.apiPrincipal?.userId ?? null,
    status: reply.statusCode,
    errorCode: request.logErrorCode,
    bytesIn: contentLength(request.headers['content-length']),
    bytesOut: contentLength(reply.getHeader('content-length')),
    durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
    clientIp: request.logClientIp,
  };
}

/**
 * Every API and dashboard request: an `x-request-id` header on its answer, one log line (info, warn
 * for a 5xx) and its count in the request metrics. Registered on the root instance, before the routes.
 */
export function observeApiRequests(fastify: FastifyInstance<Server, IncomingMessage, ServerResponse, Logger>, ctx: AppContext): void {
  fastify.decorateRequest('logClientIp', '');
  fastify.decorateRequest('logErrorCode', null);
  fastify.addHook('onRequest', (request, reply, done) => {
    request.logClientIp = ctx.clients.clientIp(request.raw.socket.remoteAddress, request.headers);
    void reply.header('x-request-id', request.id);
    done();
  });
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode >= 400 && typeof payload === 'string') request.logErrorCode = ENVELOPE_CODE.exec(payload)?.[1] ?? null;
    done(null, payload);
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const line = lineOf(request, reply);
    if (reply.statusCode >= 500) request.log.warn(line, 'api request');
    else request.log.info(line, 'api request');
    ctx.requestMetrics.observe({
      surface: 'api',
      operation: `${methodLabel(request.method)} ${request.routeOptions.url ?? 'unmatched'}`,
      status: reply.statusCode,
      durationMs: reply.elapsedTime,
      bytesIn: line['bytesIn'] as number,
      bytesOut: line['bytesOut'] as number,
    });
    done();
  });
}
