// The repositories over one database handle. Every SQL statement of these tables lives in db/repos.
import type { Db } from '../open.js';
import { SqliteStore } from '../store/sqlite-store.js';
import type { SqlExecutor, SqlStore } from '../store/types.js';
import { AccessKeysRepo } from './access-keys.js';
import { ApiKeysRepo } from './api-keys.js';
import { AssetsRepo } from './assets.js';
import { BlobRefsRepo } from './blob-refs.js';
import { IntegrityRepo } from './integrity.js';
import { CreditsRepo } from './credits.js';
import { CreditReservationsRepo } from './credit-reservations.js';
import { SpacesRepo } from './spaces.js';
import { UsageRepo } from './usage.js';
import { BucketCorsRepo } from './bucket-cors.js';
import { BucketTaggingRepo } from './bucket-tagging.js';
import { BucketAclsRepo, BucketPoliciesRepo } from './bucket-access.js';
import { BucketLifecycleRepo } from './bucket-lifecycle.js';
import { BucketNotificationsRepo, NotificationOutboxRepo, NotificationTargetsRepo } from './notifications.js';
import { TransferChargesRepo } from './transfer-charges.js';
import { StorageUsageRepo } from './storage-usage.js';
import { StorageQuotasRepo } from './storage-quotas.js';
import { BucketsRepo } from './buckets.js';
import { SettingsRepo } from './settings.js';
import { UsersRepo } from './users.js';
import { TldsRepo } from './tlds.js';
import { ObjectsRepo } from './objects.js';
import { ProjectsRepo } from './projects.js';
import { AnomaliesRepo } from './anomalies.js';
import { SessionsRepo } from './sessions.js';
import { CacheInvalidationsRepo } from './cache-invalidations.js';
import { RateLimitsRepo } from './rate-limits.js';
import { BlobRemovalsRepo } from './blob-removals.js';
import { HostnameTlsRepo } from './hostname-tls.js';

export { AccessKeysRepo, ApiKeysRepo, AssetsRepo, BlobRefsRepo, BucketCorsRepo, IntegrityRepo, BucketsRepo, CreditReservationsRepo, CreditsRepo, ProjectsRepo, SettingsRepo, SpacesRepo, TldsRepo, UsageRepo, UsersRepo };
export type { Deployment, Project, ProjectHostname } from './projects.js';
export { AnomaliesRepo } from './anomalies.js';
export { SessionsRepo, type SessionRecord } from './sessions.js';
export { CacheInvalidationsRepo, type Invalidation, type InvalidationKind, type NewInvalidation } from './cache-invalidations.js';
export type { AnomalyQuery } from './anomalies.js';
export type { AccessKey, AccessKeyFilter, AccessKeyKind, BucketPermission, NewAccessKey } from './access-keys.js';
export type { Bucket, BucketDeleteResult, NewBucket } from './buckets.js';
export type { CorsRule } from './bucket-cors.js';
export type { LifecycleFilter, LifecycleProgress, LifecycleRule } from './bucket-lifecycle.js';
export type { User } from './users.js';
export type { ApiKey } from './api-keys.js';
export type { AssetKind, AssetQuery, AssetRecord, AssetVisibility } from './assets.js';
export type { CreditAccount, LedgerEntry, LedgerEventType } from './credits.js';
export type { Space, SpaceStatus } from './spaces.js';
export type { UsageEvent, UsageEventType, UsageSource } from './usage.js';
export type { DomainNameRecord, DomainNameStatus, Promotion, TldRecord } from './tlds.js';
export type { PublicAcl } from './bucket-access.js';
export type { NotificationTarget, OutboxEvent, StoredQueueConfiguration } from './notifications.js';
export { ConstraintError, type ConstraintReason } from './errors.js';
export type { BucketStorage, QuotaLimits } from './storage-quotas.js';

/** Extend this interface (and createRepos) when a table gets its repository. */
export interface Repos {
  users: UsersRepo;
  buckets: BucketsRepo;
  accessKeys: AccessKeysRepo;
  settings: SettingsRepo;
  bucketCors: BucketCorsRepo;
  bucketTagging: BucketTaggingRepo;
  bucketPolicies: BucketPoliciesRepo;
  bucketAcls: BucketAclsRepo;
  /** Lifecycle rules and the lifecycle job's progress per bucket (src/lifecycle). */
  bucketLifecycle: BucketLifecycleRepo;
  bucketNotifications: BucketNotificationsRepo;
  notificationTargets: NotificationTargetsRepo;
  notificationOutbox: NotificationOutboxRepo;
  /** Public traffic per owner and hour, and what of it the ledger has charged (credits/transfer-settlement.ts). */
  transferCharges: TransferChargesRepo;
  storageUsage: StorageUsageRepo;
  /** Users' and buckets' storage quotas and the reservations uploads hold against them (credits/quotas.ts). */
  storageQuotas: StorageQuotasRepo;
  apiKeys: ApiKeysRepo;
  spaces: SpacesRepo;
  assets: AssetsRepo;
  usage: UsageRepo;
  credits: CreditsRepo;
  /** Credits set aside by uploads in progress, in every process (src/credits/credits.ts). */
  creditReservations: CreditReservationsRepo;
  blobRefs: BlobRefsRepo;
  integrity: IntegrityRepo;
  /** Object metadata and the bytes of small objects (the server's S3 path and the scrub). */
  objects: ObjectsRepo;
  /** The domain reseller's catalogue, promotions and own names. */
  tlds: TldsRepo;
  /** Projects, deployments and the hostnames the edge proxy serves. */
  projects: ProjectsRepo;
  /** Project hostnames' TLS settings, certificates, ACME challenges and orders (src/certificates). */
  hostnameTls: HostnameTlsRepo;
  /** Anomaly events on project hostnames' traffic (src/proxy/detect). */
  anomalies: AnomaliesRepo;
  /** Dashboard sign-in sessions (src/auth/sessions.ts). */
  sessions: SessionsRepo;
  /** The cache invalidation feed every gateway process tails (src/cdn/cache-purges.ts). */
  cacheInvalidations: CacheInvalidationsRepo;
  /** Rate-limit counters shared by nodes on one PostgreSQL (src/cluster/store-rate-limits.ts). */
  rateLimits: RateLimitsRepo;
  /** Freed blobs removed after a grace when nodes share one upstream store (src/storage/blob-removals.ts). */
  blobRemovals: BlobRemovalsRepo;
  /** The store the repositories run on (db/store): the database itself, or inside `transact`, the transaction. */
  store: SqlExecutor;
  /**
   * Runs `fn` in one transaction of the store (SqlExecutor.transaction: IMMEDIATE on SQLite,
   * SERIALIZABLE and re-run on conflict on PostgreSQL; a savepoint when nested), with repositories
   * bound to it: every statement of `fn` goes through the `repos` it is given.
   */
  transact<T>(fn: (repos: Repos) => Promise<T>): Promise<T>;
  /**
   * Moves when another connection or node commits a change (SqlStore.changeVersion: SQLite's
   * data_version, PostgreSQL's NOTIFY s3edge_changes), never for this connection's own commits. A
   * cache of data only other processes write is valid while it holds still.
   */
  dataVersion(): number;
}

export interface RepoOptions {
  /** Unix-milliseconds clock for createdAt columns. */
  clock?: () => number;
}

function isSqliteConnection(db: Db | SqlStore): db is Db {
  return typeof (db as Db).prepare === 'function';
}

/**
 * The repositories over a metadata store (SQLite or PostgreSQL, db/store), or over a SQLite connection
 * (wrapped in a SqliteStore: tests and tools that open meta.db themselves).
 */
export function createRepos(db: Db | SqlStore, opts: RepoOptions = {}): Repos {
  const clock = opts.clock ?? Date.now;
  const store: SqlStore = isSqliteConnection(db) ? new SqliteStore(db) : db;
  const dataVersion = (): number => store.changeVersion();
  // The node's cache of hot rows (PostgreSQL): read through by the store's own repositories only; a
  // transaction reads its own snapshot.
  const cache = store.readCache;
  const bound = (exec: SqlExecutor): Repos => {
    const cached = exec === store ? cache : undefined;
    const repos: Repos = {
      dataVersion,
      buckets: new BucketsRepo(exec, clock, cached),
      bucketCors: new BucketCorsRepo(exec, clock),
      bucketTagging: new BucketTaggingRepo(exec, clock),
      bucketPolicies: new BucketPoliciesRepo(exec, clock),
      bucketAcls: new BucketAclsRepo(exec, clock),
      bucketLifecycle: new BucketLifecycleRepo(exec, clock),
      bucketNotifications: new BucketNotificationsRepo(exec, clock),
      notificationTargets: new NotificationTargetsRepo(exec, clock),
      notificationOutbox: new NotificationOutboxRepo(exec),
      transferCharges: new TransferChargesRepo(exec),
      storageUsage: new StorageUsageRepo(exec),
      storageQuotas: new StorageQuotasRepo(exec),
      assets: new AssetsRepo(exec),
      blobRefs: new BlobRefsRepo(exec),
      integrity: new IntegrityRepo(exec),
      objects: new ObjectsRepo(exec, cached),
      users: new UsersRepo(exec, clock),
      accessKeys: new AccessKeysRepo(exec, clock),
      settings: new SettingsRepo(exec),
      apiKeys: new ApiKeysRepo(exec, clock),
      spaces: new SpacesRepo(exec, clock),
      usage: new UsageRepo(exec, clock),
      credits: new CreditsRepo(exec, clock),
      creditReservations: new CreditReservationsRepo(exec),
      sessions: new SessionsRepo(exec),
      store: exec,
      tlds: new TldsRepo(exec, clock),
      projects: new ProjectsRepo(exec, clock),
      hostnameTls: new HostnameTlsRepo(exec, clock),
      anomalies: new AnomaliesRepo(exec),
      cacheInvalidations: new CacheInvalidationsRepo(exec),
      rateLimits: new RateLimitsRepo(exec),
      blobRemovals: new BlobRemovalsRepo(exec),
      transact: <T>(fn: (repos: Repos) => Promise<T>): Promise<T> => exec.transaction((tx) => fn(bound(tx))),
    };
    return repos;
  };
  return bound(store);
}
