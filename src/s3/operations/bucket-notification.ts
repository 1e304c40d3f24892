// PutBucketNotificationConfiguration, GetBucketNotificationConfiguration: webhook targets the operator
// defined (`s3edge notification-targets add`), named as arn:s3edge:sqs:<region>:<id>:webhook. Setting
// them is bucket administration; a change applies to writes on every worker and node within a second
// (notifications/bucket-notifications.ts), here at once.
import { randomUUID } from 'node:crypto';
import type { QueueConfiguration } from '../notification-config.js';
import { notificationXml, parseNotificationConfiguration } from '../notification-config.js';
import { requireBucket, type OperationHandler } from '../operation.js';
import { readVerifiedBody } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { toXml } from '../xml.js';

const MAX_CONFIGURATION_BYTES = 256 * 1024;

export const putBucketNotificationConfiguration: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  const body = await readVerifiedBody(r, { maxBytes: MAX_CONFIGURATION_BYTES, requireDigest: false });
  const targets = new Set((await r.ctx.repos.notificationTargets.list()).map((t) => t.id));
  const configs = parseNotificationConfiguration(body, r.ctx.config.region, targets, randomUUID);
  // An empty configuration turns notifications off, as on S3.
  if (configs.length === 0) await r.ctx.repos.bucketNotifications.delete(bucket.id);
  else await r.ctx.repos.bucketNotifications.put(bucket.id, configs);
  r.ctx.bucketNotifications.forget(bucket);
  return { status: 200, headers: { 'content-length': 0 } };
};

export const getBucketNotificationConfiguration: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  // Kept only once checked by parseNotificationConfiguration: its events are names it accepted.
  const configs = ((await r.ctx.repos.bucketNotifications.get(bucket.id)) ?? []) as QueueConfiguration[];
  return xmlResponse(toXml('NotificationConfiguration', notificationXml(configs)));
};
