// Requests to the CDN listener for e2e tests: raw HTTP (paths reach the server byte for byte) with
// `Host: cdn.localhost:<port>`, every answer (headers and body) handed to the leak scan.
import type { ResponseRecorder } from './api.js';
import { rawRequest, type HeaderList, type RawResponse } from './raw-http.js';
import type { RunningServer } from './server.js';

export interface CdnRequestOptions {
  method?: string;
  headers?: HeaderList;
  /** Another Host header than the CDN's. */
  host?: string;
  /** Another listener than the CDN's (the main port routes by Host too). */
  url?: string;
}

export class CdnClient {
  /** `cdn.localhost:<CDN listener port>`: the host of every publicUrl. */
  readonly host: string;

  constructor(
    private readonly server: RunningServer,
    private readonly recorder: ResponseRecorder,
    /** How much of each body the leak scan reads (test objects are the test's own byte patterns). */
    private readonly scanBytes = Infinity,
  ) {
    this.host = `cdn.localhost:${new URL(server.cdnUrl).port}`;
  }

  /** `http://cdn.localhost:<port>/<path>?<query>` -> the request target on the wire. */
  targetOf(url: string): string {
    const u = new URL(url);
    if (u.host !== this.host) throw new Error(`${url} does not name the CDN host ${this.host}`);
    return `${u.pathname}${u.search}`;
  }

  async request(target: string, opts: CdnRequestOptions = {}): Promise<RawResponse> {
    const method = opts.method ?? 'GET';
    const res = await rawRequest({ url: opts.url ?? this.server.cdnUrl }, { method, target, headers: [['Host', opts.host ?? this.host], ...(opts.headers ?? [])] });
    const body = Number.isFinite(this.scanBytes) ? res.body.subarray(0, this.scanBytes).toString('latin1') : res.text;
    this.recorder.record({ method, path: `cdn ${target}`, status: res.status, body: `${JSON.stringify(res.headers)}\n${body}` });
    return res;
  }
}
