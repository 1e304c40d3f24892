// What every S3 operation handler receives, and the shared bucket lookup + authorization step.
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.js';
import type { Principal } from '../auth/principal.js';
import type { TLSSocket } from 'node:tls';
import { isAuthorized, type Action } from '../auth/authorize.js';
import type { PolicyPrincipal, PolicyRequest } from '../auth/bucket-policy/evaluate.js';
import type { BucketPolicy } from '../auth/bucket-policy/parse.js';
import { judge } from '../buckets/bucket-access.js';
import type { VerifiedAuth } from '../auth/sigv4/index.js';
import type { Bucket } from '../db/repos/index.js';
import { S3Error } from '../errors/s3-errors.js';
import type { S3Address } from './addressing.js';
import type { S3Response } from './respond.js';
import type { OperationName } from './router.js';
import { parseCopySourceHeader } from './copy-source-header.js';
import { policyRequests } from './policy-request.js';

export interface S3Request {
  ctx: AppContext;
  req: IncomingMessage;
  addr: S3Address;
  auth: VerifiedAuth;
  principal: Principal;
  operation: OperationName;
  /** The client's address (a trusted proxy's X-Forwarded-For believed): aws:SourceIp. */
  clientIp: string;
  requestId: string;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

export type OperationHandler = (r: S3Request) => Promise<S3Response>;

/**
 * Operations a bucket's policy never judges: its owner may always read, change or remove the policy,
 * even one that denies them everything else (as on AWS, so that a policy cannot lock its bucket away).
 */
const OWNER_ONLY: ReadonlySet<OperationName> = new Set(['GetBucketPolicy', 'PutBucketPolicy', 'DeleteBucketPolicy', 'GetBucketPolicyStatus']);

/** What a request asks of the buckets' policies, built only when a bucket it names has one. */
export type PolicyAsks = (bucketName: string) => PolicyRequest[];

/**
 * Resolves the addressed bucket (or `name`, e.g. a copy source) and checks the principal may do
 * `action` on it, by its keys and by the bucket's policy. A bucket-scoped key asking for any other
 * bucket is denied without learning whether that bucket exists, whatever a policy says.
 */
export function requireBucket(r: S3Request, action: Action, name: string = r.addr.bucket as string): Promise<Bucket> {
  return bucketFor(r.ctx, r.principal, action, name, OWNER_ONLY.has(r.operation) ? undefined : (bucket) => policyAsks(r, bucket, r.addr.key));
}

function policyPrincipal(p: Principal): PolicyPrincipal {
  return p.kind === 'anonymous' ? { anonymous: true } : { anonymous: false, userName: p.userName, accessKeyId: p.accessKeyId };
}

/** Whether the request came over TLS, to this process or to a trusted proxy that says so. */
function secureTransport(r: Pick<S3Request, 'req' | 'ctx'>): boolean {
  if ((r.req.socket as Partial<TLSSocket>).encrypted === true) return true;
  return header(r, 'x-forwarded-proto') === 'https' && r.ctx.clients.resolveForwarding(r.req.socket.remoteAddress, r.req.headers).trustedPeer;
}

/** What the asks of a request are made from (a POST form's upload has no S3Request). */
export type AskingRequest = Pick<S3Request, 'ctx' | 'req' | 'addr' | 'principal' | 'operation' | 'clientIp'>;

/** The asks of `r` on bucket `name`'s resources (a copy source's bucket judges the read of its object). */
export function policyAsks(r: AskingRequest, name: string, key: string | undefined): PolicyRequest[] {
  const copy = r.operation === 'CopyObject' || r.operation === 'UploadPartCopy';
  const referer = header(r, 'referer');
  const userAgent = header(r, 'user-agent');
  const all = policyRequests({
    operation: r.operation,
    bucket: r.addr.bucket as string,
    ...(key !== undefined ? { key } : {}),
    query: r.addr.query,
    principal: policyPrincipal(r.principal),
    clientIp: r.clientIp,
    secure: secureTransport(r),
    ...(referer !== undefined ? { referer } : {}),
    ...(userAgent !== undefined ? { userAgent } : {}),
    ...(copy ? { copySource: parseCopySourceHeader(header(r, 'x-amz-copy-source')) } : {}),
  });
  const arn = `arn:aws:s3:::${name}`;
  return all.filter((ask) => ask.resource === arn || ask.resource.startsWith(`${arn}/`));
}

/**
 * requireBucket for a principal found otherwise than by a signed request (a POST form's signer, or
 * nobody), with the request's asks of the bucket's policy (none: judged by the keys alone).
 */
export async function bucketFor(ctx: AppContext, principal: Principal, action: Action, name: string, asks?: PolicyAsks): Promise<Bucket> {
  const { bucket, granted } = await decide(ctx, principal, action, name, asks);
  if (!granted) throw new S3Error('AccessDenied');
  return bucket;
}

/**
 * The bucket, and whether the keys or the bucket's policy grant `action`; a refusal nothing may
 * overturn (an explicit Deny, another bucket's key, a bucket an unsigned request may not learn of) throws.
 */
async function decide(ctx: AppContext, principal: Principal, action: Action, name: string, asks?: PolicyAsks): Promise<{ bucket: Bucket; granted: boolean }> {
  const bucket = await resolveBucket(ctx, principal, name);
  const judged = asks && (await judgedBy(ctx, bucket));
  if (judged) {
    const decision = judge(judged, asks(name));
    if (decision === 'deny') throw new S3Error('AccessDenied');
    if (decision === 'allow') return { bucket, granted: true };
  }
  return { bucket, granted: isAuthorized(principal, action, bucket) };
}

/**
 * GetObject and HeadObject: the bucket, and whether the read rests on the object's own ACL (neither
 * keys nor policy grant it, nothing denies it): the handler then serves only a version whose canned
 * ACL is public-read, and answers AccessDenied for anything else, a missing key included.
 */
export async function requireBucketForRead(r: S3Request): Promise<{ bucket: Bucket; byObjectAcl: boolean }> {
  const { bucket, granted } = await decide(r.ctx, r.principal, 'ObjectRead', r.addr.bucket as string, (name) => policyAsks(r, name, r.addr.key));
  return { bucket, byObjectAcl: !granted };
}

/** The bucket by name, for a principal that may learn of it (a bucket key of another bucket, or nobody, may not). */
async function resolveBucket(ctx: AppContext, principal: Principal, name: string): Promise<Bucket> {
  if (principal.kind === 'bucket' && principal.bucketName !== name) throw new S3Error('AccessDenied');
  const bucket = await ctx.bucketDirectory.byName(name);
  if (!bucket) throw principal.kind === 'anonymous' ? new S3Error('AccessDenied') : new S3Error('NoSuchBucket', undefined, { BucketName: name });
  return bucket;
}

/** What the bucket's requests are judged by (policy and public ACL), or null: the cached answer when held. */
async function judgedBy(ctx: AppContext, bucket: Bucket): Promise<BucketPolicy | null> {
  return (ctx.bucketAccess.held(bucket) ?? (await ctx.bucketAccess.rulesFor(bucket))).judged;
}

/**
 * DeleteObjects: the addressed bucket, and whether each key (and version) may be deleted, judged one by
 * one as AWS does (a key refused is an AccessDenied entry of the answer, not a failed request).
 */
export async function requireBucketPerKey(r: S3Request, action: Action): Promise<{ bucket: Bucket; mayDelete: (key: string, versionId?: string) => boolean }> {
  const bucket = await resolveBucket(r.ctx, r.principal, r.addr.bucket as string);
  const byKeys = isAuthorized(r.principal, action, bucket);
  const judged = await judgedBy(r.ctx, bucket);
  if (!judged) {
    if (!byKeys) throw new S3Error('AccessDenied');
    return { bucket, mayDelete: () => true };
  }
  const mayDelete = (key: string, versionId?: string): boolean => {
    const asks = policyAsks(r, bucket.name, key).map((ask) => (versionId === undefined ? ask : { ...ask, action: 's3:DeleteObjectVersion' }));
    const decision = judge(judged, asks);
    return decision === 'allow' || (decision === 'none' && byKeys);
  };
  return { bucket, mayDelete };
}

export function requireKey(r: S3Request): string {
  return r.addr.key as string;
}

/** ListObjects style date: ISO 8601 with milliseconds. */
export function isoDate(ms: number): string {
  return new Date(ms).toISOString();
}

export function header(r: Pick<S3Request, 'req'>, name: string): string | undefined {
  const v = r.req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}
