// JSON schemas of the management API (SPEC.md §2, §4), with their TypeScript types. Fastify validates
// requests and serializes responses with them: a field that is not in a response schema is never sent,
// so internal names (blob ids, storage paths, bucket ids) cannot leak by accident. src/client uses the types.
import { Type, type Static, type TSchema } from '@sinclair/typebox';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    message: Type.String(),
    code: Type.String(),
    requiredCredits: Type.Optional(Type.Number()),
    balance: Type.Optional(Type.Number()),
    // quota_exceeded (403): which quota, the bucket's name when it is a bucket's, and its figures in bytes.
    quota: Type.Optional(Type.Union([Type.Literal('user'), Type.Literal('bucket')])),
    bucket: Type.Optional(Type.String()),
    quotaBytes: Type.Optional(Type.Integer()),
    storedBytes: Type.Optional(Type.Integer()),
    reservedBytes: Type.Optional(Type.Integer()),
    requiredBytes: Type.Optional(Type.Integer()),
  },
  { $id: 'ErrorBody' },
);
export type ErrorBody = Static<typeof ErrorBody>;

export const Visibility = Type.Union([Type.Literal('public'), Type.Literal('private')]);
export const Kind = Type.Union([Type.Literal('file'), Type.Literal('artifact')]);

export const AssetMetadata = Type.Object({
  'file-name': Type.String(),
  kind: Kind,
  sha256: Type.String(),
  visibility: Visibility,
});

/** SPEC.md 2.1. */
export const Asset = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  projectId: Nullable(Type.String()),
  deploymentId: Nullable(Type.String()),
  storageName: Type.String(),
  key: Type.String(),
  fileName: Type.String(),
  contentType: Type.String(),
  size: Type.Integer(),
  publicUrl: Type.String(),
  sha256: Type.String(),
  etag: Type.String(),
  visibility: Visibility,
  kind: Kind,
  metadata: AssetMetadata,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type Asset = Static<typeof Asset>;

/** The list response omits userId, projectId, deploymentId, sha256, etag and metadata (SPEC.md 2.1). */
export const AssetListItem = Type.Omit(Asset, ['userId', 'projectId', 'deploymentId', 'sha256', 'etag', 'metadata']);
export type AssetListItem = Static<typeof AssetListItem>;

export const Pagination = Type.Object({
  page: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer(),
  pages: Type.Integer(),
});
export type Pagination = Static<typeof Pagination>;

export const SeriesPoint = Type.Object({
  timestamp: Type.String(),
  requests: Type.Integer(),
  bytes: Type.Integer(),
  cachedBytes: Type.Integer(),
});

/** SPEC.md 2.4. */
export const Analytics = Type.Object({
  enabled: Type.Boolean(),
  available: Type.Boolean(),
  hostname: Type.String(),
  requests: Type.Integer(),
  bytes: Type.Integer(),
  cachedBytes: Type.Integer(),
  cacheHitRatio: Type.Number(),
  statusCodes: Type.Record(Type.String(), Type.Integer()),
  countries: Type.Record(Type.String(), Type.Integer()),
  series: Type.Array(SeriesPoint),
});
export type Analytics = Static<typeof Analytics>;

/** SPEC.md 2.5. */
export const Space = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('suspended')]),
  suspendedAt: Nullable(Type.String()),
});
export type Space = Static<typeof Space>;

/** SPEC.md 2.6. */
export const Credits = Type.Object({
  enabled: Type.Boolean(),
  balance: Type.Number(),
  usedCredits: Type.Number(),
  lowCreditThreshold: Type.Number(),
  projectedDailyStorageCredits: Type.Number(),
  freeMonthlyCredits: Type.Number(),
  uploadCreditUnitBytes: Type.Number(),
  uploadCreditsPerUnit: Type.Number(),
  transferCreditsPerGb: Type.Number(),
  storageCreditsPerGbDay: Type.Number(),
  // Beyond SPEC.md 2.6 (docs/API.md "Usage and credits"): what happens at zero, and when.
  low: Type.Boolean({ description: 'Credits are on and the balance is below lowCreditThreshold' }),
  atZero: Type.Union([Type.Literal('refuse-uploads'), Type.Literal('suspend-delivery')], {
    description: 'What a balance at or below zero stops: uploads only, or also public delivery (CDN, project hostnames) after deliveryGraceHours',
  }),
  deliveryGraceHours: Type.Number({ description: "With 'suspend-delivery': hours from the balance reaching zero to delivery stopping" }),
  depletedAt: Nullable(Type.String({ format: 'date-time', description: 'Since when the balance is at or below zero; null while above zero' })),
  deliverySuspendsAt: Nullable(Type.String({ format: 'date-time', description: "When public delivery stops (or stopped) for want of credits; null unless 'suspend-delivery' and at or below zero" })),
  deliverySuspended: Type.Boolean({ description: 'deliverySuspendsAt has passed: the CDN and the edge proxy answer 402 for this user\'s content' }),
});
export type Credits = Static<typeof Credits>;

/** SPEC.md 2.3. */
export const Summary = Type.Object({
  totalFiles: Type.Integer(),
  storageBytes: Type.Integer(),
  uploadedBytes: Type.Integer(),
  downloadedBytes: Type.Integer(),
  uploadsLast24h: Type.Integer(),
  recentAssets: Type.Array(Asset),
  analytics: Analytics,
  configured: Type.Boolean(),
  storageName: Type.String(),
  space: Space,
  credits: Credits,
});
export type Summary = Static<typeof Summary>;

/** SPEC.md 2.7. */
export const UsageEvent = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  assetId: Type.String(),
  eventType: Type.String(),
  source: Type.String(),
  bytes: Type.Integer(),
  hostname: Type.String(),
  country: Type.String(),
  statusCode: Type.Integer(),
  metadata: Type.Object({ key: Type.String() }),
  createdAt: Type.String(),
});
export type UsageEvent = Static<typeof UsageEvent>;

/** SPEC.md 2.8. */
export const LedgerEntry = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  assetId: Type.String(),
  eventType: Type.String(),
  bytes: Type.Integer(),
  rate: Type.Number(),
  credits: Type.Number(),
  balanceAfter: Type.Number(),
  metadata: Type.Object({
    key: Type.Optional(Type.String()),
    note: Type.Optional(Type.String()),
    /** A metered charge's span, `<start>/<end>` (ISO 8601): the hour a transfer entry is for, the UTC day a storage entry is for. */
    period: Type.Optional(Type.String()),
    /** The sampled hours of the day a storage entry charges. */
    hours: Type.Optional(Type.Integer()),
  }),
  createdAt: Type.String(),
});
export type LedgerEntry = Static<typeof LedgerEntry>;

/** An API key as listed: never its token. */
export const ApiKeyInfo = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  createdAt: Type.String(),
});
export type ApiKeyInfo = Static<typeof ApiKeyInfo>;

/** A created API key: the token is in this response only. */
export const CreatedApiKey = Type.Intersect([ApiKeyInfo, Type.Object({ token: Type.String() })]);
export type CreatedApiKey = Static<typeof CreatedApiKey>;

export const Permission = Type.Union([Type.Literal('read'), Type.Literal('read_write')]);

/** A bucket's S3 access key as listed (SPEC.md 2.9): never its secret. */
export const StorageAccessKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  permission: Permission,
  bucket: Type.String(),
  accessKeyId: Type.String(),
  createdAt: Type.String(),
});
export type StorageAccessKey = Static<typeof StorageAccessKey>;

/** A created S3 access key with its connection details; the secret is in this response only. */
export const CreatedStorageAccessKey = Type.Intersect([
  StorageAccessKey,
  Type.Object({
    secretAccessKey: Type.String(),
    endpoint: Type.String(),
    region: Type.String(),
    forcePathStyle: Type.Boolean(),
  }),
]);
export type CreatedStorageAccessKey = Static<typeof CreatedStorageAccessKey>;

export const SuccessMessage = Type.Object({ success: Type.Boolean(), message: Type.String() });
export type SuccessMessage = Static<typeof SuccessMessage>;

/** GET /api/v3/storage/quota: what the caller stores and may store, as a whole and per bucket (quotaBytes null: no quota). */
export const StorageQuota = Type.Object({
  user: Type.Object({
    storedBytes: Type.Integer({ description: 'Everything the account stores: its buckets (objects, noncurrent versions, parts of unfinished multipart uploads) and its assets' }),
    assetBytes: Type.Integer({ description: 'Of which assets' }),
    quotaBytes: Nullable(Type.Integer({ description: "The account's storage quota; null: none" })),
  }),
  buckets: Type.Array(Type.Object({
    name: Type.String(),
    storedBytes: Type.Integer(),
    quotaBytes: Nullable(Type.Integer({ description: "The bucket's storage quota; null: none" })),
  })),
}, { examples: [{ user: { storedBytes: 7516192768, assetBytes: 52428800, quotaBytes: 10737418240 }, buckets: [{ name: 'photos', storedBytes: 7463763968, quotaBytes: 8589934592 }, { name: 'backups', storedBytes: 0, quotaBytes: null }] }] });
export type StorageQuota = Static<typeof StorageQuota>;

/** Standard error responses of every authenticated route. */
export const ERROR_RESPONSES = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
} as const;

/** Proxy log data (SPEC.md 2.11; field names are ours, see docs/API.md). */
const Severity = Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')]);
const RiskRating = Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high'), Type.Literal('critical')]);

/** An anomaly on a hostname's proxied traffic (src/proxy/detect): open while endedAt is null. */
export const Anomaly = Type.Object({
  id: Type.String(),
  hostname: Type.String(),
  kind: Type.String(),
  severity: Severity,
  startedAt: Type.String(),
  endedAt: Nullable(Type.String()),
  observed: Type.Number(),
  baseline: Type.Number(),
  detail: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()])),
});
export type Anomaly = Static<typeof Anomaly>;

const TrafficSource = Type.Object({
  ip: Type.String(),
  requests: Type.Integer(),
  bytes: Type.Integer(),
  blocked: Type.Integer(),
  risk: Type.Object({ index: Type.Integer(), rating: RiskRating }),
});

/** GET /api/v3/cdn/proxy-logs/requests: the request log, a page at a time, newest first. */
export const LoggedRequests = Type.Object({
  from: Type.String(),
  to: Type.String(),
  requests: Type.Array(
    Type.Object({
      id: Type.Integer(),
      time: Type.String(),
      host: Type.String(),
      surface: Type.Union([Type.Literal('cdn'), Type.Literal('proxy')]),
      method: Type.String(),
      path: Type.String(),
      status: Type.Integer(),
      decision: Type.String(),
      bytesSent: Type.Integer(),
      bytesIn: Type.Integer(),
      clientIp: Type.String(),
      country: Type.String(),
      countryName: Type.String(),
      userAgent: Type.String(),
      durationMs: Type.Number(),
      cacheStatus: Nullable(Type.String()),
    }),
  ),
  nextCursor: Nullable(Type.String()),
});
export type LoggedRequests = Static<typeof LoggedRequests>;

/** GET /api/v3/cdn/anomalies/:id: the event and where its span of traffic came from. */
export const AnomalyDetail = Type.Object({
  anomaly: Anomaly,
  requests: Type.Integer(),
  sources: Type.Array(TrafficSource),
  countries: Type.Array(Type.Object({ code: Type.String(), country: Type.String(), requests: Type.Integer(), blocked: Type.Integer(), share: Type.Number() })),
});
export type AnomalyDetail = Static<typeof AnomalyDetail>;

/** GET /api/v3/cdn/proxy-logs (SPEC.md 2.11; docs/EDGE.md). */
export const ProxyLogs = Type.Object({
  available: Type.Boolean(),
  hostname: Nullable(Type.String()),
  hours: Type.Integer(),
  from: Type.String(),
  to: Type.String(),
  hostnames: Type.Array(
    Type.Object({
      hostname: Type.String(),
      kind: Type.Union([Type.Literal('project'), Type.Literal('cdn')]),
      projectId: Nullable(Type.String()),
      verified: Type.Boolean(),
      /** A project hostname's certificate (beyond SPEC.md 2.11; docs/EDGE.md "HTTPS"); null for the CDN hostname. */
      https: Nullable(
        Type.Object({
          state: Type.Union([Type.Literal('pending'), Type.Literal('issuing'), Type.Literal('issued'), Type.Literal('failed')]),
          certificate: Nullable(Type.Union([Type.Literal('acme'), Type.Literal('uploaded')])),
          notAfter: Nullable(Type.String()),
          lastError: Nullable(Type.String()),
        }),
      ),
      requests: Type.Integer(),
      blocked: Type.Integer(),
    }),
  ),
  requests: Type.Object({
    total: Type.Integer(),
    allowed: Type.Integer(),
    blocked: Type.Integer(),
    blockedBy: Type.Record(Type.String(), Type.Integer()),
    serverErrors: Type.Integer(),
  }),
  bytes: Type.Integer(),
  series: Type.Object({
    bucketSeconds: Type.Integer(),
    points: Type.Array(Type.Object({ start: Type.String(), requests: Type.Integer(), allowed: Type.Integer(), blocked: Type.Integer(), bytes: Type.Integer() })),
  }),
  risk: Type.Object({
    index: Type.Integer(),
    rating: RiskRating,
    signals: Type.Array(Type.Object({ name: Type.String(), value: Type.Number(), weight: Type.Number(), points: Type.Number() })),
  }),
  geo: Type.Array(Type.Object({ country: Type.String(), code: Type.String(), requests: Type.Integer(), share: Type.Number() })),
  geoConcentration: Type.Object({ index: Type.Number(), topCountry: Nullable(Type.String()), topShare: Type.Number() }),
  topSources: Type.Array(TrafficSource),
  topSourcesByBytes: Type.Array(TrafficSource),
  anomalies: Type.Array(Anomaly),
});
export type ProxyLogs = Static<typeof ProxyLogs>;

/** The edge cache's counters and sizes (GET /api/v3/cdn/cache). */
export const CacheStats = Type.Object({
  storageReads: Type.Integer(),
  hits: Type.Integer(),
  misses: Type.Integer(),
  expired: Type.Integer(),
  bypasses: Type.Integer(),
  memoryBytes: Type.Integer(),
  memoryEntries: Type.Integer(),
  diskBytes: Type.Integer(),
  diskEntries: Type.Integer(),
  fillsInFlight: Type.Integer(),
});
export type CacheStats = Static<typeof CacheStats>;

/** SPEC.md 2.10's promotion fields: null when no promotion is active. */
const PromotionFields = {
  bonusAmount: Nullable(Type.Number()),
  bonusAmountUSD: Nullable(Type.Number()),
  bonusEndingDate: Nullable(Type.String()),
};

const Restrictions = Type.Object({ text: Type.String(), requiresLocalPresence: Type.Boolean() });

/** Yearly prices (dollars and naira, two decimals) and what a TLD allows: of a TLD, and of a name under it. */
const YearlyPrices = {
  registerDollar: Type.Number(),
  registerNaira: Type.Number(),
  renewDollar: Type.Number(),
  renewNaira: Type.Number(),
  transferDollar: Type.Number(),
  transferNaira: Type.Number(),
  minYears: Type.Integer(),
  maxYears: Type.Integer(),
  restrictions: Restrictions,
};

/** A TLD of the catalogue with its yearly prices and active promotion. */
export const Tld = Type.Object({
  tld: Type.String(),
  extension: Type.String(),
  ...YearlyPrices,
  popular: Type.Boolean(),
  popularRank: Nullable(Type.Integer()),
  ...PromotionFields,
});
export type Tld = Static<typeof Tld>;

export const TldMatch = Type.Intersect([Tld, Type.Object({ match: Type.Union([Type.Literal('exact'), Type.Literal('label'), Type.Literal('prefix')]) })]);
export type TldMatch = Static<typeof TldMatch>;

/** SPEC.md 2.10: one name's availability and prices. */
export const DomainResult = Type.Object({
  domain: Type.String(),
  domainUnicode: Type.String(),
  tld: Type.String(),
  available: Type.Boolean(),
  status: Type.Union([Type.Literal('available'), Type.Literal('registered'), Type.Literal('reserved'), Type.Literal('unknown')]),
  purchaseType: Type.Union([Type.Literal('standard'), Type.Literal('premium'), Type.Literal('unavailable')]),
  ...YearlyPrices,
  ...PromotionFields,
  provider: Type.Union([Type.Literal('local'), Type.Literal('rdap')]),
  checkedBy: Nullable(Type.String()),
  checkedAt: Type.String(),
  cached: Type.Boolean(),
  reason: Nullable(Type.String()),
});
export type DomainResult = Static<typeof DomainResult>;

export const DomainSearchResponse = Type.Object({
  success: Type.Boolean(),
  query: Type.String(),
  kind: Type.Union([Type.Literal('domain'), Type.Literal('label')]),
  results: Type.Array(DomainResult),
});
export type DomainSearchResponse = Static<typeof DomainSearchResponse>;

/** A project (docs/API.md "Projects and hostnames"). */
export const Project = Type.Object({ id: Type.String(), name: Type.String(), createdAt: Type.String() });
export type Project = Static<typeof Project>;

export const Deployment = Type.Object({ id: Type.String(), projectId: Type.String(), name: Type.String(), createdAt: Type.String() });
export type Deployment = Static<typeof Deployment>;

/** Where a hostname's requests go: a URL, or one of the owner's buckets by name (null once deleted). */
export const HostnameOrigin = Type.Union([
  Type.Object({ kind: Type.Literal('url'), url: Type.String(), preserveHost: Type.Boolean() }),
  Type.Object({ kind: Type.Literal('bucket'), bucket: Nullable(Type.String()), indexDocument: Type.String(), errorDocument: Nullable(Type.String()) }),
]);
export type HostnameOrigin = Static<typeof HostnameOrigin>;

/** A hostname's rate limit and bans (src/db/repos/hostname-model.ts). */
export const HostRateLimit = Type.Object({
  requestsPerSecond: Type.Number(),
  burst: Type.Number(),
  banAfter: Type.Number(),
  banWindowSeconds: Type.Number(),
  banSeconds: Type.Number(),
  maxBanSeconds: Type.Number(),
});

/** A hostname's protection rules (src/db/repos/hostname-model.ts HostRules). */
export const HostnameRules = Type.Object({
  allowIps: Type.Array(Type.String()),
  blockIps: Type.Array(Type.String()),
  blockCountries: Type.Array(Type.String()),
  allowedMethods: Type.Array(Type.String()),
  maxBodyBytes: Nullable(Type.Number()),
  rateLimit: Nullable(HostRateLimit),
});
export type HostnameRules = Static<typeof HostnameRules>;

/** An origin as PUT .../origin takes it (defaults: preserveHost false, indexDocument index.html, no error document); the service checks it. */
export const OriginInput = Type.Union(
  [
    Type.Object({ kind: Type.Literal('url'), url: Type.String(), preserveHost: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    Type.Object(
      { kind: Type.Literal('bucket'), bucket: Type.String(), indexDocument: Type.Optional(Type.String()), errorDocument: Type.Optional(Nullable(Type.String())) },
      { additionalProperties: false },
    ),
  ],
  { examples: [{ kind: 'bucket', bucket: 'photos', indexDocument: 'index.html' }] },
);
export type OriginInput = Static<typeof OriginInput>;

/** Rules as PUT .../rules takes them: a missing field means no rule, a rate limit needs requestsPerSecond only; the service checks them. */
export const RulesInput = Type.Object(
  {
    ...Type.Partial(Type.Omit(HostnameRules, ['rateLimit'])).properties,
    rateLimit: Type.Optional(Nullable(Type.Composite([Type.Partial(HostRateLimit), Type.Object({ requestsPerSecond: Type.Number() })]))),
  },
  { additionalProperties: false, examples: [{ blockCountries: ['KP'], rateLimit: { requestsPerSecond: 20 } }] },
);
export type RulesInput = Static<typeof RulesInput>;

/** The DNS record that proves control of a hostname. */
export const VerificationRecord = Type.Object({ name: Type.String(), type: Type.Literal('TXT'), value: Type.String() });
export type VerificationRecord = Static<typeof VerificationRecord>;

/** A project hostname served by the edge proxy once verified. */
export const Hostname = Type.Object({
  id: Type.String(),
  hostname: Type.String(),
  projectId: Type.String(),
  origin: Nullable(HostnameOrigin),
  rules: HostnameRules,
  verified: Type.Boolean(),
  verifiedAt: Nullable(Type.String()),
  verifiedBy: Nullable(Type.Union([Type.Literal('dns'), Type.Literal('operator')])),
  verification: VerificationRecord,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type Hostname = Static<typeof Hostname>;

/** A hostname's HTTPS settings (docs/API.md "HTTPS of a hostname"). */
export const TlsSettings = Type.Object({
  redirectHttps: Type.Boolean({ description: 'Plain HTTP requests are answered 308 to https:// (once the hostname has a certificate)' }),
  hstsMaxAge: Type.Integer({ minimum: 0, maximum: 63072000, description: 'Strict-Transport-Security max-age of HTTPS answers, in seconds; 0: no header' }),
  hstsIncludeSubdomains: Type.Boolean({ description: 'includeSubDomains in the Strict-Transport-Security header' }),
  minTls: Type.Union([Type.Literal('1.2'), Type.Literal('1.3')], { description: 'Handshakes below this TLS version are cut' }),
});
export type TlsSettings = Static<typeof TlsSettings>;

/** PATCH .../tls: the settings to change (the rest stay); the service checks them, naming the field. */
export const TlsSettingsInput = Type.Partial(TlsSettings, { additionalProperties: false, examples: [{ redirectHttps: true, hstsMaxAge: 31536000 }] });
export type TlsSettingsInput = Static<typeof TlsSettingsInput>;

const PEM_EXAMPLE_CERT = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU...\n-----END CERTIFICATE-----\n';

/** PUT .../tls/certificate: a PEM chain (the hostname's certificate first) and its unencrypted private key. */
export const CertificateUpload = Type.Object(
  {
    certificate: Type.String({ description: "PEM certificates, the hostname's first, then its intermediates" }),
    privateKey: Type.String({ description: "The certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1), unencrypted; stored sealed, never shown again" }),
  },
  { additionalProperties: false, examples: [{ certificate: PEM_EXAMPLE_CERT, privateKey: '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49...\n-----END PRIVATE KEY-----\n' }] },
);
export type CertificateUpload = Static<typeof CertificateUpload>;

/** The certificate a hostname serves over HTTPS (never its key). */
export const TlsCertificate = Type.Object({
  source: Type.Union([Type.Literal('acme'), Type.Literal('uploaded')]),
  fingerprint: Type.String({ description: "SHA-256 of the hostname's certificate, hex pairs with colons" }),
  names: Type.Array(Type.String(), { description: 'Its subjectAltName DNS names' }),
  notBefore: Type.String(),
  notAfter: Type.String(),
  renewsAt: Nullable(Type.String({ description: 'When ACME renews it (two-thirds of its lifetime in); null for an uploaded one' })),
  expired: Type.Boolean(),
});

/** GET .../tls: a hostname's HTTPS in one view: the state in a word and a sentence, the certificate, the settings. */
export const TlsStatus = Type.Object(
  {
    hostname: Type.String(),
    state: Type.Union(
      [
        Type.Literal('unverified'), Type.Literal('acme-off'), Type.Literal('pending'), Type.Literal('issuing'),
        Type.Literal('issued'), Type.Literal('failed'), Type.Literal('uploaded'),
      ],
      { description: 'unverified, acme-off, pending, issuing, issued, failed or uploaded (docs/API.md "HTTPS of a hostname")' },
    ),
    summary: Type.String({ description: 'The state in a sentence for the hostname\'s owner' }),
    acme: Type.Boolean({ description: 'Whether this server obtains certificates by ACME (acme.directory)' }),
    certificate: Nullable(TlsCertificate),
    lastError: Nullable(Type.String({ description: "The last issuance's failure, in words" })),
    failures: Type.Integer({ minimum: 0, description: 'Issuance failures in a row' }),
    nextAttemptAt: Nullable(Type.String({ description: 'When the ACME job acts next (issue, retry, renew); null: not scheduled' })),
    settings: TlsSettings,
  },
  {
    examples: [
      {
        hostname: 'www.example.com',
        state: 'issued',
        summary: 'Served over HTTPS until 2026-08-02T09:30:00.000Z',
        acme: true,
        certificate: {
          source: 'acme',
          fingerprint: '3F:0A:9C:21:7B:44:E0:5D:18:C2:6A:90:BB:13:7E:F4:02:5C:88:D1:4A:6E:93:07:AF:31:C5:E8:60:2B:19:D7',
          names: ['www.example.com'],
          notBefore: '2026-05-04T09:30:00.000Z',
          notAfter: '2026-08-02T09:30:00.000Z',
          renewsAt: '2026-07-03T09:30:00.000Z',
          expired: false,
        },
        lastError: null,
        failures: 0,
        nextAttemptAt: '2026-07-03T09:30:00.000Z',
        settings: { redirectHttps: true, hstsMaxAge: 31536000, hstsIncludeSubdomains: false, minTls: '1.2' },
      },
    ],
  },
);
export type TlsStatus = Static<typeof TlsStatus>;

/** A bucket's visibility (PUT /api/v3/buckets/:bucket/public). */
export const BucketVisibility = Type.Object({ name: Type.String(), public: Type.Boolean() });
export type BucketVisibility = Static<typeof BucketVisibility>;

/** A bucket as GET/POST /api/v3/buckets show it. */
export const BucketView = Type.Object({
  name: Type.String(),
  region: Type.String(),
  public: Type.Boolean(),
  objects: Type.Integer(),
  createdAt: Type.String(),
});
export type BucketView = Static<typeof BucketView>;

export const MAX_OBJECT_KEY_BYTES = 1024;

/** POST /api/v3/buckets/:bucket/presign: one S3 operation on one of the caller's buckets (put and delete need objects:write). */
export const ObjectPresignRequest = Type.Object(
  {
    operation: Type.Union([Type.Literal('list'), Type.Literal('get'), Type.Literal('put'), Type.Literal('delete')]),
    key: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_OBJECT_KEY_BYTES })),
    prefix: Type.Optional(Type.String({ maxLength: MAX_OBJECT_KEY_BYTES })),
    delimiter: Type.Optional(Type.String({ maxLength: 16 })),
    continuationToken: Type.Optional(Type.String({ maxLength: 4096 })),
    maxKeys: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    download: Type.Optional(Type.Boolean()),
    /** Seconds a `get` URL stays good (default 300, at most 7 days: a link to share). */
    expiresIn: Type.Optional(Type.Integer({ minimum: 1, maximum: 604800 })),
  },
  { additionalProperties: false, examples: [{ operation: 'get', key: 'holidays/beach.jpg', download: true, expiresIn: 3600 }] },
);
export type ObjectPresignRequest = Static<typeof ObjectPresignRequest>;

/** What a purge names (POST /api/v3/cdn/purge): one asset, a bucket's keys under a prefix, or everything the caller owns. */
export type PurgeRequest = { assetId: string } | { bucket: string; prefix?: string } | { all: true };
