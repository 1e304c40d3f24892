// Listening: the http listener, the optional https listener, and a graceful stop.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { COUNTED_MESSAGES } from './http/counted-messages.js';
import type { AddressInfo, Socket } from 'node:net';
import { buildApp, type App } from './app.js';
import { ConfigError } from './config/load.js';
import type { AppContext } from './context.js';
import type { Config } from './config/schema.js';
import { thisServer } from './server-record.js';
import { TLS12_CIPHERS } from './edge/tls-contexts.js';

export interface RunningServer {
  /** e.g. http://127.0.0.1:9000 */
  url: string;
  tlsUrl?: string;
  /** The CDN listener, e.g. http://127.0.0.1:9080; absent when cdn.port is null. */
  cdnUrl?: string;
  /**
   * Stops accepting connections, lets the requests in flight finish for up to `graceMs` (idle
   * keep-alive connections are closed at once, busy ones once their response ends), cuts the
   * connections still open after it, then closes the app. Default: shutdownGraceSeconds.
   */
  close(graceMs?: number): Promise<DrainResult>;
}

export interface DrainResult {
  /** Connections open when the stop began. */
  open: number;
  /** Connections still open when the grace period ended, destroyed. */
  cut: number;
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

function urlOf(scheme: string, addr: AddressInfo): string {
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
  return `${scheme}://${shown}:${addr.port}`;
}

function readTlsFile(path: string, key: 'tls.cert' | 'tls.key'): Buffer {
  if (!path) throw new ConfigError(`config: ${key} is required when tls.port is set (or set acme.directory to serve only project hostnames' own certificates)`);
  try {
    return readFileSync(path);
  } catch {
    throw new ConfigError(`config: ${key} cannot be read`);
  }
}

/**
 * The operator's certificate for the HTTPS listener's own names (and any name without its own). With
 * ACME on it may be left out: the listener then serves project hostnames' certificates only.
 */
function operatorCertificate(config: Config): { cert?: Buffer; key?: Buffer } {
  if (config.acme.directory !== '' && config.tls.cert === '' && config.tls.key === '') return {};
  return { cert: readTlsFile(config.tls.cert, 'tls.cert'), key: readTlsFile(config.tls.key, 'tls.key') };
}

/**
 * Node checks headersTimeout every connectionsCheckingInterval: this keeps the cut within a quarter more.
 * optimizeEmptyRequests: a request with neither Content-Length nor Transfer-Encoding (a GET, a HEAD:
 * most of what an edge serves) gets a body stream that is already over, instead of one node reads to
 * its end and destroys over several ticks after the answer (resume, end, destroy, close). Whoever reads
 * a body must not wait for the 'end' of such a request: body readers ask for a length first (S3:
 * MissingContentLength), and the management API reads an empty stream in its place (api/management-app.ts).
 */
function serverOptions(config: Config): { maxHeaderSize: number; optimizeEmptyRequests: boolean; connectionsCheckingInterval: number } & typeof COUNTED_MESSAGES {
  return { maxHeaderSize: 64 * 1024, optimizeEmptyRequests: true, connectionsCheckingInterval: Math.min(5000, (config.limits.headersTimeoutSeconds * 1000) / 4), ...COUNTED_MESSAGES };
}

function tune(server: Server, listener: RequestListener, config: Config, app: App): void {
  // Without this node answers "100 Continue" itself, before we know whether the request is allowed.
  server.on('checkContinue', listener);
  // Node answers 417 to any other expectation unless someone listens. RFC 9110 lets a server ignore
  // an expectation it does not know, and S3 clients never send one on purpose: the request is served
  // as if the header were absent (docs/COMPATIBILITY.md "Expect").
  server.on('checkExpectation', listener);
  server.on('upgrade', app.upgradeListener);
  server.keepAliveTimeout = 65_000;
  // Slow headers (a slowloris) are cut after this; slow bodies by the request guard (src/http/request-guard.ts).
  server.headersTimeout = config.limits.headersTimeoutSeconds * 1000;
  // Uploads can be long; an idle socket is closed by the per-request timeout below.
  server.requestTimeout = 0;
  server.timeout = 120_000;
}

/** On a connection's socket (the request's: TLS included), the response it serves now. */
const SERVING = Symbol('s3edge.serving');
type ServingSocket = Socket & { [SERVING]?: ServerResponse | undefined };

/**
 * The listeners' open connections and their responses in flight. Once stopping, every response says
 * `Connection: close` where its headers are still unsent, and a connection whose response ended is
 * closed rather than kept alive: a drain then ends with the last response instead of the keep-alive timeout.
 *
 * A response in flight is found through its connection (the socket's SERVING slot), not kept in a Set:
 * a Set that every request added to and deleted from kept about 1.3 KiB of each request alive through
 * the young generation's collections (promoted, then collected by the old generation's), which cost a
 * CDN hit ~3.5 µs of garbage collection (docs/ARCHITECTURE.md "What a request leaves to the garbage
 * collector").
 */
class Connections {
  private readonly sockets = new Set<Socket>();
  /** The request sockets (TLS ones for HTTPS) that have served a request, while open. */
  private readonly serving = new Set<ServingSocket>();
  private readonly servers: Server[] = [];
  stopping = false;

  watch(server: Server): void {
    this.servers.push(server);
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    // One function for every response ('close' calls it with the response as `this`): no closure per request.
    const serving = this.serving;
    const connections = this;
    const onClose = function (this: ServerResponse): void {
      // Node has detached the socket from this response by now (res.socket is null); its request keeps it.
      const socket = this.req?.socket as ServingSocket | null | undefined;
      if (socket?.[SERVING] === this) socket[SERVING] = undefined;
      // Idle, unless a next request began.
      if (connections.stopping) server.closeIdleConnections();
    };
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
      const socket = req.socket as ServingSocket;
      if (!(SERVING in socket)) {
        serving.add(socket);
        socket.once('close', () => serving.delete(socket));
      }
      // A pipelined request's response replaces the one before it here: stopping marks the latest, and
      // the connection closes after it.
      socket[SERVING] = res;
      if (this.stopping) res.shouldKeepAlive = false;
      // 'close' comes once per response: on() spares once()'s wrapper.
      res.on('close', onClose);
    };
    // Before the app's listeners, so the mark is on the response before anything can write its head.
    server.prependListener('request', onRequest);
    server.prependListener('checkContinue', onRequest);
    server.prependListener('checkExpectation', onRequest);
  }

  get open(): number {
    return this.sockets.size;
  }

  /** Stop listening; resolves once every connection has closed. */
  stop(): Promise<void> {
    this.stopping = true;
    for (const socket of this.serving) {
      const res = socket[SERVING];
      if (res !== undefined && !res.headersSent) res.shouldKeepAlive = false;
    }
    return Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeIdleConnections();
          }),
      ),
    ).then(() => undefined);
  }

  /** Destroys what is still open (upgraded sockets included, which node no longer counts as HTTP). */
  cut(): number {
    const n = this.sockets.size;
    for (const socket of this.sockets) socket.destroy();
    return n;
  }
}

export interface StartOptions {
  /**
   * Record the endpoints in the settings table (default). A cluster worker does not: its supervisor
   * records the one server the workers make together.
   */
  record?: boolean;
}

export async function startServer(ctx: AppContext, opts: StartOptions = {}): Promise<RunningServer> {
  const recording = opts.record !== false;
  const { config } = ctx;
  const app = await buildApp(ctx);
  const connections = new Connections();
  const http = createServer(serverOptions(config), app.listener);
  tune(http, app.listener, config, app);
  connections.watch(http);
  const addr = await listen(http, config.port, config.host);
  const url = config.publicUrl || urlOf('http', addr);
  ctx.endpoints.s3 = url;

  let cdnUrl: string | undefined;
  let cdnPort = addr.port;
  if (config.cdn.port !== null) {
    const cdn = createServer(serverOptions(config), app.cdnListener);
    tune(cdn, app.cdnListener, config, app);
    connections.watch(cdn);
    const cdnAddr = await listen(cdn, config.cdn.port, config.cdn.host || config.host);
    cdnUrl = urlOf('http', cdnAddr);
    cdnPort = cdnAddr.port;
  }
  if (config.cdn.publicUrl === '') ctx.endpoints.cdn = `http://${config.cdn.hostname}:${cdnPort}`;

  let tlsUrl: string | undefined;
  if (config.tls.port !== null) {
    const https = createHttpsServer(
      {
        ...operatorCertificate(config),
        SNICallback: app.tls.sni,
        minVersion: 'TLSv1.2',
        ciphers: TLS12_CIPHERS,
        ALPNProtocols: ['http/1.1'],
        ...serverOptions(config),
      },
      app.listener,
    );
    tune(https as unknown as Server, app.listener, config, app);
    https.on('secureConnection', app.tls.checkVersion);
    connections.watch(https as unknown as Server);
    const tlsAddr = await listen(https as unknown as Server, config.tls.port, config.tls.host || config.host);
    tlsUrl = urlOf('https', tlsAddr);
    ctx.endpoints.httpsPort = tlsAddr.port;
  }

  // Admin commands (other processes) print these, and tell from who wrote them whether it still runs.
  const record = thisServer({ s3: url, s3Tls: tlsUrl ?? null, cdn: ctx.endpoints.cdn, region: config.region }, ctx.clock());
  if (recording) await ctx.repos.settings.setServerEndpoints(record);
  return {
    url,
    tlsUrl,
    cdnUrl,
    async close(graceMs = config.shutdownGraceSeconds * 1000) {
      const started = performance.now();
      const open = connections.open;
      ctx.log.info({ connections: open, graceSeconds: graceMs / 1000 }, 'stopping: no new connections, draining the open ones');
      app.closeTunnels();
      const drained = connections.stop();
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace over'>((resolve) => {
        timer = setTimeout(() => resolve('grace over'), graceMs);
      });
      let cut = 0;
      if ((await Promise.race([drained, graceOver])) === 'grace over') {
        cut = connections.cut();
        await drained;
      }
      clearTimeout(timer);
      ctx.log.info({ connections: open, cut, ms: Math.round(performance.now() - started) }, 'stopped: every connection closed');
      try {
        if (recording) await ctx.repos.settings.markServerStopped(record, ctx.clock().getTime());
      } catch (err) {
        ctx.log.warn({ err }, 'could not record the stop in the settings table');
      }
      await app.close();
      return { open, cut };
    },
  };
}
