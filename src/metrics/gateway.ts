// The gateway's own figures, read when scraped: the request log (buffered, flushed, dropped), the edge
// cache, the blob collector, the scrub, read-time corruption, the upstream store's failures, the
// hashing workers' queue and the upload budget. Served by GET /api/v3/metrics (scope metrics:read) and GET /metrics.
import type { AppContext } from '../context.js';
import type { CdnCacheStats } from '../cdn/cdn-cache.js';
import type { UploadBudgetStats } from '../storage/upload-budget.js';
import type { Metric } from './prometheus.js';

type CacheCounter = keyof CdnCacheStats;

/** The edge cache's counters, by field of CdnCacheStats. */
const CACHE_METRICS: readonly [CacheCounter, Omit<Metric, 'value'>][] = [
  ['hits', { name: 's3edge_cdn_cache_hits_total', type: 'counter', help: 'CDN requests answered from the edge cache.' }],
  ['misses', { name: 's3edge_cdn_cache_misses_total', type: 'counter', help: 'CDN requests the edge cache had to fetch.' }],
  ['expired', { name: 's3edge_cdn_cache_expired_total', type: 'counter', help: 'CDN requests that found an outdated copy and refetched it.' }],
  ['bypasses', { name: 's3edge_cdn_cache_bypasses_total', type: 'counter', help: 'CDN bodies served from storage without the cache.' }],
  ['storageReads', { name: 's3edge_cdn_cache_storage_reads_total', type: 'counter', help: 'Reads of the storage backend by the edge cache.' }],
  ['memoryBytes', { name: 's3edge_cdn_cache_memory_bytes', type: 'gauge', help: 'Bytes held by the memory tier of the edge cache.' }],
  ['memoryEntries', { name: 's3edge_cdn_cache_memory_entries', type: 'gauge', help: 'Bodies held by the memory tier, compressed variants included.' }],
  // One disk tier for every worker: each reports the whole of it, so a cluster's answer takes the max.
  ['diskBytes', { name: 's3edge_cdn_cache_disk_bytes', type: 'gauge', aggregate: 'max', help: 'Bytes held by the disk tier of the edge cache.' }],
  ['diskEntries', { name: 's3edge_cdn_cache_disk_entries', type: 'gauge', aggregate: 'max', help: 'Files held by the disk tier of the edge cache.' }],
  ['fillsInFlight', { name: 's3edge_cdn_cache_fills_in_flight', type: 'gauge', help: 'Storage reads filling the cache right now.' }],
];

/** The upload budget's figures, by field of UploadBudgetStats. */
const UPLOAD_BUFFER_METRICS: readonly [keyof UploadBudgetStats, Omit<Metric, 'value'>][] = [
  ['reservedBytes', { name: 's3edge_upload_buffer_bytes', type: 'gauge', help: 'Bytes of upload bodies held in memory now (reserved in the upload budget).' }],
  ['peakBytes', { name: 's3edge_upload_buffer_peak_bytes', type: 'gauge', help: 'The most bytes of upload bodies held in memory at once since start.' }],
  ['capBytes', { name: 's3edge_upload_buffer_capacity_bytes', type: 'gauge', help: 'The upload budget (limits.uploadBufferBytes); 0: no cap.' }],
  ['waiting', { name: 's3edge_upload_buffer_waiting', type: 'gauge', help: 'Uploads waiting for room in the upload budget now.' }],
  ['waits', { name: 's3edge_upload_buffer_waits_total', type: 'counter', help: 'Uploads that had to wait for room in the upload budget.' }],
  ['refusals', { name: 's3edge_upload_buffer_refusals_total', type: 'counter', help: 'Uploads refused with 503 SlowDown after waiting limits.uploadBufferWaitMs for room.' }],
];

/** What the integrity and job figures are read from: a serving context, or a supervisor's jobs context. */
export type IntegritySource = Pick<AppContext, 'blobGc' | 'scrubber' | 'corruption' | 'repos'>;

/** The scrub, read-time corruption and blob collector figures. */
export async function integrityMetrics(ctx: IntegritySource): Promise<Metric[]> {
  const gc = ctx.blobGc?.stats() ?? { runs: 0, failures: 0, collected: 0, bytes: 0 };
  const scrub = ctx.scrubber?.stats() ?? { runs: 0, checked: 0, bytes: 0, corruptFound: 0, missingFound: 0 };
  return [
    { name: 's3edge_scrub_runs_total', type: 'counter', value: scrub.runs, help: 'Completed passes of the background scrub.' },
    { name: 's3edge_scrub_blobs_checked_total', type: 'counter', value: scrub.checked, help: 'Blobs the scrub re-hashed.' },
    { name: 's3edge_scrub_bytes_checked_total', type: 'counter', value: scrub.bytes, help: 'Bytes the scrub read.' },
    { name: 's3edge_scrub_corrupt_found_total', type: 'counter', value: scrub.corruptFound, help: 'Blobs the scrub found not matching their digest.' },
    { name: 's3edge_scrub_missing_found_total', type: 'counter', value: scrub.missingFound, help: 'Referenced blobs the scrub found gone from storage.' },
    { name: 's3edge_read_corrupt_total', type: 'counter', value: ctx.corruption.stats().read, help: 'Reads failed because stored bytes did not match their digest.' },
    { name: 's3edge_corrupt_blobs', type: 'gauge', value: await ctx.repos.integrity.corruptCount(), aggregate: 'max', help: 'Blobs marked corrupt (s3edge scrub list), by a scrub or a read.' },
    { name: 's3edge_blob_gc_runs_total', type: 'counter', value: gc.runs, help: 'Completed passes of the unreferenced-blob collector.' },
    { name: 's3edge_blob_gc_failures_total', type: 'counter', value: gc.failures, help: 'Passes of the blob collector, or removals in one, that failed (logged).' },
    { name: 's3edge_blob_gc_collected_total', type: 'counter', value: gc.collected, help: 'Unreferenced blobs removed from storage.' },
    { name: 's3edge_blob_gc_collected_bytes_total', type: 'counter', value: gc.bytes, help: 'Bytes of the unreferenced blobs removed.' },
  ];
}

/** The notification outbox, read from the database (the same for every process: a cluster takes the max). */
async function notificationMetrics(repos: AppContext['repos']): Promise<Metric[]> {
  const { pending, dead } = await repos.notificationOutbox.counts();
  return [
    { name: 's3edge_notification_pending', type: 'gauge', value: pending, aggregate: 'max', help: 'Bucket notification events waiting for delivery (or for their next attempt).' },
    { name: 's3edge_notification_dead_letters', type: 'gauge', value: dead, aggregate: 'max', help: 'Bucket notification events whose attempts are spent (notifications.maxAttempts), kept undelivered.' },
  ];
}

/** Project hostnames' certificates, read from the database (the same for every process: a cluster takes the max). */
async function tlsMetrics(repos: AppContext['repos']): Promise<Metric[]> {
  const { certificates, failing, soonestExpiry } = await repos.hostnameTls.counts();
  const metrics: Metric[] = [
    { name: 's3edge_tls_certificates', type: 'gauge', value: certificates, aggregate: 'max', help: "Project hostnames' certificates held (issued by ACME or uploaded)." },
    { name: 's3edge_tls_certificates_failing', type: 'gauge', value: failing, aggregate: 'max', help: 'Project hostnames whose last ACME issuance or renewal failed (reasons: s3edge hostnames tls NAME).' },
  ];
  if (soonestExpiry !== null) {
    metrics.push({ name: 's3edge_tls_certificate_soonest_expiry_timestamp_seconds', type: 'gauge', value: Math.floor(soonestExpiry / 1000), aggregate: 'max', help: "When the first of the hostnames' certificates expires (Unix seconds): alert when it nears." });
  }
  return metrics;
}

/** Whether the storage is the upstream store (by its counter: importing its class would load its client). */
function upstreamFailures(storage: AppContext['storage']): number | undefined {
  const n = (storage as { upstreamFailures?: unknown }).upstreamFailures;
  return typeof n === 'number' ? n : undefined;
}

export async function gatewayMetrics(ctx: AppContext): Promise<Metric[]> {
  const log = ctx.requestLog.stats();
  const metrics: Metric[] = [
    ...(await integrityMetrics(ctx)),
    { name: 's3edge_cdn_log_buffered', type: 'gauge', value: log.buffered, help: 'CDN request log records waiting for the next flush.' },
    { name: 's3edge_cdn_log_buffer_capacity', type: 'gauge', value: log.capacity, help: 'Records the request log buffer holds before it drops (cdn.log.bufferSize).' },
    { name: 's3edge_cdn_log_dropped_total', type: 'counter', value: log.dropped, help: 'CDN request log records lost because the buffer was full (or the log closed).' },
    { name: 's3edge_cdn_log_flushed_total', type: 'counter', value: log.flushed, help: 'CDN request log records written to the database.' },
    { name: 's3edge_cdn_log_flushes_total', type: 'counter', value: log.flushes, help: 'Flush transactions of the CDN request log.' },
    { name: 's3edge_cdn_log_flush_errors_total', type: 'counter', value: log.flushErrors, help: 'Flushes of the CDN request log that failed (records kept for the next).' },
    ...(await notificationMetrics(ctx.repos)),
    ...(await tlsMetrics(ctx.repos)),
  ];
  const upstream = upstreamFailures(ctx.storage);
  if (upstream !== undefined) {
    metrics.push({ name: 's3edge_upstream_failures_total', type: 'counter', value: upstream, help: 'Requests to the upstream S3 store that failed for good (transport errors or 5xx, after retries).' });
  }
  if (ctx.hashPool) {
    metrics.push({ name: 's3edge_hashing_queued_tasks', type: 'gauge', value: ctx.hashPool.queued, help: 'Upload hashing tasks waiting for a worker thread.' });
  }
  const budget = ctx.uploadBudget.stats();
  for (const [key, metric] of UPLOAD_BUFFER_METRICS) metrics.push({ ...metric, value: budget[key] });
  const cache = ctx.cdnCache.stats();
  for (const [key, metric] of CACHE_METRICS) metrics.push({ ...metric, value: cache[key] });
  return metrics;
}

