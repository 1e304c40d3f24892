// A small typed client of the management API (SPEC.md §4). Methods unwrap the envelopes: upload()
// returns the asset, summary() the data object. Failures throw ApiClientError with the status and the
// server's error body. Types come from the route schemas (src/api/v3/schemas.ts).
import { FormData, fetch, type Dispatcher } from 'undici';
import type {
  Anomaly,
  AnomalyDetail,
  ApiKeyInfo,
  Asset,
  AssetListItem,
  CacheStats,
  CreatedApiKey,
  CreatedStorageAccessKey,
  Credits,
  DomainResult,
  Deployment,
  DomainSearchResponse,
  ErrorBody,
  Hostname,
  HostnameOrigin,
  HostnameRules,
  LedgerEntry,
  Pagination,
  Project,
  LoggedRequests,
  ProxyLogs,
  StorageAccessKey,
  StorageQuota,
  Summary,
  Tld,
  TldMatch,
  UsageEvent,
  BucketView,
  BucketVisibility,
  OriginInput,
  ObjectPresignRequest,
  PurgeRequest,
  RulesInput,
  CertificateUpload,
  TlsSettings,
  TlsSettingsInput,
  TlsStatus,
} from '../api/v3/schemas.js';

export type { BucketView, BucketVisibility, CacheStats, OriginInput, ObjectPresignRequest, PurgeRequest, RulesInput };
export type { CertificateUpload, TlsSettings, TlsSettingsInput, TlsStatus };
export type {
  Anomaly, AnomalyDetail, LoggedRequests, ApiKeyInfo, Asset, AssetListItem, CreatedApiKey, CreatedStorageAccessKey, Credits, ErrorBody, LedgerEntry, Pagination,
  ProxyLogs, StorageAccessKey, StorageQuota, Summary, UsageEvent, Tld, TldMatch, DomainResult,
  Deployment, Hostname, HostnameOrigin, HostnameRules, Project,
};

export interface AddHostnameInput {
  hostname: string;
  origin?: OriginInput;
  rules?: RulesInput;
}

/** Filters of proxy logs and anomaly events: one of the user's hostnames, a window in hours. */
export interface ProxyLogQuery {
  hostname?: string;
  hours?: number;
}

/** `?a=1&b=2` of the defined values, or '' when there are none. */
/** Filters of the request log (GET /api/v3/cdn/proxy-logs/requests); times in ISO 8601, `cursor` a page's nextCursor. */
export interface RequestLogQuery {
  hostname?: string;
  from?: string;
  to?: string;
  decision?: string;
  ip?: string;
  country?: string;
  path?: string;
  limit?: number;
  cursor?: string;
}

function queryString(query: object): string {
  const qs = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
  return qs.size > 0 ? `?${qs.toString()}` : '';
}

/** POST /api/v3/domains/search, unwrapped: the normalized query and one result per name looked up. */
export type DomainSearch = Omit<DomainSearchResponse, 'success'>;

export interface ClientOptions {
  /** e.g. http://127.0.0.1:9000 */
  baseUrl: string;
  /** The API key (bearer token). */
  apiKey: string;
  dispatcher?: Dispatcher;
  /** Called with every response body read as text (tests scan them). */
  onResponse?: (info: { method: string; path: string; status: number; body: string }) => void;
}

export class ApiClientError extends Error {
  constructor(
    readonly status: number,
    readonly body: Partial<ErrorBody> & Record<string, unknown>,
  ) {
    super(`${status} ${typeof body.code === 'string' ? body.code : ''}: ${typeof body.message === 'string' ? body.message : ''}`);
    this.name = 'ApiClientError';
  }
}

export interface UploadInput {
  /** The bytes: a Buffer, or a Blob (fs.openAsBlob(path) streams a file without reading it whole). */
  file: Buffer | Blob;
  fileName: string;
  contentType?: string;
  visibility?: 'public' | 'private';
  kind?: 'file' | 'artifact';
  projectId?: string;
  deploymentId?: string;
}

export interface AssetListQuery {
  page?: number;
  limit?: number;
  search?: string;
  kind?: 'file' | 'artifact';
  /** Only this project's assets (one of the caller's projects, else 404). */
  projectId?: string;
  /** Newest first by default; `order` defaults to desc for createdAt, asc for name and size. */
  sort?: 'createdAt' | 'name' | 'size';
  order?: 'asc' | 'desc';
}

/** A window of usage events or ledger entries (ISO 8601), a page at a time. */
export interface UsagePageQuery {
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}

/** One UTC day of GET /api/v3/cdn/usage/daily. */
export interface UsageDay {
  date: string;
  uploads: number;
  uploadedBytes: number;
  downloads: number;
  downloadedBytes: number;
  deletes: number;
  creditsCharged: number;
  creditsAdded: number;
}

export interface UsageResult {
  events: UsageEvent[];
  creditLedger: LedgerEntry[];
  credits: Credits;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  body: Buffer;
}

export class S3EdgeClient {
  constructor(private readonly opts: ClientOptions) {}

  /** Any request, authenticated; the response as it came (no status check). */
  async raw(method: string, path: string, init: { body?: string | FormData; headers?: Record<string, string> } = {}): Promise<RawResponse> {
    const res = await fetch(new URL(path, this.opts.baseUrl), {
      method,
      headers: { authorization: `Bearer ${this.opts.apiKey}`, ...(init.headers ?? {}) },
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(this.opts.dispatcher ? { dispatcher: this.opts.dispatcher } : {}),
    });
    const body = Buffer.from(await res.arrayBuffer());
    this.opts.onResponse?.({ method, path, status: res.status, body: body.toString('utf8') });
    return { status: res.status, headers: res.headers as unknown as Headers, body };
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.raw(method, path, body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>;
    } catch {
      throw new ApiClientError(res.status, { message: 'response is not JSON' });
    }
    if (res.status >= 400 || parsed.success !== true) throw new ApiClientError(res.status, parsed);
    return parsed as T;
  }

  /** With `projectId`, the asset counts and recent assets are that project's. */
  async summary(projectId?: string): Promise<Summary> {
    const suffix = projectId === undefined ? '' : `?projectId=${encodeURIComponent(projectId)}`;
    return (await this.json<{ data: Summary }>('GET', `/api/v3/cdn/summary${suffix}`)).data;
  }

  async listAssets(query: AssetListQuery = {}): Promise<{ assets: AssetListItem[]; pagination: Pagination }> {
    const { assets, pagination } = await this.json<{ assets: AssetListItem[]; pagination: Pagination }>('GET', `/api/v3/cdn/assets${queryString(query)}`);
    return { assets, pagination };
  }

  /** Uploads one file; returns the stored asset. */
  async upload(input: UploadInput): Promise<Asset> {
    const form = new FormData();
    for (const field of ['visibility', 'kind', 'projectId', 'deploymentId'] as const) {
      const value = input[field];
      if (value !== undefined) form.append(field, value);
    }
    const blob = input.file instanceof Blob ? input.file : new Blob([new Uint8Array(input.file)]);
    const typed = input.contentType === undefined ? blob : new Blob([blob], { type: input.contentType });
    form.append('file', typed, input.fileName);
    const res = await this.raw('POST', '/api/v3/cdn/assets', { body: form });
    const parsed = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>;
    if (res.status >= 400 || parsed.success !== true) throw new ApiClientError(res.status, parsed);
    return parsed.asset as Asset;
  }

  /** The asset's bytes (authenticated download); `range` is an HTTP Range header value. */
  async download(id: string, opts: { range?: string } = {}): Promise<RawResponse> {
    const res = await this.raw('GET', `/api/v3/cdn/assets/${encodeURIComponent(id)}/download`, opts.range ? { headers: { range: opts.range } } : {});
    if (res.status >= 400) throw new ApiClientError(res.status, JSON.parse(res.body.toString('utf8')) as Record<string, unknown>);
    return res;
  }

  async deleteAsset(id: string): Promise<string> {
    return (await this.json<{ message: string }>('DELETE', `/api/v3/cdn/assets/${encodeURIComponent(id)}`)).message;
  }

  /** A raster image asset's bytes inline (PNG, JPEG, GIF, WebP, AVIF up to 5 MiB; else 415 not_previewable), not counted as a download. */
  async preview(id: string): Promise<RawResponse> {
    const res = await this.raw('GET', `/api/v3/cdn/assets/${encodeURIComponent(id)}/preview`);
    if (res.status >= 400) throw new ApiClientError(res.status, JSON.parse(res.body.toString('utf8')) as Record<string, unknown>);
    return res;
  }

  /** A signed, expiring CDN URL of an asset (works for private ones). */
  async signedUrl(id: string, expiresIn?: number): Promise<{ url: string; expiresAt: string }> {
    const { url, expiresAt } = await this.json<{ url: string; expiresAt: string }>(
      'POST', `/api/v3/cdn/assets/${encodeURIComponent(id)}/signed-url`, expiresIn === undefined ? {} : { expiresIn },
    );
    return { url, expiresAt };
  }

  async usage(limit?: number): Promise<UsageResult> {
    const { events, creditLedger, credits } = await this.json<UsageResult>('GET', `/api/v3/cdn/usage${limit === undefined ? '' : `?limit=${limit}`}`);
    return { events, creditLedger, credits };
  }

  async proxyLogs(query: ProxyLogQuery = {}): Promise<ProxyLogs> {
    return (await this.json<{ data: ProxyLogs }>('GET', `/api/v3/cdn/proxy-logs${queryString(query)}`)).data;
  }

  async anomalies(query: ProxyLogQuery & { state?: 'open' | 'all'; limit?: number } = {}): Promise<Anomaly[]> {
    return (await this.json<{ anomalies: Anomaly[] }>('GET', `/api/v3/cdn/anomalies${queryString(query)}`)).anomalies;
  }

  /** A page of the usage events, newest first (`type`: upload, download or delete). */
  async usageEvents(query: UsagePageQuery & { type?: 'upload' | 'download' | 'delete' } = {}): Promise<{ events: UsageEvent[]; nextCursor: string | null }> {
    return (await this.json<{ data: { events: UsageEvent[]; nextCursor: string | null } }>('GET', `/api/v3/cdn/usage/events${queryString(query)}`)).data;
  }

  /** A page of the credit ledger, newest first. */
  async usageLedger(query: UsagePageQuery = {}): Promise<{ entries: LedgerEntry[]; nextCursor: string | null }> {
    return (await this.json<{ data: { entries: LedgerEntry[]; nextCursor: string | null } }>('GET', `/api/v3/cdn/usage/ledger${queryString(query)}`)).data;
  }

  /** The last `days` UTC days (default 30), oldest first, zeros included. */
  async usageDaily(days?: number): Promise<UsageDay[]> {
    return (await this.json<{ data: { days: UsageDay[] } }>('GET', `/api/v3/cdn/usage/daily${queryString({ days })}`)).data.days;
  }

  /** What the caller stores and may store: the account's storage quota and each bucket's (quotaBytes null: none). */
  async storageQuota(): Promise<StorageQuota> {
    return (await this.json<{ data: StorageQuota }>('GET', '/api/v3/storage/quota')).data;
  }

  /** A page of the request log, newest first; pass `nextCursor` back as `cursor` for the next one. */
  async proxyLogRequests(query: RequestLogQuery = {}): Promise<LoggedRequests> {
    return (await this.json<{ data: LoggedRequests }>('GET', `/api/v3/cdn/proxy-logs/requests${queryString(query)}`)).data;
  }

  /** One anomaly event and the sources and countries of its span of traffic. */
  async anomaly(id: string): Promise<AnomalyDetail> {
    return (await this.json<{ data: AnomalyDetail }>('GET', `/api/v3/cdn/anomalies/${encodeURIComponent(id)}`)).data;
  }

  /** The gateway metrics in the Prometheus text format (scope metrics:read). */
  async metrics(): Promise<string> {
    const res = await this.raw('GET', '/api/v3/metrics');
    const text = res.body.toString('utf8');
    if (res.status >= 400) throw new ApiClientError(res.status, JSON.parse(text) as Record<string, unknown>);
    return text;
  }

  async listApiKeys(): Promise<ApiKeyInfo[]> {
    return (await this.json<{ apiKeys: ApiKeyInfo[] }>('GET', '/api/v3/api-keys')).apiKeys;
  }

  async createApiKey(input: { name?: string; scopes: string[] }): Promise<CreatedApiKey> {
    return (await this.json<{ apiKey: CreatedApiKey }>('POST', '/api/v3/api-keys', input)).apiKey;
  }

  async deleteApiKey(id: string): Promise<string> {
    return (await this.json<{ message: string }>('DELETE', `/api/v3/api-keys/${encodeURIComponent(id)}`)).message;
  }

  async listAccessKeys(bucket: string): Promise<StorageAccessKey[]> {
    return (await this.json<{ accessKeys: StorageAccessKey[] }>('GET', `/storage/buckets/${encodeURIComponent(bucket)}/access-keys`)).accessKeys;
  }

  async createAccessKey(bucket: string, input: { name: string; permission: 'read' | 'read_write' }): Promise<CreatedStorageAccessKey> {
    return (await this.json<{ accessKey: CreatedStorageAccessKey }>('POST', `/storage/buckets/${encodeURIComponent(bucket)}/access-keys`, input)).accessKey;
  }

  async deleteAccessKey(bucket: string, keyId: string): Promise<string> {
    return (await this.json<{ message: string }>('DELETE', `/storage/buckets/${encodeURIComponent(bucket)}/access-keys/${encodeURIComponent(keyId)}`)).message;
  }

  /** The caller's buckets. */
  async listBuckets(): Promise<BucketView[]> {
    return (await this.json<{ buckets: BucketView[] }>('GET', '/api/v3/buckets')).buckets;
  }

  /** Creates a bucket in the gateway's region (S3 naming rules; 409 when the name is taken). */
  async createBucket(name: string): Promise<BucketView> {
    return (await this.json<{ bucket: BucketView }>('POST', '/api/v3/buckets', { name })).bucket;
  }

  /** Serves a bucket's objects on the CDN host at /b/<bucket>/<key> (true), or stops it (false). */
  async setBucketPublic(bucket: string, isPublic: boolean): Promise<BucketVisibility> {
    return (await this.json<{ bucket: BucketVisibility }>('PUT', `/api/v3/buckets/${encodeURIComponent(bucket)}/public`, { public: isPublic })).bucket;
  }

  /** A presigned S3 URL (path and query, for this host) for one operation on one of the caller's buckets. */
  async presign(bucket: string, request: ObjectPresignRequest): Promise<{ method: string; url: string; expiresAt: string }> {
    const { method, url, expiresAt } = await this.json<{ method: string; url: string; expiresAt: string }>(
      'POST', `/api/v3/buckets/${encodeURIComponent(bucket)}/presign`, request,
    );
    return { method, url, expiresAt };
  }

  /** The server's OpenAPI 3.1 document (GET /api/v3/openapi.json; needs no scope). */
  async openApiDocument(): Promise<Record<string, unknown>> {
    const res = await this.raw('GET', '/api/v3/openapi.json');
    const text = res.body.toString('utf8');
    if (res.status >= 400) throw new ApiClientError(res.status, JSON.parse(text) as Record<string, unknown>);
    return JSON.parse(text) as Record<string, unknown>;
  }

  /** Drops cached CDN copies; returns how many objects were dropped. */
  async purge(request: PurgeRequest): Promise<number> {
    return (await this.json<{ purged: number }>('POST', '/api/v3/cdn/purge', request)).purged;
  }

  /** Every TLD of the catalogue with its prices and active promotion (scope domains:read). */
  async tlds(): Promise<Tld[]> {
    return (await this.json<{ tlds: Tld[] }>('GET', '/api/v3/domains/tlds')).tlds;
  }

  /** The popular TLDs, in their order. */
  async popularTlds(): Promise<Tld[]> {
    return (await this.json<{ tlds: Tld[] }>('GET', '/api/v3/domains/tlds/popular')).tlds;
  }

  /** TLDs matching an extension (`io`, `.co.uk`), exact match first. */
  async searchTlds(q: string): Promise<TldMatch[]> {
    return (await this.json<{ tlds: TldMatch[] }>('GET', `/api/v3/domains/tlds/search?q=${encodeURIComponent(q)}`)).tlds;
  }

  /** Availability and prices of a name (`example.com`), or of a bare label under the popular TLDs. */
  async searchDomains(query: string): Promise<DomainSearch> {
    const { query: normalized, kind, results } = await this.json<DomainSearchResponse>('POST', '/api/v3/domains/search', { query });
    return { query: normalized, kind, results };
  }

  /** The edge cache's counters and sizes (scope metrics:read). */
  async cacheStats(): Promise<CacheStats> {
    return (await this.json<{ cache: CacheStats }>('GET', '/api/v3/cdn/cache')).cache;
  }

  async listProjects(): Promise<Project[]> {
    return (await this.json<{ projects: Project[] }>('GET', '/api/v3/projects')).projects;
  }

  async createProject(name: string): Promise<Project> {
    return (await this.json<{ project: Project }>('POST', '/api/v3/projects', { name })).project;
  }

  async project(projectId: string): Promise<Project> {
    return (await this.json<{ project: Project }>('GET', projectPath(projectId))).project;
  }

  /** Deletes the project with its deployments and hostnames; its assets stay, unlinked. */
  async deleteProject(projectId: string): Promise<string> {
    return (await this.json<{ message: string }>('DELETE', projectPath(projectId))).message;
  }

  async listDeployments(projectId: string): Promise<Deployment[]> {
    return (await this.json<{ deployments: Deployment[] }>('GET', `${projectPath(projectId)}/deployments`)).deployments;
  }

  async createDeployment(projectId: string, name: string): Promise<Deployment> {
    return (await this.json<{ deployment: Deployment }>('POST', `${projectPath(projectId)}/deployments`, { name })).deployment;
  }

  async listHostnames(projectId: string): Promise<Hostname[]> {
    return (await this.json<{ hostnames: Hostname[] }>('GET', `${projectPath(projectId)}/hostnames`)).hostnames;
  }

  /** Adds an unverified hostname; `verification` is the TXT record to publish before verifyHostname. */
  async addHostname(projectId: string, input: AddHostnameInput): Promise<Hostname> {
    return (await this.json<{ hostname: Hostname }>('POST', `${projectPath(projectId)}/hostnames`, input)).hostname;
  }

  async hostname(projectId: string, hostnameId: string): Promise<Hostname> {
    return (await this.json<{ hostname: Hostname }>('GET', hostnamePath(projectId, hostnameId))).hostname;
  }

  async removeHostname(projectId: string, hostnameId: string): Promise<string> {
    return (await this.json<{ message: string }>('DELETE', hostnamePath(projectId, hostnameId))).message;
  }

  async setOrigin(projectId: string, hostnameId: string, origin: OriginInput): Promise<Hostname> {
    return (await this.json<{ hostname: Hostname }>('PUT', `${hostnamePath(projectId, hostnameId)}/origin`, origin)).hostname;
  }

  async setRules(projectId: string, hostnameId: string, rules: RulesInput): Promise<Hostname> {
    return (await this.json<{ hostname: Hostname }>('PUT', `${hostnamePath(projectId, hostnameId)}/rules`, rules)).hostname;
  }

  /** Looks the TXT record up; a 409 verification_failed says what DNS had instead. */
  async verifyHostname(projectId: string, hostnameId: string): Promise<Hostname> {
    return (await this.json<{ hostname: Hostname }>('POST', `${hostnamePath(projectId, hostnameId)}/verify`)).hostname;
  }

  /** Drops the hostname's cached proxy answers; returns how many. */
  async purgeHostname(projectId: string, hostnameId: string): Promise<number> {
    return (await this.json<{ purged: number }>('POST', `${hostnamePath(projectId, hostnameId)}/purge`)).purged;
  }

  // A hostname's HTTPS (docs/API.md "HTTPS of a hostname"): `hostname` is its id or its name.

  /** The hostname's HTTPS: the certificate's state (`state`, `summary`), the certificate, the last failure, the settings. */
  async hostnameTls(projectId: string, hostname: string): Promise<TlsStatus> {
    return (await this.json<{ tls: TlsStatus }>('GET', `${hostnamePath(projectId, hostname)}/tls`)).tls;
  }

  /** Changes the settings given (redirectHttps, hstsMaxAge, hstsIncludeSubdomains, minTls); the rest stay. */
  async updateHostnameTls(projectId: string, hostname: string, settings: TlsSettingsInput): Promise<TlsStatus> {
    return (await this.json<{ tls: TlsStatus }>('PATCH', `${hostnamePath(projectId, hostname)}/tls`, settings)).tls;
  }

  /** Asks for a certificate now (202): the server's ACME job issues it on its next round. */
  async issueHostnameCertificate(projectId: string, hostname: string): Promise<TlsStatus> {
    return (await this.json<{ tls: TlsStatus }>('POST', `${hostnamePath(projectId, hostname)}/tls/issue`)).tls;
  }

  /** Serves an uploaded certificate (a PEM chain, the hostname's first) with its private key, which is never shown again. */
  async uploadHostnameCertificate(projectId: string, hostname: string, upload: CertificateUpload): Promise<TlsStatus> {
    return (await this.json<{ tls: TlsStatus }>('PUT', `${hostnamePath(projectId, hostname)}/tls/certificate`, upload)).tls;
  }

  /** Drops the hostname's certificate and key (with ACME on, a new one is requested at once). */
  async removeHostnameCertificate(projectId: string, hostname: string): Promise<TlsStatus> {
    return (await this.json<{ tls: TlsStatus }>('DELETE', `${hostnamePath(projectId, hostname)}/tls/certificate`)).tls;
  }
}

function projectPath(projectId: string): string {
  return `/api/v3/projects/${encodeURIComponent(projectId)}`;
}

function hostnamePath(projectId: string, hostnameId: string): string {
  return `${projectPath(projectId)}/hostnames/${encodeURIComponent(hostnameId)}`;
}
