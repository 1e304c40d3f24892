// The configuration schema: every setting, its type and bounds. Defaults live in config/default.json.

export interface TlsConfig {
  /** HTTPS listener port; null disables TLS. */
  port: number | null;
  /** Interface for the HTTPS listener; empty means the same as `host`. */
  host: string;
  /** The operator's certificate (PEM file) for its own names; may be empty when ACME is on (acme.directory): project hostnames then bring theirs. */
  cert: string;
  key: string;
  /** The HTTPS port clients reach (behind a port mapping); redirects of plain HTTP name it. null: the listener's own port. */
  publicPort: number | null;
}

/** Automatic certificates for project hostnames (docs/EDGE.md "HTTPS"): ACME, RFC 8555, HTTP-01. */
export interface AcmeConfig {
  /** The CA's directory URL (Let's Encrypt: https://acme-v02.api.letsencrypt.org/directory); empty: no automatic certificates. */
  directory: string;
  /** The ACME account's contact e-mail (expiry notices from the CA); empty: none. */
  email: string;
  /** A PEM file of CAs trusted for the directory's own HTTPS (a private CA such as step-ca or pebble); empty: the system's. */
  caFile: string;
  /** Let the directory be on loopback or private addresses through the outbound address policy (a CA on the operator's own network; tests). */
  allowPrivateAddresses: boolean;
  /** Deadline of one request to the CA. */
  timeoutMs: number;
  /** How often the ACME job looks for hostnames to issue, retry or renew. */
  checkIntervalSeconds: number;
  /** Orders one hostname may start in an hour (failures, retries and renewals alike). */
  ordersPerHostnamePerHour: number;
  /** Orders all of one user's hostnames may start in an hour: one account cannot spend the CA's limits for all. */
  ordersPerUserPerHour: number;
}

export interface HashingConfig {
  /**
   * Upload bodies of at least this many bytes (or of unknown length) are hashed in a worker thread (MD5,
   * SHA-256 and the requested checksum, in 1 MiB batches); smaller ones inline, where a worker task would
   * cost more than it saves. 0 turns the worker off (no thread is started). Default 1 MiB: with four
   * 256 MiB uploads running, small GETs answered in a quarter of the time at the median and 25% sooner
   * at p99, for 14% less upload throughput on 2 cores (bench/RESULTS-hashing.md, docs/ARCHITECTURE.md).
   */
  workerThreshold: number;
  /** Hashing worker threads (each upload's batches stay on one); bench/RESULTS-hashing.md measured 1 and 2. */
  workerThreads: number;
}

export interface CdnCacheConfig {
  /** Bytes the memory tier may hold. */
  memoryBytes: number;
  /** Larger objects are never held in memory: they are cached on disk only. */
  memoryEntryMaxBytes: number;
  /** Bytes the disk tier (<dataDir>/cdn-cache) may hold; least recently used files are evicted. */
  diskBytes: number;
}

export interface CdnLogConfig {
  /** Requests held in memory between flushes; past it, requests are counted as dropped. */
  bufferSize: number;
  flushIntervalMs: number;
  /** Request log rows (and their hourly roll-ups) older than this are deleted. */
  retentionDays: number;
}

export interface CdnConfig {
  /** Host name of the CDN surface: requests with this Host are CDN requests (on the CDN port and the main port). */
  hostname: string;
  /** Base of asset publicUrls; empty means http://<hostname>:<bound CDN port, or main port without one>. */
  publicUrl: string;
  /** The CDN's own listener; null serves the CDN only Host-routed on the main port. */
  port: number | null;
  /** Interface of the CDN listener; empty means the same as `host`. */
  host: string;
  /** Cache-Control of CDN responses for objects that carry none. */
  defaultCacheControl: string;
  /** Peers (IPs or CIDRs) whose X-Forwarded-For and country header are believed. */
  trustedProxies: string[];
  /** Header a trusted proxy sets to the client's ISO country code (e.g. cf-ipcountry); empty: none. */
  countryHeader: string;
  /** An MMDB country database; empty means the bundled one. */
  geoipDatabase: string;
  cache: CdnCacheConfig;
  log: CdnLogConfig;
}

/** Credit rates (SPEC.md 2.6). Amounts are credits with at most 3 decimals; kept internally as milli-credits. */
export interface CreditsConfig {
  enabled: boolean;
  /** Granted on a user's first credit activity of each calendar month (UTC), as a ledger entry. */
  freeMonthlyCredits: number;
  lowCreditThreshold: number;
  /** Upload charge = ceil(size / uploadCreditUnitBytes) * uploadCreditsPerUnit. */
  uploadCreditUnitBytes: number;
  uploadCreditsPerUnit: number;
  transferCreditsPerGb: number;
  storageCreditsPerGbDay: number;
  /**
   * What a balance at or below zero stops: `refuse-uploads` (uploads get 402, delivery goes on) or
   * `suspend-delivery` (also the CDN and the edge proxy of the owner's content, once
   * deliveryGraceHours have passed since the balance reached zero: src/credits/delivery-suspension.ts).
   */
  atZero: 'refuse-uploads' | 'suspend-delivery';
  /** With `suspend-delivery`: hours (fractions allowed) between the balance reaching zero and delivery stopping. */
  deliveryGraceHours: number;
}

export interface UpstreamS3Config {
  /** e.g. https://s3.eu-west-1.amazonaws.com or http://minio:9000. */
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** <endpoint>/<bucket>/<key> instead of <bucket>.<endpoint host>/<key>. */
  forcePathStyle: boolean;
  /** Key prefix inside the bucket ('' or ending in '/'), so several deployments can share one bucket. */
  prefix: string;
  /**
   * Bytes of one upstream part buffer (at least 5 MiB, S3's smallest part): a body up to this long is
   * one PutObject, a longer one a multipart upload of parts this size; each upload holds one or two.
   */
  partBytes: number;
}

export interface StorageConfig {
  /** Where object bytes live: <dataDir>/storage, or an upstream S3 bucket (docs/upstream.md). */
  backend: 'disk' | 's3';
  s3: UpstreamS3Config;
}

/** How long slow clients may take (src/http/request-guard.ts, src/server.ts), and how much memory uploads may hold. */
export interface LimitsConfig {
  /** All request headers must arrive within this; past it the connection is closed. */
  headersTimeoutSeconds: number;
  /** A body must bring minBodyBytesPerSecond over every window this long, else 400 RequestTimeout and a close. */
  bodyTimeoutSeconds: number;
  minBodyBytesPerSecond: number;
  /**
   * Bytes that upload bodies may hold in memory at once, over every request (inline bodies, hashing
   * rings, upstream part buffers, stream pipes; src/storage/upload-budget.ts). An upload that finds it
   * spent waits unread; 0: no cap.
   */
  uploadBufferBytes: number;
  /** How long an upload may wait for room in uploadBufferBytes before it is refused with 503 SlowDown. */
  uploadBufferWaitMs: number;
}

/** Keeping stored bytes honest (src/storage/blob-gc.ts). */
export interface IntegrityConfig {
  /** Unreferenced blobs younger than this are never collected: a commit in flight lands well within it. */
  gcGraceSeconds: number;
  /** How often the blob collector runs after its pass at start-up. */
  gcIntervalSeconds: number;
  /** The background scrub reads at most this many bytes a second; 0 turns it off. */
  scrubBytesPerSecond: number;
  /** Time between the end of one scrub pass and the start of the next. */
  scrubIntervalSeconds: number;
}

/** RDAP lookups of the domain search (src/domains/availability/). */
export interface DomainsRdapConfig {
  /** An IANA RDAP bootstrap file for DNS (RFC 9224); empty: the one refreshed into the data directory, else config/rdap-dns.json. */
  bootstrapFile: string;
  /** Where `s3edge domains bootstrap refresh` fetches the bootstrap file when given no --url. */
  bootstrapUrl: string;
  /** One RDAP request, connect to answer. */
  timeoutMs: number;
  /** A whole search (a bare label fans out over the popular TLDs) never waits longer than this. */
  searchDeadlineMs: number;
  /** How long an answer (registered, available) is reused. */
  cacheSeconds: number;
  /** How long an `unknown` (timeout, 5xx, 429) is reused. */
  errorCacheSeconds: number;
  /** Consecutive failures of one RDAP server after which it is skipped for breakerCooldownSeconds. */
  breakerFailures: number;
  breakerCooldownSeconds: number;
  /** Largest RDAP answer read; a longer one is a failure. */
  maxAnswerBytes: number;
  /** Let RDAP servers resolve to loopback or private addresses (a loopback fixture in tests); never in production. */
  allowPrivateAddresses: boolean;
}

/** Requests per API key per window on each domain endpoint (SPEC.md §8). */
export interface DomainsRateLimitsConfig {
  windowSeconds: number;
  tlds: number;
  popular: number;
  tldSearch: number;
  search: number;
}

/** The domain reseller (src/domains/). */
export interface DomainsConfig {
  /** Naira per US dollar for prices without a naira price of their own ("1550.00"); `s3edge domains rate set` overrides it at run time. */
  ngnPerUsd: string;
  /** The TLD catalogue seeded into the database on first start; empty: config/tlds.json. */
  seedFile: string;
  rdap: DomainsRdapConfig;
  rateLimits: DomainsRateLimitsConfig;
}

/** The edge reverse proxy for project hostnames (src/edge, src/projects; docs/EDGE.md). */
export interface EdgeConfig {
  /** Let origins resolve to loopback, private, link-local or other special addresses (a loopback origin in tests); never in production. */
  allowPrivateOrigins: boolean;
  /** Connecting to an origin (after DNS). */
  connectTimeoutMs: number;
  /** From the request sent to the origin's response headers. */
  headersTimeoutMs: number;
  /** Longest pause between two chunks of the origin's body. */
  bodyTimeoutMs: number;
  /** Keep-alive connections per origin. */
  connectionsPerOrigin: number;
  /** Per-client limiter entries kept (least recently seen dropped first): bounds memory under a flood from many addresses. */
  maxTrackedClients: number;
  /** DNS servers for hostname verification (`127.0.0.1:5353`); empty: the system's. */
  dnsServers: string[];
  /** Verification looks for TXT `s3edge-verify=<token>` at `<verificationPrefix>.<hostname>`. */
  verificationPrefix: string;
  /** Anomaly detection over the proxied traffic (src/proxy/detect). */
  anomalies: {
    /** Width of one bucket of the series. */
    bucketSeconds: number;
    /** Buckets of history a baseline needs before a spike or drop can be reported. */
    baselineBuckets: number;
    /** Requests in a bucket below which no event opens (quiet hostnames are not news). */
    minRequests: number;
  };
}

/** The account dashboard at /dashboard (src/web, src/auth/sessions.ts; docs/DASHBOARD.md). */
export interface DashboardConfig {
  enabled: boolean;
  /** A session unused this long is over. */
  sessionIdleSeconds: number;
  /** A session is over this long after sign-in, however busy. */
  sessionMaxSeconds: number;
  /** Sign-in attempts (right or wrong) allowed per window, per account name and per client IP. */
  signIn: { windowSeconds: number; perAccount: number; perIp: number };
}

/** GET /metrics (src/metrics/endpoint.ts): Prometheus text for a scraper. */
export interface MetricsConfig {
  enabled: boolean;
  /** When set, /metrics wants `Authorization: Bearer <token>`; empty: open, as Prometheus endpoints usually are. */
  token: string;
}

/** Event notifications (docs/NOTIFICATIONS.md): how webhooks are delivered. */
export interface NotificationsConfig {
  /**
   * Let targets on loopback, private and link-local addresses through the outbound client's address
   * policy (an operator whose receiver is on their own network; tests). Off: public addresses only.
   */
  allowPrivateTargets: boolean;
  /** Deadline of one delivery attempt (connect, answer). */
  timeoutMs: number;
  /** Attempts before an event becomes a dead letter (backoff 1 s, 2 s, 4 s, ... up to 10 min between them). */
  maxAttempts: number;
}

export interface Config {
  dataDir: string;
  host: string;
  port: number;
  /** Endpoint printed and returned to clients; empty means derived from host and the bound port. */
  publicUrl: string;
  region: string;
  /** Domains for virtual-host addressing: `<bucket>.<domain>`. */
  s3Domains: string[];
  maxSkewSeconds: number;
  maxObjectSize: number;
  /**
   * Objects up to this many bytes are kept in the metadata database with their row (one shared WAL
   * sync per batch of PUTs, no file to open on GET); 0 keeps every object in the storage backend.
   */
  inlineObjectMaxBytes: number;
  /** Multipart uploads neither completed nor aborted this long after they began are aborted. */
  multipartMaxAgeSeconds: number;
  /**
   * How often the lifecycle job walks each bucket that has lifecycle rules (src/lifecycle/job.ts);
   * 0: never (`s3edge lifecycle run` still does, on demand).
   */
  lifecycleIntervalSeconds: number;
  /**
   * On SIGTERM/SIGINT, requests in flight get this long to finish; connections still open after it are
   * cut. 0 cuts them at once.
   */
  shutdownGraceSeconds: number;
  /**
   * Serving processes (docs/SCALE.md): 0 = one per core; 1 = one process that also runs the background
   * jobs, as before; N > 1 = a supervisor (jobs, shared counters) and N workers on the same listeners.
   */
  workers: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** json: one JSON object a line (for collectors); pretty: readable lines for a terminal. */
  logFormat: 'json' | 'pretty';
  /** Accepted for configurations that name it, read by nothing: node:sqlite is the one SQLite driver (docs/RUNTIME.md). */
  sqliteDriver: 'auto' | 'node-sqlite';
  /**
   * Where the metadata lives: 'sqlite' (meta.db in the data directory), or a PostgreSQL database
   * (postgres://USER:PASSWORD@HOST:PORT/DB) that many gateway nodes share (docs/DEPLOYMENT.md), and the
   * target of `s3edge metadata copy`. A secret: S3EDGE_METADATA_FILE works, and the password is never printed.
   */
  metadata: string;
  /**
   * On PostgreSQL, bytes of object rows (with small objects' bytes) and buckets each node keeps for its
   * GETs, kept coherent by the change feed (docs/SCALE.md); split among a cluster's workers. 0: none.
   * SQLite reads in-process and keeps none.
   */
  metadataCacheBytes: number;
  rootAccessKey: string;
  rootSecretKey: string;
  /** 32-byte key (64 hex chars or base64) that encrypts secrets at rest; empty means data-dir/master.key. */
  masterKey: string;
  hashing: HashingConfig;
  tls: TlsConfig;
  /** Public product label of the storage (SPEC.md `storageName`); never a provider name. */
  storageName: string;
  cdn: CdnConfig;
  credits: CreditsConfig;
  storage: StorageConfig;
  limits: LimitsConfig;
  integrity: IntegrityConfig;
  domains: DomainsConfig;
  edge: EdgeConfig;
  dashboard: DashboardConfig;
  metrics: MetricsConfig;
  notifications: NotificationsConfig;
  acme: AcmeConfig;
}

const port = { type: 'integer', minimum: 0, maximum: 65535 } as const;
const credits = { type: 'number', minimum: 0, maximum: 1e12 } as const;

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'dataDir', 'host', 'port', 'publicUrl', 'region', 's3Domains', 'maxSkewSeconds', 'maxObjectSize',
    'inlineObjectMaxBytes', 'multipartMaxAgeSeconds', 'lifecycleIntervalSeconds', 'shutdownGraceSeconds', 'workers', 'logLevel', 'logFormat', 'sqliteDriver', 'metadata', 'metadataCacheBytes', 'rootAccessKey', 'rootSecretKey', 'masterKey',
    'hashing', 'tls', 'storageName', 'cdn', 'credits', 'storage', 'limits', 'integrity', 'domains', 'edge',
    'dashboard', 'metrics', 'notifications', 'acme',
  ],
  properties: {
    dataDir: { type: 'string', minLength: 1 },
    host: { type: 'string', minLength: 1 },
    port,
    publicUrl: { type: 'string', pattern: '^(https?://[^\\s/]+)?$' },
    region: { type: 'string', pattern: '^[a-z0-9-]{1,32}$' },
    s3Domains: { type: 'array', items: { type: 'string', pattern: '^[a-z0-9.-]+(:[0-9]+)?$' } },
    maxSkewSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
    maxObjectSize: { type: 'integer', minimum: 1, maximum: 5497558138880 },
    // Past 1 MiB a row would hold the database's write lock for as long as a file write takes.
    inlineObjectMaxBytes: { type: 'integer', minimum: 0, maximum: 1048576 },
    multipartMaxAgeSeconds: { type: 'integer', minimum: 1, maximum: 315360000 },
    lifecycleIntervalSeconds: { type: 'integer', minimum: 0, maximum: 315360000 },
    shutdownGraceSeconds: { type: 'integer', minimum: 0, maximum: 86400 },
    workers: { type: 'integer', minimum: 0, maximum: 256 },
    logLevel: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    logFormat: { enum: ['json', 'pretty'] },
    sqliteDriver: { enum: ['auto', 'node-sqlite'] },
    metadata: { type: 'string', pattern: '^(sqlite|postgres(ql)?://.+)$' },
    metadataCacheBytes: { type: 'integer', minimum: 0, maximum: 1099511627776 },
    rootAccessKey: { type: 'string', pattern: '^([A-Za-z0-9]{3,128})?$' },
    rootSecretKey: { type: 'string', maxLength: 256 },
    masterKey: { type: 'string' },
    hashing: {
      type: 'object',
      additionalProperties: false,
      required: ['workerThreshold', 'workerThreads'],
      properties: {
        workerThreshold: { type: 'integer', minimum: 0, maximum: 5497558138880 },
        workerThreads: { type: 'integer', minimum: 1, maximum: 64 },
      },
    },
    storageName: { type: 'string', minLength: 1, maxLength: 64 },
    cdn: {
      type: 'object',
      additionalProperties: false,
      required: [
        'hostname', 'publicUrl', 'port', 'host', 'defaultCacheControl', 'trustedProxies', 'countryHeader', 'geoipDatabase', 'cache', 'log',
      ],
      properties: {
        hostname: { type: 'string', pattern: '^[a-z0-9.-]{1,253}$' },
        publicUrl: { type: 'string', pattern: '^(https?://[^\\s/]+)?$' },
        port: { anyOf: [port, { type: 'null' }] },
        host: { type: 'string' },
        defaultCacheControl: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[\\x20-\\x7e]+$' },
        trustedProxies: { type: 'array', items: { type: 'string', pattern: '^[0-9a-fA-F:.]+(/[0-9]{1,3})?$' } },
        countryHeader: { type: 'string', pattern: '^([a-z0-9-]{1,64})?$' },
        geoipDatabase: { type: 'string' },
        cache: {
          type: 'object',
          additionalProperties: false,
          required: ['memoryBytes', 'memoryEntryMaxBytes', 'diskBytes'],
          properties: {
            memoryBytes: { type: 'integer', minimum: 0, maximum: 1099511627776 },
            memoryEntryMaxBytes: { type: 'integer', minimum: 0, maximum: 1073741824 },
            diskBytes: { type: 'integer', minimum: 0, maximum: 1125899906842624 },
          },
        },
        log: {
          type: 'object',
          additionalProperties: false,
          required: ['bufferSize', 'flushIntervalMs', 'retentionDays'],
          properties: {
            bufferSize: { type: 'integer', minimum: 1, maximum: 10000000 },
            flushIntervalMs: { type: 'integer', minimum: 10, maximum: 3600000 },
            retentionDays: { type: 'integer', minimum: 1, maximum: 3650 },
          },
        },
      },
    },
    credits: {
      type: 'object',
      additionalProperties: false,
      required: [
        'enabled', 'freeMonthlyCredits', 'lowCreditThreshold', 'uploadCreditUnitBytes', 'uploadCreditsPerUnit',
        'transferCreditsPerGb', 'storageCreditsPerGbDay', 'atZero', 'deliveryGraceHours',
      ],
      properties: {
        enabled: { type: 'boolean' },
        freeMonthlyCredits: credits,
        lowCreditThreshold: credits,
        uploadCreditUnitBytes: { type: 'integer', minimum: 1, maximum: 5497558138880 },
        uploadCreditsPerUnit: credits,
        transferCreditsPerGb: credits,
        storageCreditsPerGbDay: credits,
        atZero: { enum: ['refuse-uploads', 'suspend-delivery'] },
        // Fractions of an hour are allowed (a test's few seconds); at most a year.
        deliveryGraceHours: { type: 'number', minimum: 0, maximum: 8784 },
      },
    },
    storage: {
      type: 'object',
      additionalProperties: false,
      required: ['backend', 's3'],
      properties: {
        backend: { enum: ['disk', 's3'] },
        s3: {
          type: 'object',
          additionalProperties: false,
          required: ['endpoint', 'region', 'bucket', 'accessKeyId', 'secretAccessKey', 'forcePathStyle', 'prefix', 'partBytes'],
          properties: {
            endpoint: { type: 'string', pattern: '^(https?://[^\\s]+)?$' },
            region: { type: 'string', pattern: '^[a-z0-9-]{0,32}$' },
            bucket: { type: 'string', pattern: '^([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])?$' },
            accessKeyId: { type: 'string', maxLength: 256 },
            secretAccessKey: { type: 'string', maxLength: 256 },
            forcePathStyle: { type: 'boolean' },
            prefix: { type: 'string', pattern: '^([A-Za-z0-9._-]+/)*$', maxLength: 512 },
            // S3's smallest part (but the last) to its largest.
            partBytes: { type: 'integer', minimum: 5242880, maximum: 5368709120 },
          },
        },
      },
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      required: ['headersTimeoutSeconds', 'bodyTimeoutSeconds', 'minBodyBytesPerSecond', 'uploadBufferBytes', 'uploadBufferWaitMs'],
      properties: {
        headersTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600 },
        bodyTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600 },
        minBodyBytesPerSecond: { type: 'integer', minimum: 0, maximum: 1073741824 },
        uploadBufferBytes: { type: 'integer', minimum: 0, maximum: 1125899906842624 },
        uploadBufferWaitMs: { type: 'integer', minimum: 0, maximum: 3600000 },
      },
    },
    integrity: {
      type: 'object',
      additionalProperties: false,
      required: ['gcGraceSeconds', 'gcIntervalSeconds', 'scrubBytesPerSecond', 'scrubIntervalSeconds'],
      properties: {
        gcGraceSeconds: { type: 'integer', minimum: 1, maximum: 315360000 },
        gcIntervalSeconds: { type: 'integer', minimum: 1, maximum: 315360000 },
        scrubBytesPerSecond: { type: 'integer', minimum: 0, maximum: 1099511627776 },
        scrubIntervalSeconds: { type: 'integer', minimum: 1, maximum: 315360000 },
      },
    },
    domains: {
      type: 'object',
      additionalProperties: false,
      required: ['ngnPerUsd', 'seedFile', 'rdap', 'rateLimits'],
      properties: {
        ngnPerUsd: { type: 'string', pattern: '^[0-9]{1,9}(\\.[0-9]{1,2})?$' },
        seedFile: { type: 'string' },
        rdap: {
          type: 'object',
          additionalProperties: false,
          required: [
            'bootstrapFile', 'bootstrapUrl', 'timeoutMs', 'searchDeadlineMs', 'cacheSeconds', 'errorCacheSeconds',
            'breakerFailures', 'breakerCooldownSeconds', 'maxAnswerBytes', 'allowPrivateAddresses',
          ],
          properties: {
            bootstrapFile: { type: 'string' },
            bootstrapUrl: { type: 'string', pattern: '^https?://[^\\s]+$' },
            timeoutMs: { type: 'integer', minimum: 100, maximum: 60000 },
            searchDeadlineMs: { type: 'integer', minimum: 100, maximum: 60000 },
            cacheSeconds: { type: 'integer', minimum: 0, maximum: 86400 },
            errorCacheSeconds: { type: 'integer', minimum: 0, maximum: 86400 },
            breakerFailures: { type: 'integer', minimum: 1, maximum: 1000 },
            breakerCooldownSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
            maxAnswerBytes: { type: 'integer', minimum: 1024, maximum: 16777216 },
            allowPrivateAddresses: { type: 'boolean' },
          },
        },
        rateLimits: {
          type: 'object',
          additionalProperties: false,
          required: ['windowSeconds', 'tlds', 'popular', 'tldSearch', 'search'],
          properties: {
            windowSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
            tlds: { type: 'integer', minimum: 1, maximum: 1000000 },
            popular: { type: 'integer', minimum: 1, maximum: 1000000 },
            tldSearch: { type: 'integer', minimum: 1, maximum: 1000000 },
            search: { type: 'integer', minimum: 1, maximum: 1000000 },
          },
        },
      },
    },
    edge: {
      type: 'object',
      additionalProperties: false,
      required: [
        'allowPrivateOrigins', 'connectTimeoutMs', 'headersTimeoutMs', 'bodyTimeoutMs', 'connectionsPerOrigin', 'maxTrackedClients',
        'dnsServers', 'verificationPrefix', 'anomalies',
      ],
      properties: {
        allowPrivateOrigins: { type: 'boolean' },
        connectTimeoutMs: { type: 'integer', minimum: 100, maximum: 600000 },
        headersTimeoutMs: { type: 'integer', minimum: 100, maximum: 3600000 },
        bodyTimeoutMs: { type: 'integer', minimum: 100, maximum: 3600000 },
        connectionsPerOrigin: { type: 'integer', minimum: 1, maximum: 10000 },
        maxTrackedClients: { type: 'integer', minimum: 100, maximum: 100000000 },
        dnsServers: { type: 'array', items: { type: 'string', pattern: '^(\\[[0-9a-fA-F:.]+\\]|[0-9a-fA-F:.]+)(:[0-9]{1,5})?$' } },
        verificationPrefix: { type: 'string', pattern: '^_?[a-z0-9-]{1,63}$' },
        anomalies: {
          type: 'object',
          additionalProperties: false,
          required: ['bucketSeconds', 'baselineBuckets', 'minRequests'],
          properties: {
            bucketSeconds: { type: 'integer', minimum: 10, maximum: 86400 },
            baselineBuckets: { type: 'integer', minimum: 2, maximum: 10000 },
            minRequests: { type: 'integer', minimum: 1, maximum: 100000000 },
          },
        },
      },
    },
    notifications: {
      type: 'object',
      additionalProperties: false,
      required: ['allowPrivateTargets', 'timeoutMs', 'maxAttempts'],
      properties: {
        allowPrivateTargets: { type: 'boolean' },
        timeoutMs: { type: 'integer', minimum: 100, maximum: 600000 },
        maxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
      },
    },
    metrics: {
      type: 'object',
      additionalProperties: false,
      required: ['enabled', 'token'],
      properties: {
        enabled: { type: 'boolean' },
        token: { type: 'string', maxLength: 256 },
      },
    },
    dashboard: {
      type: 'object',
      additionalProperties: false,
      required: ['enabled', 'sessionIdleSeconds', 'sessionMaxSeconds', 'signIn'],
      properties: {
        enabled: { type: 'boolean' },
        sessionIdleSeconds: { type: 'integer', minimum: 60, maximum: 2592000 },
        sessionMaxSeconds: { type: 'integer', minimum: 60, maximum: 31536000 },
        signIn: {
          type: 'object',
          additionalProperties: false,
          required: ['windowSeconds', 'perAccount', 'perIp'],
          properties: {
            windowSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
            perAccount: { type: 'integer', minimum: 1, maximum: 1000000 },
            perIp: { type: 'integer', minimum: 1, maximum: 1000000 },
          },
        },
      },
    },
    tls: {
      type: 'object',
      additionalProperties: false,
      required: ['port', 'host', 'cert', 'key', 'publicPort'],
      properties: {
        port: { anyOf: [port, { type: 'null' }] },
        host: { type: 'string' },
        cert: { type: 'string' },
        key: { type: 'string' },
        publicPort: { anyOf: [{ type: 'integer', minimum: 1, maximum: 65535 }, { type: 'null' }] },
      },
    },
    acme: {
      type: 'object',
      additionalProperties: false,
      required: ['directory', 'email', 'caFile', 'allowPrivateAddresses', 'timeoutMs', 'checkIntervalSeconds', 'ordersPerHostnamePerHour', 'ordersPerUserPerHour'],
      properties: {
        directory: { type: 'string', pattern: '^(https?://[^\\s]+)?$' },
        email: { type: 'string', pattern: '^([^\\s@]+@[^\\s@]+)?$', maxLength: 254 },
        caFile: { type: 'string' },
        allowPrivateAddresses: { type: 'boolean' },
        timeoutMs: { type: 'integer', minimum: 100, maximum: 600000 },
        checkIntervalSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
        ordersPerHostnamePerHour: { type: 'integer', minimum: 1, maximum: 1000 },
        ordersPerUserPerHour: { type: 'integer', minimum: 1, maximum: 100000 },
      },
    },
  },
} as const;

/** Settings that may also be given as S3EDGE_<NAME>_FILE (a path whose content is the value). */
export const SECRET_KEYS = [
  'rootAccessKey', 'rootSecretKey', 'masterKey', 'metadata', 'storage.s3.accessKeyId', 'storage.s3.secretAccessKey', 'metrics.token',
] as const;

/** Byte-valued settings: a number of bytes, or a size with a unit (`256MiB`, `10GB`), see load.ts. */
export const SIZE_KEYS = [
  'maxObjectSize', 'inlineObjectMaxBytes', 'metadataCacheBytes', 'hashing.workerThreshold', 'cdn.cache.memoryBytes', 'cdn.cache.memoryEntryMaxBytes',
  'cdn.cache.diskBytes', 'credits.uploadCreditUnitBytes', 'limits.minBodyBytesPerSecond', 'limits.uploadBufferBytes',
  'storage.s3.partBytes',
  'integrity.scrubBytesPerSecond', 'domains.rdap.maxAnswerBytes',
] as const;

/** Time-valued settings and the unit each is held in: a bare number is in that unit, or `30s`, `5m`, `12h`, `7d`, `250ms`. */
export const DURATION_KEYS = {
  maxSkewSeconds: 's',
  multipartMaxAgeSeconds: 's',
  lifecycleIntervalSeconds: 's',
  shutdownGraceSeconds: 's',
  'cdn.log.flushIntervalMs': 'ms',
  'cdn.log.retentionDays': 'd',
  'limits.headersTimeoutSeconds': 's',
  'limits.bodyTimeoutSeconds': 's',
  'limits.uploadBufferWaitMs': 'ms',
  'integrity.gcGraceSeconds': 's',
  'integrity.gcIntervalSeconds': 's',
  'integrity.scrubIntervalSeconds': 's',
  'domains.rdap.timeoutMs': 'ms',
  'domains.rdap.searchDeadlineMs': 'ms',
  'domains.rdap.cacheSeconds': 's',
  'domains.rdap.errorCacheSeconds': 's',
  'domains.rdap.breakerCooldownSeconds': 's',
  'domains.rateLimits.windowSeconds': 's',
  'edge.connectTimeoutMs': 'ms',
  'notifications.timeoutMs': 'ms',
  'acme.timeoutMs': 'ms',
  'acme.checkIntervalSeconds': 's',
  'edge.headersTimeoutMs': 'ms',
  'edge.bodyTimeoutMs': 'ms',
  'edge.anomalies.bucketSeconds': 's',
  'dashboard.sessionIdleSeconds': 's',
  'dashboard.sessionMaxSeconds': 's',
  'dashboard.signIn.windowSeconds': 's',
} as const;

/** HTTP header names: accepted in any case (`CF-IPCountry`), held lowercased. */
export const HEADER_NAME_KEYS = ['cdn.countryHeader'] as const;

