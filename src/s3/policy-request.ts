// What a bucket policy judges for each S3 operation (issue 35): the IAM actions and resources an
// operation needs, as AWS's "Required permissions" of each API name them, and the request's condition
// keys. CopyObject and UploadPartCopy need two (read the source, write the destination), each judged
// by the policy of the bucket its resource names; an operation outside buckets (ListBuckets,
// CreateBucket) needs none a bucket policy could grant. Pure.
import type { PolicyPrincipal, PolicyRequest } from '../auth/bucket-policy/evaluate.js';
import type { OperationName } from './router.js';

export interface PolicyFacts {
  operation: OperationName;
  bucket: string;
  key?: string;
  /** The request's query (prefix, delimiter, versionId, ...). */
  query: ReadonlyMap<string, string>;
  principal: PolicyPrincipal;
  clientIp: string;
  secure: boolean;
  referer?: string;
  userAgent?: string;
  /** CopyObject and UploadPartCopy: the source, as x-amz-copy-source names it. */
  copySource?: { bucket: string; key: string; versionId?: string };
}

type Target = 'bucket' | 'object';

/** Each bucket operation's action on the bucket or the object; `versioned`: the action when versionId is given. */
const ACTIONS: Partial<Record<OperationName, { action: string; on: Target; versioned?: string; also?: string }>> = {
  HeadBucket: { action: 's3:ListBucket', on: 'bucket' },
  DeleteBucket: { action: 's3:DeleteBucket', on: 'bucket' },
  GetBucketLocation: { action: 's3:GetBucketLocation', on: 'bucket' },
  GetBucketVersioning: { action: 's3:GetBucketVersioning', on: 'bucket' },
  PutBucketVersioning: { action: 's3:PutBucketVersioning', on: 'bucket' },
  ListObjectVersions: { action: 's3:ListBucketVersions', on: 'bucket' },
  ListObjects: { action: 's3:ListBucket', on: 'bucket' },
  ListObjectsV2: { action: 's3:ListBucket', on: 'bucket' },
  PutObject: { action: 's3:PutObject', on: 'object' },
  PostObject: { action: 's3:PutObject', on: 'object' },
  GetObject: { action: 's3:GetObject', on: 'object', versioned: 's3:GetObjectVersion' },
  HeadObject: { action: 's3:GetObject', on: 'object', versioned: 's3:GetObjectVersion' },
  DeleteObject: { action: 's3:DeleteObject', on: 'object', versioned: 's3:DeleteObjectVersion' },
  CopyObject: { action: 's3:PutObject', on: 'object' },
  DeleteObjects: { action: 's3:DeleteObject', on: 'object' },
  GetBucketCors: { action: 's3:GetBucketCORS', on: 'bucket' },
  PutBucketCors: { action: 's3:PutBucketCORS', on: 'bucket' },
  DeleteBucketCors: { action: 's3:PutBucketCORS', on: 'bucket' },
  GetBucketAcl: { action: 's3:GetBucketAcl', on: 'bucket' },
  PutBucketAcl: { action: 's3:PutBucketAcl', on: 'bucket' },
  GetObjectAcl: { action: 's3:GetObjectAcl', on: 'object', versioned: 's3:GetObjectVersionAcl' },
  PutObjectAcl: { action: 's3:PutObjectAcl', on: 'object', versioned: 's3:PutObjectVersionAcl' },
  GetObjectTagging: { action: 's3:GetObjectTagging', on: 'object', versioned: 's3:GetObjectVersionTagging' },
  PutObjectTagging: { action: 's3:PutObjectTagging', on: 'object', versioned: 's3:PutObjectVersionTagging' },
  DeleteObjectTagging: { action: 's3:DeleteObjectTagging', on: 'object', versioned: 's3:DeleteObjectVersionTagging' },
  GetBucketTagging: { action: 's3:GetBucketTagging', on: 'bucket' },
  PutBucketTagging: { action: 's3:PutBucketTagging', on: 'bucket' },
  DeleteBucketTagging: { action: 's3:PutBucketTagging', on: 'bucket' },
  // AWS asks for both: the object's bytes' permission and the attributes' own.
  GetObjectAttributes: { action: 's3:GetObject', on: 'object', versioned: 's3:GetObjectVersion', also: 's3:GetObjectAttributes' },
  GetBucketPolicy: { action: 's3:GetBucketPolicy', on: 'bucket' },
  PutBucketPolicy: { action: 's3:PutBucketPolicy', on: 'bucket' },
  DeleteBucketPolicy: { action: 's3:DeleteBucketPolicy', on: 'bucket' },
  GetBucketPolicyStatus: { action: 's3:GetBucketPolicyStatus', on: 'bucket' },
  GetBucketLifecycleConfiguration: { action: 's3:GetLifecycleConfiguration', on: 'bucket' },
  PutBucketLifecycleConfiguration: { action: 's3:PutLifecycleConfiguration', on: 'bucket' },
  DeleteBucketLifecycle: { action: 's3:PutLifecycleConfiguration', on: 'bucket' },
  PutBucketNotificationConfiguration: { action: 's3:PutBucketNotification', on: 'bucket' },
  GetBucketNotificationConfiguration: { action: 's3:GetBucketNotification', on: 'bucket' },
  GetBucketRequestPayment: { action: 's3:GetBucketRequestPayment', on: 'bucket' },
  CreateMultipartUpload: { action: 's3:PutObject', on: 'object' },
  UploadPart: { action: 's3:PutObject', on: 'object' },
  UploadPartCopy: { action: 's3:PutObject', on: 'object' },
  CompleteMultipartUpload: { action: 's3:PutObject', on: 'object' },
  AbortMultipartUpload: { action: 's3:AbortMultipartUpload', on: 'object' },
  ListParts: { action: 's3:ListMultipartUploadParts', on: 'object' },
  ListMultipartUploads: { action: 's3:ListBucketMultipartUploads', on: 'bucket' },
};

const LISTINGS: ReadonlySet<OperationName> = new Set(['ListObjects', 'ListObjectsV2', 'ListObjectVersions']);

export const bucketArn = (bucket: string): string => `arn:aws:s3:::${bucket}`;
export const objectArn = (bucket: string, key: string): string => `arn:aws:s3:::${bucket}/${key}`;

/** The request's condition keys (lower case); a key the request does not carry is left out. */
function contextOf(f: PolicyFacts): Record<string, string | undefined> {
  const context: Record<string, string | undefined> = { 'aws:sourceip': f.clientIp, 'aws:securetransport': f.secure ? 'true' : 'false' };
  if (f.referer !== undefined) context['aws:referer'] = f.referer;
  if (f.userAgent !== undefined) context['aws:useragent'] = f.userAgent;
  if (!f.principal.anonymous) context['aws:username'] = f.principal.userName;
  if (LISTINGS.has(f.operation)) {
    const prefix = f.query.get('prefix');
    const delimiter = f.query.get('delimiter');
    if (prefix !== undefined) context['s3:prefix'] = prefix;
    if (delimiter !== undefined) context['s3:delimiter'] = delimiter;
  }
  return context;
}

/**
 * The requests a bucket policy must allow (none may be denied) for one operation; [] when the
 * operation is not a bucket's (ListBuckets, CreateBucket). DeleteObjects: one per key, given as `key`.
 */
export function policyRequests(f: PolicyFacts): PolicyRequest[] {
  const spec = ACTIONS[f.operation];
  if (!spec) return [];
  const context = contextOf(f);
  const resource = spec.on === 'bucket' ? bucketArn(f.bucket) : objectArn(f.bucket, f.key ?? '');
  const versioned = spec.versioned !== undefined && f.query.get('versionId') !== undefined;
  const out: PolicyRequest[] = [{ principal: f.principal, action: versioned ? (spec.versioned as string) : spec.action, resource, context }];
  if (spec.also) out.push({ principal: f.principal, action: spec.also, resource, context });
  if ((f.operation === 'CopyObject' || f.operation === 'UploadPartCopy') && f.copySource) {
    const s = f.copySource;
    out.push({ principal: f.principal, action: s.versionId ? 's3:GetObjectVersion' : 's3:GetObject', resource: objectArn(s.bucket, s.key), context });
  }
  return out;
}
