// What every S3 operation handler receives, and the shared bucket lookup + authorization step.
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.js';
import type { Principal } from '../auth/principal.js';
import { authorize, type Action } from '../auth/authorize.js';
import type { VerifiedAuth } from '../auth/sigv4/index.js';
import type { Bucket } from '../db/repos/index.js';
import { S3Error } from '../errors/s3-errors.js';
import type { S3Address } from './addressing.js';
import type { S3Response } from './respond.js';

export interface S3Request {
  ctx: AppContext;
  req: IncomingMessage;
  addr: S3Address;
  auth: VerifiedAuth;
  principal: Principal;
  requestId: string;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

export type OperationHandler = (r: S3Request) => Promise<S3Response>;

/**
 * Resolves the addressed bucket (or `name`, e.g. a copy source) and checks the principal may do
 * `action` on it. A bucket-scoped key asking for any other bucket is denied without learning whether
 * that bucket exists.
 */
export function requireBucket(r: S3Request, action: Action, name: string = r.addr.bucket as string): Promise<Bucket> {
  return bucketFor(r.ctx, r.principal, action, name);
}

/** requireBucket for a principal found otherwise than by a signed request (a POST form's policy signer). */
export async function bucketFor(ctx: AppContext, principal: Principal, action: Action, name: string): Promise<Bucket> {
  if (principal.kind === 'bucket' && principal.bucketName !== name) throw new S3Error('AccessDenied');
  const bucket = await ctx.bucketDirectory.byName(name);
  if (!bucket) throw new S3Error('NoSuchBucket', undefined, { BucketName: name });
  authorize(principal, action, bucket);
  return bucket;
}

export function requireKey(r: S3Request): string {
  return r.addr.key as string;
}

/** ListObjects style date: ISO 8601 with milliseconds. */
export function isoDate(ms: number): string {
  return new Date(ms).toISOString();
}

export function header(r: S3Request, name: string): string | undefined {
  const v = r.req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}
