// The S3 event types notifications know: what a configuration may name (with the `*` of a family) and
// what happens (never a wildcard).
export const NOTIFICATION_EVENTS = [
  's3:ObjectCreated:*', 's3:ObjectCreated:Put', 's3:ObjectCreated:Post', 's3:ObjectCreated:Copy', 's3:ObjectCreated:CompleteMultipartUpload',
  's3:ObjectRemoved:*', 's3:ObjectRemoved:Delete', 's3:ObjectRemoved:DeleteMarkerCreated',
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];
export type EventName = Exclude<NotificationEvent, 's3:ObjectCreated:*' | 's3:ObjectRemoved:*'>;
