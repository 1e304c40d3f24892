// The management API (api/management-app.ts), loaded and built for the first request to it: its code is
// the largest part of the server's (fastify, its schemas, every route module: about 30 MB and, on this
// 2-core machine, 0.3 s of CPU, its routes' schemas compiled later, api/lazy-schemas.ts), and nothing
// but its own paths needs it. So a start does not wait for it, and a worker that serves only S3 and the
// CDN never holds it. The requests that arrive while it builds wait for it, never fail for it
// (docs/ARCHITECTURE.md "Start").
import type { RequestListener } from 'node:http';
import type { AppContext } from '../context.js';
import type { BuiltManagement } from './management-app.js';

/**
 * The management API, built by the first `build()` or request. Requests that arrive while it builds wait
 * for it; a build that fails is logged, its requests answered 503 in the API's envelope, and the next
 * request tries again.
 */
export class ManagementApp {
  private built: BuiltManagement | undefined;
  private building: Promise<BuiltManagement> | undefined;

  constructor(private readonly ctx: AppContext) {}

  build(): Promise<BuiltManagement> {
    if (this.built) return Promise.resolve(this.built);
    this.building ??= import('./management-app.js').then(({ buildManagement }) => buildManagement(this.ctx)).then(
      (built) => {
        this.built = built;
        return built;
      },
      (err: unknown) => {
        this.building = undefined;
        throw err;
      },
    );
    return this.building;
  }

  readonly listener: RequestListener = (req, res) => {
    if (this.built) return this.built.listener(req, res);
    this.build().then(
      (built) => built.listener(req, res),
      (err: unknown) => {
        this.ctx.log.error({ err }, 'the management API could not be built');
        if (res.headersSent) return void res.destroy();
        const body = JSON.stringify({ success: false, message: 'The management API is not available; try again.', code: 'unavailable' });
        res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'retry-after': '1' });
        res.end(body);
      },
    );
  };

  async close(): Promise<void> {
    const built = this.built ?? (await this.building?.catch(() => undefined));
    await built?.close();
  }
}
