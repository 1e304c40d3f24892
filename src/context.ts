// The composition root's product: everything a request needs, built once, closed once. No globals.
// createContext assembles it from parts chosen elsewhere: the metadata (context/metadata.ts), what this
// process holds of the configured totals (context/shares.ts), what depends on its role and on where the
// metadata lives (context/roles.ts), the domain search (context/domains.ts), the jobs and their leadership
// (jobs/process-jobs.ts). Each part pushes its closer as it is made; close() pops them (context/closers.ts).
import type { Logger } from 'pino';
import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import { postgresWritable, Readiness, sqliteWritable } from './health/readiness.js';
import { methodLabel, RequestMetrics } from './metrics/request-metrics.js';
import type { Config } from './config/schema.js';
import type { Db } from './db/open.js';
import type { Repos } from './db/repos/index.js';
import type { ObjectsRepo } from './db/repos/objects.js';
import { MultipartRepo } from './db/repos/multipart.js';
import type { Durability } from './db/wal-sync.js';
import { CommitQueue } from './db/commit-queue.js';
import { KeyStore } from './auth/key-store.js';
import { ApiKeyVerifier } from './auth/api-keys.js';
import { DashboardSessions } from './auth/sessions.js';
import { BucketDirectory } from './buckets/bucket-directory.js';
import { BucketAccess } from './buckets/bucket-access.js';
import { LifecycleRulesCache } from './lifecycle/rules-cache.js';
import { BucketNotifications } from './notifications/bucket-notifications.js';
import type { StorageBackend } from './storage/backend.js';
import { createStorage } from './storage/select.js';
import type { BlobLeases } from './storage/blob-leases.js';
import type { HashPool } from './hashing/hash-pool.js';
import { UploadBudget } from './storage/upload-budget.js';
import type { BlobCollector } from './storage/blob-gc.js';
import type { Scrubber } from './storage/scrub.js';
import { CorruptionReporter } from './storage/corruption.js';
import { ProcessJobs } from './jobs/process-jobs.js';
import { CreditsService } from './credits/credits.js';
import { deliverySuspensions, type DeliverySuspensions } from './credits/delivery-suspension.js';
import { QuotaService } from './credits/quotas.js';
import { ReservationHolder } from './credits/reservation-holder.js';
import { RequestLog } from './analytics/request-log.js';
import { logRequestLine } from './analytics/request-line.js';
import { ClientResolver } from './net/client-info.js';
import { AssetDirectory } from './cdn/asset-directory.js';
import { CdnCache } from './cdn/cdn-cache.js';
import { CachePurges } from './cdn/cache-purges.js';
import type { ProcessShare } from './cdn/cache/shares.js';
import type { DomainSearch } from './domains/search.js';
import { EdgeRoutes } from './edge/route.js';
import type { TrafficMonitor } from './proxy/detect/monitor.js';
import type { EdgeLimiter } from './proxy/limiter.js';
import type { WorkerChannel } from './cluster/ipc.js';
import { ProxyResponseCache } from './edge/response-cache.js';
import { OriginPools } from './edge/origin-pools.js';
import { createLogger, lineWriter } from './log-format.js';
import { Closers } from './context/closers.js';
import { domainSearch } from './context/domains.js';
import { openMetadata } from './context/metadata.js';
import { blobLeases, edgeLimiter, hashPoolFor, processRole, rateLimitStore, requestLogRole, trafficMonitor, type ProcessRole, type RoleDeps } from './context/roles.js';
import { shareLimits } from './context/shares.js';

export type { ProcessRole } from './context/roles.js';

/** Proxied answers whose metadata is kept (their bytes are bounded by the cache tiers). */
const PROXY_CACHE_ENTRIES = 100_000;

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
  /** Buckets by name, found ones reused for up to a second (buckets/bucket-directory.ts). */
  bucketDirectory: BucketDirectory;
  /** Buckets' policies and public ACLs, as S3 requests are judged by them. */
  bucketAccess: BucketAccess;
  /** Buckets' lifecycle rules for x-amz-expiration, "none" too, reused for a few seconds (lifecycle/rules-cache.ts). */
  lifecycleRules: LifecycleRulesCache;
  /** Buckets' notification configurations, as object writes queue their events. */
  bucketNotifications: BucketNotifications;
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
  /**
   * Owners whose public delivery is suspended for want of credits (credits.atZero 'suspend-delivery'),
   * read at most once a second; absent with 'refuse-uploads' or credits off: the CDN and the proxy check that alone.
   */
  deliverySuspensions?: DeliverySuspensions;
  /** Users' and buckets' storage quotas: uploads reserve room against them before their bytes are read (credits/quotas.ts). */
  quotas: QuotaService;
  /** Public base URLs, final once the server listens (server.ts fills in derived ones). */
  endpoints: PublicEndpoints;
  /** The master key: seals stored secrets; signed CDN URLs use a key derived from it. */
  masterKey: Buffer;
  /** Assets by id for the CDN, found ones reused for up to a second (cdn/asset-directory.ts). */
  assetDirectory: AssetDirectory;
  /** The CDN's memory + disk cache (read it here; purge through cachePurges). */
  cdnCache: CdnCache;
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
  /** The HTTPS listener's port once it listens (redirects of plain HTTP name it unless tls.publicPort). */
  httpsPort?: number;
}

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

export async function createContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  const log = opts.log ?? createLogger(config);
  const r = processRole(opts.role, opts.channel);
  const { role, runsJobs, channel } = r;
  const limits = shareLimits(config, opts.share, role);
  const closers = new Closers();
  try {
    const uploadBudget = new UploadBudget({ capBytes: limits.uploadBufferBytes, waitMs: config.limits.uploadBufferWaitMs });
    closers.push(() => uploadBudget.close());
    // First: a storage, proxy-range or GeoIP misconfiguration is a ConfigError before anything is opened.
    const storage = await createStorage(config, { budget: uploadBudget });
    // The upstream backend holds an HTTP agent; the disk backend's close is trivial.
    closers.push(() => storage.close());
    const clients = new ClientResolver(config.cdn);
    const meta = await openMetadata(config, r, { share: opts.share, log, closers });
    const { db, store, repos, masterKey, root, postgres, durability } = meta;
    const hashPool = hashPoolFor(config, role);
    closers.push(() => hashPool?.close());
    await storage.init();
    const clock = opts.clock ?? (() => new Date());
    const monotonic = opts.monotonic ?? (() => performance.now());
    const domains = domainSearch(config, repos, { clock, monotonic, log });
    closers.push(() => domains.close());
    const parts: RoleDeps = { role: r, config, repos, storage, postgres, clock, monotonic, log };
    const { leases, removals } = blobLeases(parts);
    // One holder for this process's credit and storage quota reservations: one name, one heartbeat.
    const holders = new ReservationHolder(repos, clock, {
      onError: (err) => log.warn({ err }, 'reservations: a heartbeat or release of credit or quota reservations could not be written (retried)'),
    });
    closers.push(() => holders.close());
    const credits = new CreditsService(repos, config.credits, clock, { holders });
    const quotas = new QuotaService(repos, holders, clock);
    const suspensions = deliverySuspensions(config.credits, {
      repos,
      now: () => clock().getTime(),
      monotonic,
      onError: (err) => log.warn({ err }, 'credits: the owners whose delivery is suspended could not be read (the last read stands; tried again in a second)'),
    });
    const originPools = new OriginPools(config.edge);
    closers.push(() => originPools.close());
    const { cache } = config.cdn;
    const cdnCache = await CdnCache.open({
      dir: limits.cacheDir,
      memoryBytes: limits.memoryBytes,
      memoryEntryMaxBytes: cache.memoryEntryMaxBytes,
      diskBytes: limits.diskBytes,
      now: () => clock().getTime(),
      log,
    });
    closers.push(() => cdnCache.close());
    const proxyCache = new ProxyResponseCache(cdnCache, { maxEntries: PROXY_CACHE_ENTRIES, now: () => clock().getTime(), elapsed: monotonic });
    const purges = new CachePurges({ cdnCache, proxyCache, repos, now: () => clock().getTime(), elapsed: monotonic, log });
    closers.push(() => purges.close());
    // Of the nodes on one PostgreSQL, the one holding the jobs' advisory lock runs them (and the log's roll-ups).
    const jobs = new ProcessJobs(config, log, postgres, role);
    const requestMetrics = new RequestMetrics();
    const requestLines = lineWriter(log);
    const requestLog = new RequestLog(repos.store, config.cdn.log, {
      ...requestLogRole(r, meta, () => jobs.leads(), log, opts.share?.of ?? 1),
      clock: () => clock().getTime(),
      log,
      observe: (rec) => {
        logRequestLine(requestLines, rec);
        requestMetrics.count(rec.surface ?? 'cdn', methodLabel(rec.method), rec.status, rec.durationMs, rec.bytesIn ?? 0, rec.bytesSent);
      },
    });
    closers.push(() => requestLog.close());
    const edgeMonitor = trafficMonitor(parts);
    closers.push(() => edgeMonitor.close());
    const ctx: AppContext = {
      config,
      log,
      clock,
      db,
      durability,
      commits: new CommitQueue(repos),
      repos,
      objects: repos.objects,
      multipart: new MultipartRepo(repos.store),
      storage,
      leases,
      corruption: new CorruptionReporter(repos.integrity, log, clock),
      keys: new KeyStore(repos, masterKey),
      bucketDirectory: new BucketDirectory(repos),
      bucketAccess: new BucketAccess(repos),
      lifecycleRules: new LifecycleRulesCache(repos.bucketLifecycle),
      bucketNotifications: new BucketNotifications(repos),
      ...(hashPool ? { hashPool } : {}),
      uploadBudget,
      root,
      apiKeys: new ApiKeyVerifier(repos.apiKeys),
      sessions: new DashboardSessions(
        repos.sessions,
        { idleMs: config.dashboard.sessionIdleSeconds * 1000, maxMs: config.dashboard.sessionMaxSeconds * 1000 },
        () => clock().getTime(),
      ),
      credits,
      ...(suspensions ? { deliverySuspensions: suspensions } : {}),
      quotas,
      endpoints: { s3: config.publicUrl, cdn: config.cdn.publicUrl },
      masterKey,
      assetDirectory: new AssetDirectory(repos),
      cdnCache,
      cachePurges: purges,
      requestLog,
      requestMetrics,
      clients,
      domains: () => domains.get(),
      proxyCache,
      // A hostname removed, or given another origin, by this process or another: its cached answers go.
      // Every process sees that in the route table itself, so the purge is not appended to the feed.
      edgeRoutes: new EdgeRoutes(repos, {
        onStale: (hostnameId) => purges.local({ kind: 'hostname', hostnameId }),
        onError: (err) => log.warn({ err }, 'edge: the route table could not be loaded (tried again shortly)'),
      }),
      edgeMonitor,
      edgeLimiter: edgeLimiter(parts),
      ...rateLimitStore(parts),
      originPools,
      // Real time, not the injectable clock: it only spaces the probes.
      readiness: new Readiness({
        metadata: db ? sqliteWritable(db) : postgresWritable(store),
        storage,
        now: () => performance.now(),
        onFailure: (check, err) => log.warn({ err, check }, 'readiness: a check failed (GET /readyz answers 503)'),
      }),
      role,
      ...(channel ? { channel } : {}),
      close: () => closers.close(),
    };
    // Project hostnames are routed from the first request.
    await ctx.edgeRoutes.reload();
    if (runsJobs) {
      closers.push(() => jobs.close());
      await jobs.start(ctx, removals ? { removals } : {});
    }
    return ctx;
  } catch (err) {
    await closers.close().catch(() => undefined);
    throw err;
  }
}
