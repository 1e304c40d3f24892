// The composition root's product: everything a request needs, built once, closed once. No globals.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { postgresWritable, Readiness, sqliteWritable } from './health/readiness.js';
import { methodLabel, RequestMetrics } from './metrics/request-metrics.js';
import type { Config } from './config/schema.js';
import type { Db } from './db/open.js';
import type { Repos } from './db/repos/index.js';
import type { ObjectsRepo } from './db/repos/objects.js';
import { MultipartRepo } from './db/repos/multipart.js';
import { KeyStore } from './auth/key-store.js';
import { META_DB_FILE } from './db/data-dir.js';
import { asConfigError, prepareDataDir } from './data-dir-setup.js';
import { DURABLE_AT_COMMIT, WalSync, type Durability } from './db/wal-sync.js';
import { Checkpointer, CHECKPOINTS_AFTER_START_MS } from './db/checkpointer.js';
import { CommitQueue } from './db/commit-queue.js';
import { BucketDirectory } from './s3/bucket-directory.js';
import type { StorageBackend } from './storage/backend.js';
import { createStorage } from './storage/select.js';
import { BlobLeases } from './storage/blob-leases.js';
import { HashPool } from './hashing/hash-pool.js';
import { UploadBudget } from './storage/upload-budget.js';
import type { BlobCollector } from './storage/blob-gc.js';
import type { Scrubber } from './storage/scrub.js';
import { SingletonJobs } from './jobs/singleton-jobs.js';
import { startJobs } from './jobs/jobs-context.js';
import { BlobRemovals } from './storage/blob-removals.js';
import type { PgLeadership } from './db/store/pg-leadership.js';
import { storeRateLimitStore } from './cluster/store-rate-limits.js';
import { CorruptionReporter } from './storage/corruption.js';
import { ApiKeyVerifier } from './auth/api-keys.js';
import { DashboardSessions } from './auth/sessions.js';
import { CreditsService } from './credits/credits.js';
import { RequestLog } from './analytics/request-log.js';
import { storeLogWriter, ThreadLogWriter } from './analytics/log-writer.js';
import { logRequestLine } from './analytics/request-line.js';
import { ClientResolver } from './cdn/client-info.js';
import { AssetDirectory } from './cdn/asset-directory.js';
import { EdgeCache } from './cdn/edge-cache.js';
import { CachePurges } from './cdn/cache-purges.js';
import { assertShare, type ProcessShare } from './cdn/cache/shares.js';
import type { DomainSearch } from './domains/search.js';
import { BootstrapSource } from './domains/availability/bootstrap-source.js';
import { lazyDomainSearch, type LazyDomainSearch } from './domains/lazy-search.js';
import { EdgeRoutes } from './edge/route.js';
import { EdgeMonitor, type TrafficMonitor } from './edge/detect/monitor.js';
import { ClientLimiter, type EdgeLimiter } from './edge/limiter.js';
import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { WorkerChannel } from './cluster/ipc.js';
import { remoteRateLimitStore, RemoteEdgeLimiter } from './cluster/shared-limits.js';
import { MonitorForwarder } from './cluster/shared-monitor.js';
import { workerLeases } from './cluster/shared-leases.js';
import { ProxyResponseCache } from './edge/response-cache.js';
import { OriginPools } from './edge/origin-pools.js';
import { createLogger, lineWriter } from './log-format.js';

/** The edge cache's disk tier, under the data directory. */
const CDN_CACHE_DIR = 'cdn-cache';

/** Proxied answers whose metadata is kept (their bytes are bounded by the cache tiers). */
const PROXY_CACHE_ENTRIES = 100_000;
/**
 * How long a serving process's statement waits for another connection's lock on meta.db (a backup,
 * `sqlite3` by hand, an admin command's long transaction) before the request is refused with 503.
 */
export const SQLITE_BUSY_WAIT_MS = 5000;

export interface AppContext {
  config: Config;
  log: Logger;
  clock: () => Date;
  /** The SQLite connection, when the metadata is SQLite. */
  db?: Db;
  /** Await before acknowledging a write: makes every commit so far durable (shared WAL flush). */
  durability: Durability;
  /** Hot-path metadata writes (object puts and deletes), batched into one transaction per tick. */
  commits: CommitQueue;
  repos: Repos;
  objects: ObjectsRepo;
  multipart: MultipartRepo;
  storage: StorageBackend;
  /** Blobs being streamed to readers: their removal waits for the last reader (in a cluster, every worker's: src/cluster/shared-leases.ts). */
  leases: BlobLeases;
  keys: KeyStore;
  /** Buckets by name, found ones reused for up to a second (s3/bucket-directory.ts). */
  bucketDirectory: BucketDirectory;
  /** The unreferenced-blob collector (set once the context is built). */
  blobGc?: BlobCollector;
  /** Stored bytes found not to match their digest, by a read or the scrub: marked, logged, counted. */
  corruption: CorruptionReporter;
  /** The background scrub; absent when integrity.scrubBytesPerSecond is 0. */
  scrubber?: Scrubber;
  /** The hashing worker thread for large uploads; absent when hashing.workerThreshold is 0. */
  hashPool?: HashPool;
  /** Bytes upload bodies may hold in memory at once (limits.uploadBufferBytes): reserve before reading a body. */
  uploadBudget: UploadBudget;
  root: { accessKeyId: string; secretAccessKey?: string; generated: boolean };
  /** Bearer tokens of the management API. */
  apiKeys: ApiKeyVerifier;
  /** Signed-in dashboard sessions (cookie token -> user, CSRF token). */
  sessions: DashboardSessions;
  credits: CreditsService;
  /** Public base URLs, final once the server listens (server.ts fills in derived ones). */
  endpoints: PublicEndpoints;
  /** The master key: seals stored secrets; signed CDN URLs use a key derived from it. */
  masterKey: Buffer;
  /** Assets by id for the CDN, found ones reused for up to a second (cdn/asset-directory.ts). */
  assetDirectory: AssetDirectory;
  /** The CDN's memory + disk cache (read it here; purge through cachePurges). */
  edge: EdgeCache;
  /**
   * Every purge of the edge cache and the proxy cache: applied here and appended to the invalidation
   * feed, which this process tails for the other processes' purges (cdn/cache-purges.ts).
   */
  cachePurges: CachePurges;
  /** Every CDN request, buffered and flushed to SQLite. */
  requestLog: RequestLog;
  /** Client IP and country of a CDN request. */
  clients: ClientResolver;
  /** The domain reseller: TLD catalogue queries and the domain search (registry lookups over RDAP); made on first use. */
  domains(): Promise<DomainSearch>;
  /** Verified project hostnames and their origins and rules, for the edge proxy (src/edge). */
  edgeRoutes: EdgeRoutes;
  /** Origins' cacheable answers for the edge proxy, in the edge cache's tiers (purge by hostname id). */
  proxyCache: ProxyResponseCache;
  /**
   * Anomaly detection over proxied traffic: the proxy reports each request, readers evaluate before listing
   * events. A cluster worker's forwards to the supervisor's (src/cluster/shared-monitor.ts).
   */
  edgeMonitor: TrafficMonitor;
  /** The edge proxy's rate-limit rule: token buckets and bans; a cluster worker's asks the supervisor's. */
  edgeLimiter: EdgeLimiter;
  /** @fastify/rate-limit's store for the API and sign-in limits: the supervisor's counters in a cluster worker; else the plugin's own. */
  rateLimitStore?: FastifyRateLimitStoreCtor;
  /** Keep-alive pools to project origins, dialled through the address policy (src/edge/origin-pools.ts). */
  originPools: OriginPools;
  /** GET /readyz: the metadata database and the storage backend, probed at most once a second. */
  readiness: Readiness;
  /** Which process this is: whether it runs the background jobs (sweeps, GC, scrub, roll-ups, checkpoints). */
  role: ProcessRole;
  /** A cluster worker's channel to its supervisor (src/cluster/ipc.ts); absent in any other process. */
  channel?: WorkerChannel;
  /** Every answered request by surface, operation and status, with the process's own metrics (GET /metrics). */
  requestMetrics: RequestMetrics;
  close(): Promise<void>;
}

export interface PublicEndpoints {
  /** The S3 endpoint, e.g. http://127.0.0.1:9000. */
  s3: string;
  /** Base of CDN URLs, e.g. http://cdn.localhost:9000. */
  cdn: string;
}

/**
 * Which process this is (docs/SCALE.md): `single` serves and runs the background jobs; in a cluster the
 * `supervisor` runs the jobs exactly once and serves nothing, and each `worker` serves and runs none.
 */
export type ProcessRole = 'single' | 'supervisor' | 'worker';

export interface ContextOptions {
  log?: Logger;
  /** The wall clock: dates, expiry, retention (docs/ARCHITECTURE.md "Clocks"). */
  clock?: () => Date;
  /** A monotonic clock in ms for elapsed time (the edge limiter, proxied answers' resident age, the RDAP cache and breaker, purge pruning, the anomaly monitor's step check); default performance.now. */
  monotonic?: () => number;
  /** Default `single`. */
  role?: ProcessRole;
  /** A worker's channel to its supervisor (required for role `worker`): the shared state is asked there. */
  channel?: WorkerChannel;
  /**
   * This process's slot among N serving processes on the data directory (`serve --workers N`): its edge
   * cache's memory tier gets 1/N of the memory bytes and its upload budget 1/N of
   * limits.uploadBufferBytes; the disk tier (<dataDir>/cdn-cache, the whole of the disk bytes) is
   * shared by all of them. Absent: a single process with the whole of each.
   */
  share?: ProcessShare;
}

/** What one process may hold: the configured totals, its memory divided among the processes of a share. */
export interface ShareLimits {
  /** The disk tier's directory, shared by every serving process; undefined: no disk tier at all. */
  cacheDir: string | undefined;
  memoryBytes: number;
  /** The whole disk tier's bound (one cache for all the processes). */
  diskBytes: number;
  uploadBufferBytes: number;
}

export function shareLimits(config: Config, share?: ProcessShare, role: ProcessRole = 'single'): ShareLimits {
  const root = join(config.dataDir, CDN_CACHE_DIR);
  const { memoryBytes, diskBytes } = config.cdn.cache;
  const upload = config.limits.uploadBufferBytes;
  // A supervisor serves nothing: no cache bytes, and it leaves the workers' disk tier alone.
  if (role === 'supervisor') return { cacheDir: undefined, memoryBytes: 0, diskBytes: 0, uploadBufferBytes: upload };
  if (!share) return { cacheDir: root, memoryBytes, diskBytes, uploadBufferBytes: upload };
  assertShare(share);
  const part = (total: number): number => Math.floor(total / share.of);
  return {
    cacheDir: root,
    // Each worker's heap holds its own memory tier in front of the shared disk tier (whose hot files
    // the OS page cache shares): the sum stays what the operator set.
    memoryBytes: part(memoryBytes),
    diskBytes,
    // 0 is "no cap": a share of a cap stays a cap.
    uploadBufferBytes: upload === 0 ? 0 : Math.max(1, part(upload)),
  };
}

/**
 * Where RDAP servers come from (domains/availability/bootstrap-source.ts): domains.rdap.bootstrapFile,
 * read now so that a bad one is a configuration error at start, else the refreshed or shipped copy.
 */
function rdapBootstrap(config: Config, repos: Repos, log: Logger): BootstrapSource {
  const file = config.domains.rdap.bootstrapFile;
  return wrapConfigError('domains.rdap.bootstrapFile', () =>
    new BootstrapSource({
      ...(file === '' ? {} : { file }),
      settings: repos.settings,
      onInvalid: (err) => log.warn({ err }, 'domains: the stored RDAP bootstrap is not valid; the shipped one serves'),
    }),
  );
}

function wrapConfigError<T>(key: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw asConfigError(key, err);
  }
}

export async function createContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  const log = opts.log ?? createLogger(config);
  const role = opts.role ?? 'single';
  // The background jobs run in exactly one process: the single one, or a cluster's supervisor.
  const runsJobs = role !== 'worker';
  // A worker's limits, monitor and blob removals are the supervisor's (src/cluster/shared-*.ts).
  const channel = role === 'worker' ? opts.channel : undefined;
  if (role === 'worker' && !channel) throw new Error('a worker context needs its channel to the supervisor');
  const limits = shareLimits(config, opts.share, role);
  const uploadBudget = new UploadBudget({ capBytes: limits.uploadBufferBytes, waitMs: config.limits.uploadBufferWaitMs });
  // First: a storage, proxy-range or GeoIP misconfiguration is a ConfigError before anything is opened.
  const storage = await createStorage(config, { budget: uploadBudget });
  const clients = new ClientResolver(config.cdn);
  // The row cache (db/metadata-cache.ts): split among the workers; the supervisor serves nothing.
  const readCacheBytes = role === 'supervisor' ? 0 : Math.floor(config.metadataCacheBytes / (opts.share?.of ?? 1));
  const { db, store, repos, masterKey, root } = await prepareDataDir(config, {
    postgres: { onError: (err) => log.warn({ err }, 'metadata: a PostgreSQL connection failed (the pool connects again)'), readCacheBytes },
    sqliteReadCacheBytes: readCacheBytes,
    // Another connection's lock is waited for on timers, never on the event loop (docs/ARCHITECTURE.md
    // "A busy database"); past the wait a write is refused with 503.
    sqliteBusyWaitMs: SQLITE_BUSY_WAIT_MS,
  });
  const dbFile = join(config.dataDir, META_DB_FILE);
  // Nodes on one PostgreSQL (docs/DEPLOYMENT.md): their jobs are led by one of them, freed blobs wait
  // out a grace, and the API rate limits count in the database.
  const postgres = db === undefined;
  let leadership: PgLeadership | undefined;
  let jobs: SingletonJobs | undefined;
  let walSync: WalSync | undefined;
  let checkpointer: Checkpointer | undefined;
  let edge: EdgeCache | undefined;
  let cachePurges: CachePurges | undefined;
  let domains: LazyDomainSearch | undefined;
  // The supervisor hashes no upload.
  const hashPool = role !== 'supervisor' && config.hashing.workerThreshold > 0 ? new HashPool({ threshold: config.hashing.workerThreshold, threads: config.hashing.workerThreads }) : undefined;
  try {
    if (db) {
      // Commits only write the WAL; requests that must be durable await one shared flush (db/wal-sync.ts),
      // and checkpoints run in a worker thread (db/checkpointer.ts): no fsync on the event loop.
      db.pragma('synchronous = NORMAL');
      walSync = new WalSync(`${dbFile}-wal`);
      // A worker never checkpoints: the supervisor's checkpointer does it for every connection.
      if (runsJobs) checkpointer = new Checkpointer(db, dbFile, log, undefined, CHECKPOINTS_AFTER_START_MS);
      else db.pragma('wal_autocheckpoint = 0');
    }
    const durability = walSync ?? DURABLE_AT_COMMIT;
    const checkpoints = checkpointer;
    await storage.init();
    const bootstrap = rdapBootstrap(config, repos, log);
    const { objects } = repos;
    const clock = opts.clock ?? (() => new Date());
    const monotonic = opts.monotonic ?? (() => performance.now());
    const domainSearch = (domains = lazyDomainSearch({ repos, config, clock, monotonic, bootstrap, log }));
    const shared = channel ? workerLeases(channel, log) : undefined;
    const removals = postgres ? new BlobRemovals({ repo: repos.blobRemovals, storage, now: () => clock().getTime(), log }) : undefined;
    const leases = shared
      ? new BlobLeases(shared.remove, shared.observer)
      : removals
        ? new BlobLeases(removals.schedule)
        : new BlobLeases((blobId) => storage.remove(blobId).catch((err: unknown) => log.warn({ err, blobId }, 'blob removal failed')));
    const { cache } = config.cdn;
    edge = await EdgeCache.open({
      dir: limits.cacheDir,
      memoryBytes: limits.memoryBytes,
      memoryEntryMaxBytes: cache.memoryEntryMaxBytes,
      diskBytes: limits.diskBytes,
      now: () => clock().getTime(),
      log,
    });
    const proxyCache = new ProxyResponseCache(edge, { maxEntries: PROXY_CACHE_ENTRIES, now: () => clock().getTime(), elapsed: monotonic });
    const commits = new CommitQueue(repos);
    cachePurges = new CachePurges({ edge, proxyCache, repos, now: () => clock().getTime(), elapsed: monotonic, log });
    const purges = cachePurges;
    const requestMetrics = new RequestMetrics();
    const requestLines = lineWriter(log);
    const ctx: AppContext = {
      config,
      log,
      clock,
      db,
      durability,
      commits,
      repos,
      objects,
      multipart: new MultipartRepo(repos.store),
      storage,
      leases,
      corruption: new CorruptionReporter(repos.integrity, log, clock),
      keys: new KeyStore(repos, masterKey),
      bucketDirectory: new BucketDirectory(repos),
      ...(hashPool ? { hashPool } : {}),
      uploadBudget,
      root,
      apiKeys: new ApiKeyVerifier(repos.apiKeys),
      sessions: new DashboardSessions(
        repos.sessions,
        { idleMs: config.dashboard.sessionIdleSeconds * 1000, maxMs: config.dashboard.sessionMaxSeconds * 1000 },
        () => clock().getTime(),
      ),
      credits: new CreditsService(repos, config.credits, clock, {
        onError: (err) => log.warn({ err }, 'credits: a reservation heartbeat or release could not be written (retried)'),
      }),
      endpoints: { s3: config.publicUrl, cdn: config.cdn.publicUrl },
      masterKey,
      assetDirectory: new AssetDirectory(repos),
      edge,
      cachePurges: purges,
      requestLog: new RequestLog(repos.store, config.cdn.log, {
        // SQLite: flushes written by a thread of their own, off the event loop (analytics/log-writer.ts).
        ...(db && role !== 'supervisor' ? { writer: new ThreadLogWriter(dbFile, storeLogWriter(repos.store), log) } : {}),
        maintain: runsJobs && postgres ? () => leadership?.isLeader() === true : runsJobs,
        clock: () => clock().getTime(),
        log,
        observe: (r) => {
          logRequestLine(requestLines, r);
          requestMetrics.count(r.surface ?? 'cdn', methodLabel(r.method), r.status, r.durationMs, r.bytesIn ?? 0, r.bytesSent);
        },
      }),
      requestMetrics,
      clients,
      domains: () => domainSearch.get(),
      proxyCache,
      // A hostname removed, or given another origin, by this process or another: its cached answers go.
      // Every process sees that in the route table itself, so the purge is not appended to the feed.
      edgeRoutes: new EdgeRoutes(repos, {
        onStale: (hostnameId) => purges.local({ kind: 'hostname', hostnameId }),
        onError: (err) => log.warn({ err }, 'edge: the route table could not be loaded (tried again shortly)'),
      }),
      edgeMonitor: channel
        ? new MonitorForwarder(channel, log)
        : new EdgeMonitor({ repo: repos.anomalies, config: config.edge.anomalies, now: () => clock().getTime(), elapsed: monotonic, log }),
      edgeLimiter: channel ? new RemoteEdgeLimiter(channel, log) : new ClientLimiter({ maxClients: config.edge.maxTrackedClients, now: monotonic }),
      ...(postgres
        ? { rateLimitStore: storeRateLimitStore(repos.rateLimits, log) }
        : channel
          ? { rateLimitStore: remoteRateLimitStore(channel, log) }
          : {}),
      originPools: new OriginPools(config.edge),
      // Real time, not the injectable clock: it only spaces the probes.
      readiness: new Readiness({
        metadata: db ? sqliteWritable(db) : postgresWritable(store),
        storage,
        now: () => performance.now(),
        onFailure: (check, err) => log.warn({ err, check }, 'readiness: a check failed (GET /readyz answers 503)'),
      }),
      role,
      ...(channel ? { channel } : {}),
      async close() {
        ctx.edgeMonitor.close();
        uploadBudget.close();
        await leadership?.close();
        await jobs?.stop();
        await ctx.requestLog.close();
        await purges.close();
        await ctx.edge.close();
        await ctx.originPools.close();
        await ctx.credits.close();
        await storage.close();
        await domainSearch.close();
        await durability.close();
        await checkpoints?.close();
        await hashPool?.close();
        await store.close();
      },
    };
    // Project hostnames are routed from the first request.
    await ctx.edgeRoutes.reload();
    if (!runsJobs) return ctx;
    jobs = new SingletonJobs(ctx, { ...(removals ? { removals } : {}) });
    // Of the nodes on one PostgreSQL, the one holding the jobs' advisory lock runs them.
    leadership = await startJobs(jobs, config, log, postgres, role);
    return ctx;
  } catch (err) {
    await cachePurges?.close();
    await edge?.close();
    // The upstream backend holds an HTTP agent; the disk backend's close is trivial.
    await storage.close().catch(() => undefined);
    await domains?.close().catch(() => undefined);
    await walSync?.close();
    await checkpointer?.close();
    await hashPool?.close();
    await leadership?.close();
    await jobs?.stop();
    await store.close();
    throw err;
  }
}
