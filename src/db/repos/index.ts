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
import { BucketsRepo } from './buckets.js';
import { SettingsRepo } from './settings.js';
import { UsersRepo } from './users.js';
import { TldsRepo } from './tlds.js';
import { ObjectsRepo } from './objects.js';
import { ProjectsRepo } from './projects.js';
import { AnomaliesRepo } from './anomalies.js';
import { SessionsRepo } from './sessions.js';
import { CacheInvalidationsRepo } from './cache-invalidations.js';

export { AccessKeysRepo, ApiKeysRepo, AssetsRepo, BlobRefsRepo, BucketCorsRepo, IntegrityRepo, BucketsRepo, CreditReservationsRepo, CreditsRepo, ProjectsRepo, SettingsRepo, SpacesRepo, TldsRepo, UsageRepo, UsersRepo };
export type { Deployment, Project, ProjectHostname } from './projects.js';
export { AnomaliesRepo } from './anomalies.js';
export { SessionsRepo, type SessionRecord } from './sessions.js';
export { CacheInvalidationsRepo, type Invalidation, type InvalidationKind, type NewInvalidation } from './cache-invalidations.js';
export type { AnomalyQuery } from './anomalies.js';
export type { AccessKey, AccessKeyFilter, AccessKeyKind, BucketPermission, NewAccessKey } from './access-keys.js';
export type { Bucket, BucketDeleteResult, NewBucket } from './buckets.js';
export type { CorsRule } from './bucket-cors.js';
export type { User } from './users.js';
export type { ApiKey } from './api-keys.js';
export type { AssetKind, AssetQuery, AssetRecord, AssetVisibility } from './assets.js';
export type { CreditAccount, LedgerEntry, LedgerEventType } from './credits.js';
export type { Space, SpaceStatus } from './spaces.js';
export type { UsageEvent, UsageEventType, UsageSource } from './usage.js';
export type { DomainNameRecord, DomainNameStatus, Promotion, TldRecord } from './tlds.js';
export { ConstraintError, type ConstraintReason } from './errors.js';

/** Extend this interface (and createRepos) when a table gets its repository. */
export interface Repos {
  users: UsersRepo;
  buckets: BucketsRepo;
  accessKeys: AccessKeysRepo;
  settings: SettingsRepo;
  bucketCors: BucketCorsRepo;
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
  /** Anomaly events on project hostnames' traffic (src/edge/detect). */
  anomalies: AnomaliesRepo;
  /** Dashboard sign-in sessions (src/auth/sessions.ts). */
  sessions: SessionsRepo;
  /** The cache invalidation feed every gateway process tails (src/cdn/cache-purges.ts). */
  cacheInvalidations: CacheInvalidationsRepo;
  /**
   * The store every converted repository runs on (db/store): the database itself, or inside
   * `transact`, the transaction.
   */
  store: SqlExecutor;
  /**
   * Runs `fn` in one transaction of the store (SqlExecutor.transaction: IMMEDIATE on SQLite,
   * SERIALIZABLE and re-run on conflict on PostgreSQL; a savepoint when nested), with repositories
   * bound to it: every statement of `fn` goes through the `repos` it is given.
   */
  transact<T>(fn: (repos: Repos) => Promise<T>): Promise<T>;
  /** Runs `fn` in one IMMEDIATE transaction (nested calls become savepoints): the synchronous repositories' (being converted). */
  transaction<T>(fn: () => T): T;
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
  /** The store the converted repositories run on; a SqliteStore over `db` when absent. */
  store?: SqlStore;
}

/**
 * The repositories. Being converted from the synchronous SQLite connection (`db`) to the asynchronous
 * store (db/store, SQLite or PostgreSQL): `bound` builds the converted ones over an executor (the
 * store, or a transaction); the others are shared as they are.
 */
export function createRepos(db: Db, opts: RepoOptions = {}): Repos {
  const clock = opts.clock ?? Date.now;
  const store = opts.store ?? new SqliteStore(db);
  const legacy = {
    transaction: <T>(fn: () => T): T => db.transaction(fn).immediate(),
    dataVersion: () => store.changeVersion(),
  };
  const bound = (exec: SqlExecutor): Repos => {
    const repos: Repos = {
      ...legacy,
      buckets: new BucketsRepo(exec, clock),
      bucketCors: new BucketCorsRepo(exec, clock),
      assets: new AssetsRepo(exec),
      blobRefs: new BlobRefsRepo(exec),
      integrity: new IntegrityRepo(exec),
      objects: new ObjectsRepo(exec),
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
      anomalies: new AnomaliesRepo(exec),
      cacheInvalidations: new CacheInvalidationsRepo(exec),
      transact: <T>(fn: (repos: Repos) => Promise<T>): Promise<T> => exec.transaction((tx) => fn(bound(tx))),
    };
    return repos;
  };
  return bound(store);
}
