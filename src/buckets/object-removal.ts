// Removing an object version, and what goes with it: the edge cache's answers for the key purged, and
// the bytes released once the removal is durable and no reader streams them. DeleteObject(s) and the
// lifecycle job remove through here, and every commit that replaces a version releases through here:
// in a serving process (its commit queue and CDN cache), a cluster's supervisor (neither) or the
// admin CLI alike.
import type { Logger } from 'pino';
import type { Repos } from '../db/repos/index.js';
import type { ObjectRecord, RemoveResult } from '../db/repos/objects.js';
import type { Durability } from '../db/wal-sync.js';
import type { BlobLeases } from '../storage/blob-leases.js';
import type { ChangeEvents } from '../notifications/bucket-notifications.js';
import type { EventName } from '../notifications/event-names.js';

/** What releasing a replaced or removed version's bytes needs. */
export interface ReleaseDeps {
  durability: Pick<Durability, 'syncSoon'>;
  /** Removes a blob once no reader streams it (storage/blob-leases.ts; in a cluster, every worker's). */
  leases: Pick<BlobLeases, 'removeWhenFree'>;
  log: Pick<Logger, 'warn'>;
  /** A serving process's edge cache (cdn/cache-purges.ts): the key's cached answers go at once. */
  cachePurges?: { local(purge: { kind: 'object'; bucketId: string; key: string }): unknown };
}

/** What removing a version needs (a serving process's context has it, and so has the jobs' context). */
export interface ObjectRemovalDeps extends ReleaseDeps {
  clock: () => Date;
  repos: Pick<Repos, 'objects' | 'notificationOutbox'>;
  /** A serving process's commit queue (db/commit-queue.ts): the removal shares a transaction with the requests' writes. */
  commits?: { run<T>(write: (r: Repos) => Promise<T>): Promise<T> };
}

export interface RemoveOptions {
  /** undefined: the key's current version (a delete marker on a versioned bucket); else that version for good (null: the "null" one). */
  versionId?: string | null;
  /** Removing the current version: only while this holds of it, inside the transaction. */
  ifCurrent?: (current: ObjectRecord | undefined) => boolean;
  /** Removing a version by id: only while it is noncurrent, or only a delete marker with nothing behind it. */
  only?: 'noncurrent' | 'lone-delete-marker';
  /** The events the removal reports (bucket notifications), queued in its transaction. */
  events?: ChangeEvents;
}

/**
 * DeleteObject: without a version id the key's current version goes (a versioned bucket gets a
 * delete marker instead); with one (null: the "null" version) that version goes for good.
 */
export async function removeObjectVersion(d: ObjectRemovalDeps, bucketId: string, key: string, opts: RemoveOptions = {}): Promise<RemoveResult> {
  const now = d.clock().getTime();
  const { versionId } = opts;
  const write = async (r: Pick<Repos, 'objects' | 'notificationOutbox'>): Promise<RemoveResult> => {
    const removed = versionId === undefined ? await r.objects.delete(bucketId, key, now, opts.ifCurrent) : await r.objects.deleteVersion(bucketId, key, versionId, opts.only);
    // Reported when something went (a version, or a delete marker made in its place), as S3 does.
    if (opts.events && (removed.existed || removed.deleteMarker)) {
      const name: EventName = removed.deleteMarker && versionId === undefined ? 's3:ObjectRemoved:DeleteMarkerCreated' : 's3:ObjectRemoved:Delete';
      await r.notificationOutbox.insert(opts.events({ name, size: 0, etag: null, versionId: removed.versionId ?? null, time: now }));
    }
    return removed;
  };
  const result = await (d.commits ? d.commits.run(write) : write(d.repos));
  versionReplaced(d, bucketId, key, result.blobIds);
  return result;
}

/**
 * After a commit that replaced or removed a key's version: the CDN must not serve the old version a
 * moment longer, and the old version's bytes go (releaseBlobs). Purged here only, not through the feed:
 * every process's CDN checks a cached object's ETag against the current version before serving it, so
 * the other processes never serve the old bytes either, and a write costs no feed row.
 */
export function versionReplaced(d: ReleaseDeps, bucketId: string, key: string, oldBlobIds: readonly string[]): void {
  d.cachePurges?.local({ kind: 'object', bucketId, key });
  void releaseBlobs(d, oldBlobIds);
}

/**
 * Removes bytes no record points at any more (every part of a multipart version), once the commit
 * that unreferenced them is durable: a power loss before that would bring the old row back, and it
 * must still find its bytes. A blob that a reader still streams goes when that reader is done (blob
 * leases); failures are logged, never the client's problem. Resolves once the removals are under way.
 */
export function releaseBlobs(d: ReleaseDeps, blobIds: readonly string[]): Promise<void> {
  if (blobIds.length === 0) return Promise.resolve();
  return d.durability.syncSoon().then(
    () => {
      for (const blobId of blobIds) void d.leases.removeWhenFree(blobId);
    },
    (err: unknown) => d.log.warn({ err, blobIds }, 'metadata sync failed: replaced blobs kept'),
  );
}
