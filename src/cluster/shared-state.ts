// The supervisor's side of the state that must be exact or single across workers (docs/SCALE.md): it
// answers the workers' rate-limit counts and edge limiter takes, feeds their observations to the one
// anomaly monitor, and removes blobs once no worker holds them. Built from the supervisor's context
// (its limiter, monitor, leases and storage); the workers' sides are chosen in src/context/roles.ts.
import type { TrafficMonitor } from '../proxy/detect/monitor.js';
import type { EdgeLimiter } from '../proxy/limiter.js';
import type { BlobLeases } from '../storage/blob-leases.js';
import type { SupervisorChannel } from './ipc.js';
import { ClusterLeases, LEASE_MESSAGES } from './shared-leases.js';
import { ApiLimitCounters, LIMIT_REQUESTS, takeForWorker } from './shared-limits.js';
import { MONITOR_MESSAGES, observeBatch } from './shared-monitor.js';

export interface SharedState {
  /** A blob the supervisor's own jobs freed: removed once no worker streams it, after the same grace as a worker's removal. */
  removeBlob(blobId: string): Promise<void>;
  /** After the workers have stopped: pending blob removals go now. */
  close(): void;
}

/** The supervisor's one limiter, monitor and leases, which the workers' requests reach. */
export interface SharedParts {
  edgeLimiter: EdgeLimiter;
  edgeMonitor: TrafficMonitor;
  leases: BlobLeases;
}

export function serveSharedState(channel: SupervisorChannel, ctx: SharedParts): SharedState {
  const api = new ApiLimitCounters();
  channel.handle(LIMIT_REQUESTS.apiIncr, (body) => api.count('incr', body));
  channel.handle(LIMIT_REQUESTS.apiRead, (body) => api.count('read', body));
  channel.handle(LIMIT_REQUESTS.edgeTake, (body) => takeForWorker(ctx.edgeLimiter, body));

  channel.onNote(MONITOR_MESSAGES.observed, (body) => observeBatch(ctx.edgeMonitor, body));
  channel.handle(MONITOR_MESSAGES.evaluate, async () => {
    await ctx.edgeMonitor.evaluate();
    return null;
  });

  const leases = new ClusterLeases(ctx.leases);
  channel.onNote(LEASE_MESSAGES.held, (body, from) => leases.held(from.slot, body));
  channel.onNote(LEASE_MESSAGES.freed, (body, from) => leases.freed(from.slot, body));
  channel.handle(LEASE_MESSAGES.remove, (body) => leases.remove(body));
  channel.onWorkerExit((from) => leases.workerExited(from.slot));

  return { removeBlob: async (blobId) => void (await leases.remove(blobId)), close: () => leases.close() };
}
