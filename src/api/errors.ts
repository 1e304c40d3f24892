// Errors of the management API. Every one is answered as { success: false, message, code, ...extra }.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    /** Extra top-level fields of the error body (402 carries requiredCredits and balance). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export function notFound(what = 'Not found'): ApiError {
  return new ApiError(404, 'not_found', what);
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, 'invalid_request', message);
}

/** The envelope's `code` for a framework's error of this HTTP status (fastify's own: a body it could not parse, a media type it has no parser for). */
const STATUS_CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  408: 'request_timeout',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** Answers the error envelope. */
export function sendError(reply: FastifyReply, status: number, code: string, message: string, extra: Record<string, unknown> = {}): void {
  void reply.code(status).type('application/json; charset=utf-8').send({ success: false, message, code, ...extra });
}

/** An error no handler knows by its kind: a 4xx in the envelope with the framework's message, anything else a logged internal_error. */
export function sendOtherError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) return sendError(reply, status, STATUS_CODES[status] ?? 'invalid_request', err.message);
  request.log.error({ err }, 'management API error');
  sendError(reply, 500, 'internal_error', 'Internal error');
}
