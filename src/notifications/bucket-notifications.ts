// A bucket's notification configurations as object writes read them (cached per process for at most a
// second: buckets/per-bucket-cache.ts), and the outbox rows that report one change: made inside the
// change's own transaction (object-writes.ts), so an acknowledged change always has its events queued,
// and a change rolled back has none. A bucket without configurations costs a cache lookup per write.
import { randomUUID } from 'node:crypto';
import type { FoundCacheOptions } from '../db/found-cache.js';
import type { Bucket, OutboxEvent, Repos, StoredQueueConfiguration } from '../db/repos/index.js';
import { PerBucketCache } from '../buckets/per-bucket-cache.js';
import type { EventName } from './event-names.js';
import { eventMessage } from './event-record.js';
import { matchingConfigurations } from './matching.js';

type BucketRef = Pick<Bucket, 'id' | 'name' | 'ownerId'>;

/** Who made a change, as the event names them. */
export interface ChangeSource {
  region: string;
  /** The access key (or 'anonymous') that made the change. */
  principal: string;
  sourceIp: string;
  requestId: string;
}

/** What the commit knows once it ran: the version written or removed. */
export interface ChangeOutcome {
  name: EventName;
  size: number;
  etag: string | null;
  versionId: string | null;
  time: number;
}

/** The outbox rows of one committed change (none when no configuration takes it). */
export type ChangeEvents = (outcome: ChangeOutcome) => Pick<OutboxEvent, 'id' | 'targetId' | 'body' | 'createdAt'>[];

let sequence = 0;

/** S3's sequencer: ordered within a key by the commit time, then by a counter of this process. */
function sequencer(time: number): string {
  sequence = (sequence + 1) % 0x10000;
  return time.toString(16).toUpperCase().padStart(12, '0') + sequence.toString(16).toUpperCase().padStart(4, '0');
}

export class BucketNotifications {
  private readonly cache: PerBucketCache<StoredQueueConfiguration[] | null>;

  constructor(repos: Pick<Repos, 'bucketNotifications'>, opts: FoundCacheOptions = {}) {
    this.cache = new PerBucketCache(async (bucket) => {
      const configs = await repos.bucketNotifications.get(bucket.id);
      return configs && configs.length > 0 ? configs : null;
    }, opts);
  }

  /** Call after changing the bucket's configuration in this process. */
  forget(bucket: Pick<Bucket, 'id' | 'name'>): void {
    this.cache.forget(bucket);
  }

  /**
   * The events a change of `key` will report, given what the commit did; undefined when the bucket has
   * no configuration (the common case: nothing to do inside the commit).
   */
  async eventsFor(bucket: BucketRef, key: string, source: ChangeSource): Promise<ChangeEvents | undefined> {
    const configs = this.cache.held(bucket) ?? (await this.cache.get(bucket));
    if (!configs) return undefined;
    return (outcome) =>
      matchingConfigurations(configs, outcome.name, key).map((c) => {
        const id = randomUUID();
        const message = eventMessage({
          id,
          name: outcome.name,
          time: outcome.time,
          region: source.region,
          bucket: bucket.name,
          bucketOwner: bucket.ownerId,
          key,
          size: outcome.size,
          etag: outcome.etag,
          versionId: outcome.versionId,
          principal: source.principal,
          sourceIp: source.sourceIp,
          requestId: source.requestId,
          sequencer: sequencer(outcome.time),
          configurationId: c.id,
        });
        return { id, targetId: c.targetId, body: JSON.stringify(message), createdAt: outcome.time };
      });
  }
}
