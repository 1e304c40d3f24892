// The events an S3 request's object change will report (bucket notifications): who made it, from
// where, under which request id; undefined when the bucket has no notification configuration.
import type { Bucket } from '../db/repos/index.js';
import type { ChangeEvents } from '../notifications/bucket-notifications.js';
import type { S3Request } from './operation.js';

export function changeEvents(r: Pick<S3Request, 'ctx' | 'principal' | 'clientIp' | 'requestId'>, bucket: Bucket, key: string): Promise<ChangeEvents | undefined> {
  return r.ctx.bucketNotifications.eventsFor(bucket, key, {
    region: r.ctx.config.region,
    principal: r.principal.kind === 'anonymous' ? 'anonymous' : r.principal.accessKeyId,
    sourceIp: r.clientIp,
    requestId: r.requestId,
  });
}
