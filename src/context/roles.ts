// The parts a serving process chooses by which process it is (docs/SCALE.md) and where its metadata lives:
// a single process holds its own limiter, monitor and leases; a cluster worker asks its supervisor's
// (src/cluster/shared-*.ts) through its channel; nodes on one PostgreSQL (docs/DEPLOYMENT.md) count the
// API rate limits in the database, let freed blobs wait out a grace, and leave the jobs to one leader.
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import type { StorageBackend } from '../storage/backend.js';
import { BlobLeases } from '../storage/blob-leases.js';
import { BlobRemovals } from '../storage/blob-removals.js';
import { HashPool } from '../hashing/hash-pool.js';
import { storeLogWriter, ThreadLogWriter } from '../analytics/log-writer.js';
import type { RequestLogOptions } from '../analytics/request-log.js';
import { EdgeMonitor, type TrafficMonitor } from '../proxy/detect/monitor.js';
import { ClientLimiter, type EdgeLimiter } from '../proxy/limiter.js';
import type { WorkerChannel } from '../cluster/ipc.js';
import { remoteRateLimitStore, RemoteEdgeLimiter } from '../cluster/shared-limits.js';
import { MonitorForwarder } from '../cluster/shared-monitor.js';
import { workerLeases } from '../cluster/shared-leases.js';
import { storeRateLimitStore } from '../cluster/store-rate-limits.js';
import type { Metadata } from './metadata.js';

/**
 * Which process this is (docs/SCALE.md): `single` serves and runs the background jobs; in a cluster the
 * `supervisor` runs the jobs exactly once and serves nothing, and each `worker` serves and runs none.
 */
export type ProcessRole = 'single' | 'supervisor' | 'worker';

export interface Role {
  role: ProcessRole;
  /** The background jobs run in exactly one process: the single one, or a cluster's supervisor. */
  runsJobs: boolean;
  /** A worker's channel to its supervisor: its limits, monitor and blob removals are the supervisor's. */
  channel?: WorkerChannel;
}

/** The role asked for (default `single`); a worker must be given its channel, no other process keeps one. */
export function processRole(role: ProcessRole = 'single', channel?: WorkerChannel): Role {
  if (role !== 'worker') return { role, runsJobs: true };
  if (!channel) throw new Error('a worker context needs its channel to the supervisor');
  return { role, runsJobs: false, channel };
}

/** What the role's parts are made of. */
export interface RoleDeps {
  role: Role;
  config: Config;
  repos: Repos;
  storage: StorageBackend;
  postgres: boolean;
  clock: () => Date;
  monotonic: () => number;
  log: Logger;
}

/** The hashing thread for large uploads: none where hashing.workerThreshold is 0, nor in a supervisor (it hashes no upload). */
export function hashPoolFor(config: Config, role: ProcessRole): HashPool | undefined {
  const { workerThreshold, workerThreads } = config.hashing;
  return role !== 'supervisor' && workerThreshold > 0 ? new HashPool({ threshold: workerThreshold, threads: workerThreads }) : undefined;
}

/**
 * Blobs being read, and their removal once the last reader is done: a worker's wait for every worker's
 * readers (cluster/shared-leases.ts); on PostgreSQL a freed blob waits out a grace (`removals`, done by
 * the jobs); else it goes at once.
 */
export function blobLeases(d: RoleDeps): { leases: BlobLeases; removals?: BlobRemovals } {
  const { channel } = d.role;
  const { storage, log } = d;
  const removals = d.postgres ? new BlobRemovals({ repo: d.repos.blobRemovals, storage, now: () => d.clock().getTime(), log }) : undefined;
  if (channel) {
    const shared = workerLeases(channel, log);
    return { leases: new BlobLeases(shared.remove, shared.observer), ...(removals ? { removals } : {}) };
  }
  if (removals) return { leases: new BlobLeases(removals.schedule), removals };
  return { leases: new BlobLeases((blobId) => storage.remove(blobId).catch((err: unknown) => log.warn({ err, blobId }, 'blob removal failed'))) };
}

/** The anomaly monitor: a worker forwards its observations to the supervisor's (cluster/shared-monitor.ts). */
export function trafficMonitor(d: RoleDeps): TrafficMonitor {
  const { channel } = d.role;
  if (channel) return new MonitorForwarder(channel, d.log);
  return new EdgeMonitor({ repo: d.repos.anomalies, config: d.config.edge.anomalies, now: () => d.clock().getTime(), elapsed: d.monotonic, log: d.log });
}

/** The edge proxy's rate-limit rule: a worker asks the supervisor's token buckets. */
export function edgeLimiter(d: RoleDeps): EdgeLimiter {
  const { channel } = d.role;
  return channel ? new RemoteEdgeLimiter(channel, d.log) : new ClientLimiter({ maxClients: d.config.edge.maxTrackedClients, now: d.monotonic });
}

/**
 * @fastify/rate-limit's store for the API and sign-in limits: the database's counters for nodes on
 * PostgreSQL, the supervisor's in a cluster worker; else none (the plugin's own, in memory).
 */
export function rateLimitStore(d: RoleDeps): { rateLimitStore?: FastifyRateLimitStoreCtor } {
  const { channel } = d.role;
  if (d.postgres) return { rateLimitStore: storeRateLimitStore(d.repos.rateLimits, d.log) };
  return channel ? { rateLimitStore: remoteRateLimitStore(channel, d.log) } : {};
}

/**
 * The request log's writer and maintenance: on SQLite, a serving process writes its flushes from a thread
 * of its own (analytics/log-writer.ts), off the event loop; the roll-ups and retention are the jobs'
 * process's, on PostgreSQL while it leads the jobs (`leads`).
 *
 * The writer yields to serving (SCHED_IDLE) only where the `servingProcesses` leave a core free: where
 * their event loops fill every core, a yielding writer falls behind and takes normal priority back within
 * seconds, so it keeps normal priority there (docs/ARCHITECTURE.md "Background threads yield").
 */
export function requestLogRole(
  r: Role,
  meta: Pick<Metadata, 'db' | 'dbFile' | 'repos' | 'postgres'>,
  leads: () => boolean,
  log: Logger,
  servingProcesses: number,
): Pick<RequestLogOptions, 'writer' | 'maintain'> {
  const { db, dbFile, repos, postgres } = meta;
  const priority = servingProcesses < availableParallelism() ? {} : { yieldToServing: false };
  return {
    ...(db && r.role !== 'supervisor' ? { writer: new ThreadLogWriter(dbFile, storeLogWriter(repos.store), log, priority) } : {}),
    maintain: r.runsJobs && postgres ? leads : r.runsJobs,
  };
}
