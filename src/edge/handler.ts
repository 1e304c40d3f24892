// The edge reverse proxy's door: requests whose Host is a verified project hostname. Each one is
// judged by the hostname's rules first (rules.ts: IP lists, countries, methods, declared body size, rate
// limit); a refused one is answered here and never reaches the origin. An allowed one is served by the
// hostname's origin: a bucket as a static site (bucket-site.ts), or a URL, from the response cache when
// it holds a fresh answer (response-cache.ts), else forwarded (forward.ts), or, for `Upgrade:
// websocket`, tunnelled (websocket.ts). A hostname whose owner ran out of credits, with credits.atZero
// 'suspend-delivery' and its grace over, is answered 402 after the rules (credits/delivery-suspension.ts).
// Every request, whatever became of it, is one row of the request log (surface 'proxy') and one
// observation of the anomaly monitor.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppContext } from '../context.js';
import type { CacheStatus, CdnRequestRecord } from '../db/repos/request-records.js';
import type { ClientInfo, ForwardingClient } from '../net/client-info.js';
import { hostnameOf } from '../assets/delivery.js';
import { pathOf, userAgentOf } from '../http/request-target.js';
import { reservedHostnames } from '../projects/hostname.js';
import { repeatedHeader } from '../http/request-guard.js';
import { blockedAnswer, CREDITS_ANSWER, rawAnswer, sendBlocked, sendChallengeAnswer, sendCreditsRefusal, sendGatewayFailure, sendHttpsRedirect } from './answers.js';
import { requestHeadersFor, type RawHeaders } from './forward-headers.js';
import { createBucketSite } from './bucket-site.js';
import { forward, type ForwardResult } from './forward.js';
import { CREDITS_DEPLETED, type Decision, type EdgeRoute, type Origin } from '../db/repos/hostname-model.js';
import type { CachedAnswer } from './response-cache.js';
import { decide, type RuleFacts } from '../proxy/rules.js';
import { sendCached } from './send-cached.js';
import { openTunnel, Tunnels } from './websocket.js';


/** What the log row of a request says about its answer. */
type Served = Pick<ForwardResult, 'status' | 'bytesIn' | 'bytesOut'> & { cacheStatus?: CacheStatus | null };

export interface EdgeHandler {
  /**
   * The route of a Host header, when it names a verified project hostname; a promise of it while the
   * route table reloads after another process's change (edge/route.ts fresh()), unless the name cannot
   * be a project hostname.
   */
  route(host: string | undefined): EdgeRoute | undefined | Promise<EdgeRoute | undefined>;
  /** Serves a request for `route`'s hostname (the request guard has run). */
  serve(req: IncomingMessage, res: ServerResponse, route: EdgeRoute): Promise<void>;
  /** Serves an upgrade request for `route`'s hostname: the server's 'upgrade' event. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: EdgeRoute): Promise<void>;
  /** Ends every open tunnel (a server stop). */
  closeTunnels(): void;
}

/** The declared body size (the rules judge it before anything is read); null when none is declared. */
function declaredLength(req: IncomingMessage): number | null {
  const raw = req.headers['content-length'];
  if (raw === undefined) return req.headers['transfer-encoding'] === undefined ? 0 : null;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** The scheme of the listener the request came in on. */
function protoOf(req: IncomingMessage): 'http' | 'https' {
  return 'encrypted' in req.socket && req.socket.encrypted === true ? 'https' : 'http';
}

/** Where ACME HTTP-01 challenges are asked (RFC 8555 8.3). */
const ACME_CHALLENGE_PATH = '/.well-known/acme-challenge/';
/** An ACME token: base64url, at least 128 bits. */
const ACME_TOKEN = /^[A-Za-z0-9_-]{16,256}$/;

/** An origin URL's host, parsed once per route table entry (a URL parse cost microseconds per request). */
const originHosts = new WeakMap<Origin, string>();
function originHostOf(origin: Extract<Origin, { kind: 'url' }>): string {
  let host = originHosts.get(origin);
  if (host === undefined) {
    host = new URL(origin.url).host;
    originHosts.set(origin, host);
  }
  return host;
}

export function createEdgeHandler(ctx: AppContext): EdgeHandler {
  const limiter = ctx.edgeLimiter;
  const tunnels = new Tunnels();
  const answers = ctx.proxyCache;
  const site = createBucketSite(ctx);
  const reserved = reservedHostnames(ctx.config);
  /** False for a name no project hostname can have: an address, a single label, the gateway's own names. */
  const mayBeProject = (name: string): boolean =>
    name.includes('.') && !/^[0-9.]+$/.test(name) && !name.startsWith('[') && !reserved.some((r) => name === r || name.endsWith(`.${r}`));

  const headersFor = (req: IncomingMessage, origin: Extract<Origin, { kind: 'url' }>, client: ForwardingClient, proto: 'http' | 'https'): RawHeaders => {
    return requestHeadersFor(req.rawHeaders, {
      forwardedFor: client.forwardedFor,
      trustedPeer: client.trustedPeer,
      proto,
      originHost: origin.preserveHost ? (req.headers.host ?? '') : originHostOf(origin),
    });
  };

  /**
   * The rules' verdict on a request (one call site: the limiter's tokens are taken here, once). A promise
   * only when the limiter answers later (a cluster worker asks the supervisor's): callers await just then.
   */
  const judge = (req: IncomingMessage, route: EdgeRoute, client: ClientInfo): Decision | Promise<Decision> => {
    const facts: RuleFacts = { ip: client.ip, country: client.country, method: req.method ?? 'GET', bodyBytes: declaredLength(req) };
    // The limiter reads its own monotonic clock (proxy/limiter.ts), the supervisor's in a cluster.
    return decide(route, facts, limiter);
  };

  const log = (req: IncomingMessage, route: EdgeRoute, client: ClientInfo, time: number, started: number, decision: string, r: Served, requestId: string): void => {
    const record: CdnRequestRecord = {
      surface: 'proxy',
      requestId,
      time,
      host: route.hostname,
      method: req.method ?? '',
      path: pathOf(req.url),
      status: r.status,
      bytesIn: r.bytesIn,
      bytesSent: r.bytesOut,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      cacheStatus: r.cacheStatus ?? null,
      clientIp: client.ip,
      country: client.country,
      userAgent: userAgentOf(req),
      ownerId: route.ownerId,
      assetId: null,
      bucket: null,
      key: null,
      decision,
    };
    ctx.requestLog.record(record);
    ctx.edgeMonitor.observe({
      time,
      hostname: route.hostname,
      ownerId: route.ownerId,
      clientIp: client.ip,
      country: client.country,
      status: r.status,
      // The monitor's blocked are the rules' refusals: traffic refused for want of credits is neither
      // an attack nor the rules' doing, and must not read as a surge of blocked requests.
      decision: decision === CREDITS_DEPLETED ? 'allowed' : decision,
      bytesOut: r.bytesOut,
    });
  };

  /** A fresh stored answer for a GET or HEAD; a cache that fails to read is a miss, not an error. */
  const lookup = async (req: IncomingMessage, route: EdgeRoute, requestId: string): Promise<CachedAnswer | undefined> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
    try {
      return await answers.lookup(route.hostnameId, { method: req.method, url: req.url ?? '/', headers: req.headers });
    } catch (err) {
      ctx.log.warn({ err, requestId }, 'edge: response cache lookup failed; forwarding');
      return undefined;
    }
  };

  /**
   * Whether the hostname's owner ran out of credits and their delivery is suspended: false at once
   * unless credits.atZero is 'suspend-delivery'; a promise only when the held read is over a second old.
   */
  const unpaid = ctx.deliverySuspensions;
  const ownerUnpaid = (ownerId: string): boolean | Promise<boolean> => (unpaid === undefined ? false : (unpaid.held(ownerId) ?? unpaid.has(ownerId)));

  /**
   * The key authorization of an ACME challenge this server's issuance posted for the hostname (any
   * process's: they are in the database); undefined when none, and the request goes to the origin (a
   * user may run their own ACME client there).
   */
  const challengeAnswer = async (route: EdgeRoute, url: string, requestId: string): Promise<string | undefined> => {
    const token = url.slice(ACME_CHALLENGE_PATH.length);
    if (!ACME_TOKEN.test(token)) return undefined;
    try {
      return await ctx.repos.hostnameTls.challenge(token, route.hostname, ctx.clock().getTime());
    } catch (err) {
      ctx.log.warn({ err, requestId }, 'edge: could not read the ACME challenge; forwarding');
      return undefined;
    }
  };

  /** The https:// URL of a plain request, or undefined when this server has no HTTPS listener to send it to. */
  const httpsPort = (): number | undefined => ctx.config.tls.publicPort ?? ctx.endpoints.httpsPort;
  const httpsLocation = (route: EdgeRoute, url: string): string | undefined => {
    const port = httpsPort();
    if (port === undefined) return undefined;
    return `https://${route.hostname}${port === 443 ? '' : `:${port}`}${url.startsWith('/') ? url : '/'}`;
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, route: EdgeRoute): Promise<void> => {
    const started = performance.now();
    const time = ctx.clock().getTime();
    const requestId = randomUUID();
    // Now, while the socket still knows its peer: after a Connection: close response it does not.
    const client = ctx.clients.resolveForwarding(req.socket.remoteAddress, req.headers);
    const url = req.url ?? '/';
    const proto = protoOf(req);
    const secure = proto === 'https';
    // The CA's validation, before the rules: a hostname's country or IP rules must not keep it out.
    if (!secure && url.startsWith(ACME_CHALLENGE_PATH) && (req.method === 'GET' || req.method === 'HEAD')) {
      const answer = await challengeAnswer(route, url, requestId);
      if (answer !== undefined) {
        const bytesOut = sendChallengeAnswer(req, res, answer, requestId);
        log(req, route, client, time, started, 'allowed', { status: 200, bytesIn: 0, bytesOut }, requestId);
        return;
      }
    }
    const judged = judge(req, route, client);
    const decision = judged instanceof Promise ? await judged : judged;
    if (decision.kind === 'block') {
      sendBlocked(req, res, decision, route.rules.allowedMethods, requestId);
      const bytesOut = req.method === 'HEAD' ? 0 : Buffer.byteLength(blockedAnswer(decision, route.rules.allowedMethods).body);
      log(req, route, client, time, started, decision.reason, { status: decision.status, bytesIn: 0, bytesOut }, requestId);
      return;
    }
    const tls = route.tls;
    if (tls !== null) {
      if (secure) {
        if (tls.hsts !== '') res.setHeader('strict-transport-security', tls.hsts);
      } else if (tls.redirectHttps && tls.certificate !== null) {
        const location = httpsLocation(route, url);
        if (location !== undefined) {
          const bytesOut = sendHttpsRedirect(req, res, location, requestId);
          log(req, route, client, time, started, 'allowed', { status: 308, bytesIn: 0, bytesOut }, requestId);
          return;
        }
      }
    }
    const refused = ownerUnpaid(route.ownerId);
    if (refused === true || (refused !== false && (await refused))) {
      sendCreditsRefusal(req, res, requestId);
      const bytesOut = req.method === 'HEAD' ? 0 : Buffer.byteLength(CREDITS_ANSWER);
      log(req, route, client, time, started, CREDITS_DEPLETED, { status: 402, bytesIn: 0, bytesOut }, requestId);
      return;
    }
    const origin = route.origin;
    if (origin === null) {
      sendGatewayFailure(req, res, 502, requestId);
      log(req, route, client, time, started, 'allowed', { status: 502, bytesIn: 0, bytesOut: 0 }, requestId);
      return;
    }
    if (origin.kind === 'bucket') {
      const out = await site(req, res, origin, route.ownerId);
      log(req, route, client, time, started, 'allowed', { status: out.status, bytesIn: 0, bytesOut: out.bytesSent, cacheStatus: out.cacheStatus }, requestId);
      return;
    }
    // Taken now, while the socket still knows its peer.
    const headers = headersFor(req, origin, client, proto);
    // Most targets have nothing stored: no lookup, no promise.
    const cached = answers.holdsTarget(route.hostnameId, req.url ?? '/') ? await lookup(req, route, requestId) : undefined;
    if (cached) {
      const bytesOut = await sendCached(res, cached, ctx.log);
      log(req, route, client, time, started, 'allowed', { status: cached.status, bytesIn: 0, bytesOut, cacheStatus: cached.cacheStatus }, requestId);
      return;
    }
    let result: ForwardResult;
    try {
      result = await forward(req, res, {
        dispatcher: ctx.originPools.get(origin.url),
        headers,
        maxBodyBytes: route.rules.maxBodyBytes,
        requestId,
        log: ctx.log,
        cache: { answers, hostname: route.hostnameId },
      });
    } catch (err) {
      // forward() never rejects; this is a bug's last stop, not a path.
      ctx.log.error({ err, requestId }, 'edge: request failed');
      if (!res.headersSent) {
        sendGatewayFailure(req, res, 502, requestId);
      } else res.destroy();
      result = { status: 502, outcome: 'bad-gateway', bytesIn: 0, bytesOut: 0, cacheStatus: null };
    }
    // A chunked body cut at the limit was refused by a rule as much as a declared one.
    log(req, route, client, time, started, result.outcome === 'body-too-large' ? 'body-too-large' : 'allowed', result, requestId);
  };

  const upgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer, route: EdgeRoute): Promise<void> => {
    const started = performance.now();
    const time = ctx.clock().getTime();
    const requestId = randomUUID();
    const client = ctx.clients.resolveForwarding(req.socket.remoteAddress, req.headers);
    socket.on('error', () => socket.destroy());
    const refuse = (status: number, decision: string, extra: Record<string, string> = {}): void => {
      const answer = rawAnswer(status, requestId, extra);
      socket.end(answer);
      socket.once('finish', () => socket.destroy());
      log(req, route, client, time, started, decision, { status, bytesIn: 0, bytesOut: 0 }, requestId);
    };
    // Only WebSocket is passed through; the request guard's header check, done here (no response object).
    if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket' || repeatedHeader(req.rawHeaders) !== undefined) return refuse(400, 'allowed');
    const judged = judge(req, route, client);
    const decision = judged instanceof Promise ? await judged : judged;
    if (decision.kind === 'block') return refuse(decision.status, decision.reason, blockedAnswer(decision, route.rules.allowedMethods).headers);
    const refused = ownerUnpaid(route.ownerId);
    if (refused === true || (refused !== false && (await refused))) return refuse(402, CREDITS_DEPLETED);
    const origin = route.origin;
    if (origin === null) return refuse(502, 'allowed');
    if (origin.kind !== 'url') return refuse(400, 'allowed');
    const result = await openTunnel(req, socket, head, tunnels, {
      dispatcher: ctx.originPools.get(origin.url),
      headers: headersFor(req, origin, client, protoOf(req)),
      requestId,
      log: ctx.log,
    });
    // A chunked body cut at the limit was refused by a rule as much as a declared one.
    log(req, route, client, time, started, result.outcome === 'body-too-large' ? 'body-too-large' : 'allowed', result, requestId);
  };

  return {
    route: (host) => {
      const routes = ctx.edgeRoutes;
      const loading = routes.fresh();
      if (routes.size === 0 && !loading) return undefined;
      const name = hostnameOf(host);
      const key = name.endsWith('.') ? name.slice(0, -1) : name;
      // S3, API and CDN requests (the gateway's own names, addresses) never wait for a load: their
      // handlers count the body from its first byte.
      return loading && mayBeProject(key) ? loading.then(() => routes.lookup(key)) : routes.lookup(key);
    },
    serve,
    upgrade,
    closeTunnels: () => tunnels.closeAll(),
  };
}
