// What a webhook receives (issue 35): the AWS S3 event message, `{ "Records": [ ... ] }` with one
// record in S3's own shape (eventVersion 2.1), so that code written for S3's notifications reads ours,
// and the signature header a receiver checks it by. Pure.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { EventName } from './event-names.js';

/** The header carrying the body's HMAC-SHA256 under the target's secret, as GitHub's webhooks do. */
export const SIGNATURE_HEADER = 'x-s3edge-signature-256';
/** The event id a receiver deduplicates by (delivery is at least once). */
export const EVENT_ID_HEADER = 'x-s3edge-event-id';

export interface ObjectEvent {
  /** Unique and stable across retries of the same event. */
  id: string;
  name: EventName;
  /** Unix ms when the change committed. */
  time: number;
  region: string;
  bucket: string;
  bucketOwner: string;
  key: string;
  size: number;
  etag: string | null;
  versionId: string | null;
  /** The access key or user that made the change; 'anonymous' for none. */
  principal: string;
  sourceIp: string;
  requestId: string;
  /** Orders the events of one key: a larger sequencer is a later change (hex, as S3's). */
  sequencer: string;
  configurationId: string;
}

/** A key in an event, as S3 writes it: URL-encoded as a form value (a space is `+`). */
export function eventKey(key: string): string {
  return encodeURIComponent(key).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function eventMessage(e: ObjectEvent): { Records: Record<string, unknown>[] } {
  const object: Record<string, unknown> = { key: eventKey(e.key), sequencer: e.sequencer };
  if (e.name.startsWith('ObjectCreated', 3)) object['size'] = e.size;
  if (e.etag) object['eTag'] = e.etag.replace(/"/g, '');
  if (e.versionId) object['versionId'] = e.versionId;
  return {
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        awsRegion: e.region,
        eventTime: new Date(e.time).toISOString(),
        eventName: e.name.slice('s3:'.length),
        userIdentity: { principalId: e.principal },
        requestParameters: { sourceIPAddress: e.sourceIp },
        responseElements: { 'x-amz-request-id': e.requestId, 'x-amz-id-2': e.id },
        s3: {
          s3SchemaVersion: '1.0',
          configurationId: e.configurationId,
          bucket: { name: e.bucket, ownerIdentity: { principalId: e.bucketOwner }, arn: `arn:aws:s3:::${e.bucket}` },
          object,
        },
      },
    ],
  };
}

/** `sha256=<hex>` of the body under the target's secret. */
export function signBody(body: string | Buffer, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** What a receiver does: the header checked in constant time. */
export function signatureValid(body: string | Buffer, secret: string, header: string | undefined): boolean {
  if (!header) return false;
  const want = Buffer.from(signBody(body, secret));
  const got = Buffer.from(header);
  return want.length === got.length && timingSafeEqual(want, got);
}
