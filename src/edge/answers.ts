// What the proxy answers itself, on a project hostname: a small HTML page when the origin cannot answer
// (502, 504: the status, one sentence and a request id, never the origin's address or the error's text),
// a line of plain text when a rule refused the request (403, 405, 413, 429 with Retry-After), and a line
// saying so when the hostname's owner ran out of credits and their delivery is suspended (402).
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import { SAFETY_HEADERS } from '../assets/content-safety.js';
import { drainRequest } from '../http/request-drain.js';
import { hasBody } from '../http/request-guard.js';
import type { Decision } from '../db/repos/hostname-model.js';
import { DELIVERY_SUSPENDED_TEXT } from '../credits/delivery-suspension.js';

export type GatewayFailure = 502 | 504;

const EXPLANATIONS: Record<GatewayFailure, string> = {
  502: 'The server behind this site could not be reached or did not answer properly.',
  504: 'The server behind this site did not answer in time.',
};

export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}

/** The page of a 502 or 504; `requestId` is ours (a UUID), so nothing in it needs escaping. */
export function gatewayPage(status: GatewayFailure, requestId: string): string {
  const title = `${status} ${reasonPhrase(status)}`;
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>\n` +
    `<body><h1>${title}</h1><p>${EXPLANATIONS[status]}</p><p>Request ID: <code>${requestId}</code></p></body></html>\n`
  );
}

const NO_STORE = { 'cache-control': 'no-store', ...SAFETY_HEADERS };

/** How long a request body may keep arriving after an answer sent before it was read. */
const LINGER_MS = 5000;

/**
 * Writes an answer given before the request body was read (a refusal, a failed origin) and ends it
 * only once the rest of that body is read and dropped (src/http/request-drain.ts, no byte bound). The
 * answer's bytes go out at once (their length is declared, so the client can read them while it still
 * sends), but node closes a connection whose request said `Connection: close` (or was HTTP/1.0) as
 * soon as the response ends, and closing with unread bytes resets the connection, which can take the
 * answer with it. A body still arriving LINGER_MS later (a large upload) is cut; one that drips is cut
 * sooner by the request guard.
 */
function answerBeforeBody(req: IncomingMessage, res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  res.writeHead(status, headers);
  const payload = req.method === 'HEAD' ? undefined : body;
  if (req.complete || !hasBody(req)) {
    res.end(payload);
    return;
  }
  if (payload !== undefined) res.write(payload);
  void drainRequest(req, { bytes: Number.POSITIVE_INFINITY, ms: LINGER_MS }).then((complete) => {
    res.end();
    if (!complete) req.socket.destroy();
  });
}

/** Headers of an answer written by the proxy; `close` for a raw socket that ends after it. */
function ownHeaders(type: string, body: string, requestId: string, close: boolean, extra: Record<string, string>): Record<string, string> {
  return {
    'content-type': type,
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    ...NO_STORE,
    ...(close ? { connection: 'close' } : {}),
    ...extra,
  };
}

/** Writes the 502/504 page (no body for HEAD), ended once the request body is in. */
export function sendGatewayFailure(req: IncomingMessage, res: ServerResponse, status: GatewayFailure, requestId: string): void {
  const body = gatewayPage(status, requestId);
  answerBeforeBody(req, res, status, ownHeaders('text/html; charset=utf-8', body, requestId, false, {}), body);
}

/** The plain-text answer to a request a rule refused. */
export function blockedAnswer(decision: Extract<Decision, { kind: 'block' }>, allowedMethods: readonly string[]): { body: string; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  if (decision.status === 429 && decision.retryAfterSeconds !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(decision.retryAfterSeconds)));
  if (decision.status === 405 && allowedMethods.length > 0) headers.allow = allowedMethods.join(', ');
  return { body: `${reasonPhrase(decision.status)}\n`, headers };
}

/** Writes a rule's refusal (no body for HEAD), ended once the request body is in. */
export function sendBlocked(
  req: IncomingMessage,
  res: ServerResponse,
  decision: Extract<Decision, { kind: 'block' }>,
  allowedMethods: readonly string[],
  requestId: string,
): void {
  const { body, headers } = blockedAnswer(decision, allowedMethods);
  answerBeforeBody(req, res, decision.status, ownHeaders('text/plain; charset=utf-8', body, requestId, false, headers), body);
}

/** The 402 of a hostname whose owner's delivery is suspended for want of credits. */
export const CREDITS_ANSWER = `${DELIVERY_SUSPENDED_TEXT}\n`;

/** Writes the 402 of an owner whose credits ran out (no body for HEAD), ended once the request body is in. */
export function sendCreditsRefusal(req: IncomingMessage, res: ServerResponse, requestId: string): void {
  answerBeforeBody(req, res, 402, ownHeaders('text/plain; charset=utf-8', CREDITS_ANSWER, requestId, false, {}), CREDITS_ANSWER);
}

/**
 * A raw HTTP/1.1 answer for a socket that never became a response (an upgrade request), before it is
 * closed: the 502/504 page, the 402 of credits run out, or a line of text with `extra` headers
 * (Retry-After, Allow).
 */
export function rawAnswer(status: number, requestId: string, extra: Record<string, string> = {}): string {
  const page = status === 502 || status === 504;
  const body = page ? gatewayPage(status, requestId) : status === 402 ? CREDITS_ANSWER : `${reasonPhrase(status)}\n`;
  const headers = ownHeaders(page ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8', body, requestId, true, extra);
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
  return `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** Writes an ACME HTTP-01 challenge's key authorization (RFC 8555 8.3), ended once the request body is in. */
export function sendChallengeAnswer(req: IncomingMessage, res: ServerResponse, keyAuthorization: string, requestId: string): number {
  answerBeforeBody(req, res, 200, ownHeaders('application/octet-stream', keyAuthorization, requestId, false, {}), keyAuthorization);
  return req.method === 'HEAD' ? 0 : Buffer.byteLength(keyAuthorization);
}

/** Writes the 308 of a plain HTTP request to a hostname served over HTTPS, ended once the request body is in. */
export function sendHttpsRedirect(req: IncomingMessage, res: ServerResponse, location: string, requestId: string): number {
  const body = `Moved to ${location}\n`;
  answerBeforeBody(req, res, 308, ownHeaders('text/plain; charset=utf-8', body, requestId, false, { location }), body);
  return req.method === 'HEAD' ? 0 : Buffer.byteLength(body);
}
