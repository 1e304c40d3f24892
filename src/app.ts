// buildApp(ctx): the request listener for every surface. Requests for a verified project hostname go
// to the edge proxy (src/edge, both listeners, WebSocket upgrades too); for the CDN hostname to the CDN;
// S3 traffic goes straight to the S3 handler (raw URLs matter: keys are opaque bytes, no router
// normalisation); the management prefixes (/api/, /storage/, /dashboard) go through fastify, built for
// the first of them (api/management-lazy.ts). Never listens, never reads env.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppContext } from './context.js';
import { createS3Handler } from './s3/handler.js';
import { expectsContinue } from './http/expect-continue.js';
import { ManagementApp } from './api/management-lazy.js';
import { createCdnHandler, isCdnHost, notFound as cdnNotFound } from './cdn/handler.js';
import { answerAndClose, repeatedHeader, watchBodyRate } from './http/request-guard.js';
import { toXml } from './s3/xml.js';
import { pathOf } from './http/request-target.js';
import { requestRecordOf } from './s3/s3-request-record.js';
import { S3Error } from './errors/s3-errors.js';
import { createEdgeHandler } from './edge/handler.js';
import { HostnameTlsContexts } from './edge/tls-contexts.js';
import type { EdgeRoute } from './db/repos/hostname-model.js';
import { answerHealth, type HealthEndpoint } from './health/endpoints.js';
import { answerMetrics } from './metrics/endpoint.js';
import { virtualHostBucket } from './s3/addressing.js';

export interface App {
  close(): Promise<void>;
  /** Serves one request; attach it to any number of http/https servers. */
  listener: RequestListener;
  /** The CDN's own listener: CDN requests (Host = the CDN hostname) only, a bare 404 for anything else. */
  cdnListener: RequestListener;
  /** Every listener's 'upgrade' event: WebSockets of project hostnames; any other upgrade is closed. */
  upgradeListener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Ends open WebSocket tunnels (they would hold a server's close forever). */
  closeTunnels(): void;
  /** The HTTPS listener's certificate per SNI name, and its check of each hostname's minimum TLS version. */
  tls: Pick<HostnameTlsContexts, 'sni' | 'checkVersion'>;
}

/** Path prefixes of the management API and the dashboard; `api`, `storage` and `dashboard` are therefore reserved bucket names. */
export function isManagementPath(req: Pick<IncomingMessage, 'url' | 'headers'>): boolean {
  const url = req.url;
  if (!url) return false;
  if (url === '/api' || url.startsWith('/api/') || url.startsWith('/api?') || url.startsWith('/storage/')) return true;
  // A request signed for S3 there is a path-style request for the bucket `dashboard` (an S3 client's
  // CreateBucket): the S3 handler refuses the reserved name in S3's words, not the dashboard in JSON.
  return isDashboardPath(url) && !signedForS3(url, req.headers.authorization);
}

function isDashboardPath(url: string): boolean {
  return url === '/dashboard' || url.startsWith('/dashboard/') || url.startsWith('/dashboard?');
}

/** S3 credentials: a SigV4 or SigV2 Authorization header, or a presigned query of either. */
function signedForS3(url: string, authorization: string | undefined): boolean {
  return (authorization !== undefined && /^AWS(4-HMAC-SHA256)? /.test(authorization)) || /[?&](X-Amz-Signature|X-Amz-Credential|AWSAccessKeyId)=/.test(url);
}

/** The operations endpoints (src/health, src/metrics); their names are reserved bucket names. */
type OperationsEndpoint = HealthEndpoint | 'metrics';
const OPERATIONS_PATHS: ReadonlyMap<string, OperationsEndpoint> = new Map([
  ['/healthz', 'healthz'],
  ['/readyz', 'readyz'],
  ['/metrics', 'metrics'],
]);

/**
 * /healthz, /readyz or /metrics (any query ignored), unless the request is S3's: signed (a path-style
 * request for the reserved bucket of that name, refused by the S3 handler in S3's words) or addressed
 * to a bucket's virtual host (where the path is an object key).
 */
function operationsEndpoint(req: IncomingMessage, s3Domains: readonly string[]): OperationsEndpoint | undefined {
  const url = req.url ?? '';
  const endpoint = OPERATIONS_PATHS.get(pathOf(url));
  if (endpoint === undefined || signedForS3(url, req.headers.authorization)) return undefined;
  return virtualHostBucket(req.headers.host, s3Domains) === undefined ? endpoint : undefined;
}

type Door = 's3' | 'api' | 'cdn' | 'proxy';

/** An early answer in the door's own language: S3 XML, the API's JSON envelope, or the CDN's plain text. */
function earlyAnswer(door: Door, status: number, s3Code: string, apiCode: string, message: string): { type: string; body: string } {
  switch (door) {
    case 's3':
      return { type: 'application/xml', body: toXml('Error', { Code: s3Code, Message: message, RequestId: randomUUID() }, { namespace: false }) };
    case 'api':
      return { type: 'application/json; charset=utf-8', body: JSON.stringify({ success: false, message, code: apiCode }) };
    case 'cdn':
    case 'proxy':
      return { type: 'text/plain; charset=utf-8', body: `${status === 400 ? 'Bad Request' : 'Error'}: ${message}\n` };
  }
}

/**
 * The checks every request passes before its door's handler (src/http/request-guard.ts): a repeated
 * Authorization or Host header is refused at once; a body that stalls or drips is answered 400
 * RequestTimeout and its connection closed, or, when the door has answered already, its connection
 * closed. Returns false when it answered.
 */
function requestGuard(ctx: AppContext): (req: IncomingMessage, res: ServerResponse, door: Door) => boolean {
  const rate = { windowMs: ctx.config.limits.bodyTimeoutSeconds * 1000, minBytesPerSecond: ctx.config.limits.minBodyBytesPerSecond };
  return (req, res, door) => {
    const repeated = repeatedHeader(req.rawHeaders);
    if (repeated !== undefined) {
      const name = repeated === 'host' ? 'Host' : 'Authorization';
      const a = earlyAnswer(door, 400, 'InvalidRequest', 'invalid_request', `The request carries more than one ${name} header.`);
      answerAndClose(res, 400, a.type, a.body);
      return false;
    }
    watchBodyRate(req, res, rate, (answered) => {
      if (answered) {
        // The door answered before the body was in, and the rest of it drips: no second answer.
        ctx.log.info({ url: req.url, door }, 'request body too slow after the answer: connection closed');
        req.socket.destroy();
        return;
      }
      const a = earlyAnswer(door, 400, 'RequestTimeout', 'request_timeout', REQUEST_TIMEOUT_MESSAGE);
      // The S3 request's own log line, written when this answer closes it, names the code too.
      if (door === 's3') requestRecordOf(res)?.failed(new S3Error('RequestTimeout'));
      ctx.log.info({ url: req.url, door }, 'request body too slow: answered 400 RequestTimeout and closed');
      answerAndClose(res, 400, a.type, a.body);
    });
    return true;
  };
}

const REQUEST_TIMEOUT_MESSAGE = 'Your socket connection to the server was not read from or written to within the timeout period.';

export async function buildApp(ctx: AppContext): Promise<App> {
  const managementApp = new ManagementApp(ctx);
  const management = managementApp.listener;
  const s3 = createS3Handler(ctx);
  const cdn = createCdnHandler(ctx);
  const cdnHostname = ctx.config.cdn.hostname;
  const edge = createEdgeHandler(ctx);

  const guard = requestGuard(ctx);
  // Project hostnames first, on either listener: never the CDN hostname or an S3 domain (refused when added).
  // The route is known at once, except for a routed hostname while the route table reloads after
  // another process's change: that request is dispatched once the table is loaded.
  const routed = (req: IncomingMessage, res: ServerResponse, next: (route: EdgeRoute | undefined) => void): void => {
    const route = edge.route(req.headers.host);
    if (!(route instanceof Promise)) return next(route);
    void route.then(next).catch((err: unknown) => {
      ctx.log.error({ err }, 'request dispatch failed');
      res.destroy();
    });
  };
  const proxied = (req: IncomingMessage, res: ServerResponse, route: EdgeRoute | undefined): boolean => {
    if (!route) return false;
    if (guard(req, res, 'proxy')) void edge.serve(req, res, route);
    return true;
  };
  // Health and metrics first after project hostnames (a user's site may have its own /healthz), on every listener.
  const operations = (req: IncomingMessage, res: ServerResponse): boolean => {
    const endpoint = operationsEndpoint(req, ctx.config.s3Domains);
    if (endpoint === undefined || (endpoint === 'metrics' && !ctx.config.metrics.enabled)) return false;
    if (endpoint === 'metrics') void answerMetrics(req, res, ctx);
    else void answerHealth(req, res, endpoint, ctx.readiness);
    return true;
  };
  const listener: RequestListener = (req: IncomingMessage, res: ServerResponse) => routed(req, res, (route) => {
    if (proxied(req, res, route) || operations(req, res)) return;
    if (isCdnHost(req.headers.host, cdnHostname)) {
      if (guard(req, res, 'cdn')) void cdn(req, res);
      return;
    }
    if (isManagementPath(req)) {
      if (!guard(req, res, 'api')) return;
      // The management API reads bodies itself: let clients that wait for 100 Continue send them.
      if (expectsContinue(req)) res.writeContinue();
      management(req, res);
      return;
    }
    if (guard(req, res, 's3')) void s3(req, res);
  });
  const cdnListener: RequestListener = (req, res) => routed(req, res, (route) => {
    if (proxied(req, res, route) || operations(req, res)) return;
    if (!guard(req, res, 'cdn')) return;
    if (isCdnHost(req.headers.host, cdnHostname)) void cdn(req, res);
    else cdnNotFound(req, res);
  });
  const upgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const upgrade = (route: EdgeRoute | undefined): void => {
      // As node does without a listener: S3, the API and the CDN take no upgrades.
      if (!route) socket.destroy();
      else void edge.upgrade(req, socket, head, route);
    };
    const route = edge.route(req.headers.host);
    if (route instanceof Promise) void route.then(upgrade).catch(() => socket.destroy());
    else upgrade(route);
  };
  return {
    listener,
    cdnListener,
    upgradeListener,
    closeTunnels: () => edge.closeTunnels(),
    tls: new HostnameTlsContexts(ctx.masterKey, edge.route),
    close: () => managementApp.close(),
  };
}
