// Pure S3 routing: (method, bucket, key, query, headers) -> one operation. Table-tested in test/unit.
import { S3Error } from '../errors/s3-errors.js';

export type OperationName =
  | 'ListBuckets'
  | 'CreateBucket'
  | 'HeadBucket'
  | 'DeleteBucket'
  | 'GetBucketLocation'
  | 'GetBucketVersioning'
  | 'PutBucketVersioning'
  | 'ListObjectVersions'
  | 'ListObjects'
  | 'ListObjectsV2'
  | 'PutObject'
  | 'PostObject'
  | 'GetObject'
  | 'HeadObject'
  | 'DeleteObject'
  | 'CopyObject'
  | 'DeleteObjects'
  | 'GetBucketCors'
  | 'PutBucketCors'
  | 'DeleteBucketCors'
  | 'GetBucketAcl'
  | 'PutBucketAcl'
  | 'GetObjectAcl'
  | 'PutObjectAcl'
  | 'GetObjectTagging'
  | 'PutObjectTagging'
  | 'DeleteObjectTagging'
  | 'GetBucketTagging'
  | 'PutBucketTagging'
  | 'DeleteBucketTagging'
  | 'GetObjectAttributes'
  | 'GetBucketPolicy'
  | 'PutBucketPolicy'
  | 'DeleteBucketPolicy'
  | 'GetBucketPolicyStatus'
  | 'GetBucketLifecycleConfiguration'
  | 'PutBucketLifecycleConfiguration'
  | 'DeleteBucketLifecycle'
  | 'PutBucketNotificationConfiguration'
  | 'GetBucketNotificationConfiguration'
  | 'GetBucketRequestPayment'
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'UploadPartCopy'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'ListParts'
  | 'ListMultipartUploads';

export interface RouteInput {
  method: string;
  bucket?: string;
  key?: string;
  query: ReadonlyMap<string, string>;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * Subresource -> method -> operation; any other method on a listed subresource is 501 NotImplemented.
 * Pairs in their order, made once (Object.entries per request was 400 bytes of garbage a GET).
 */
type SubresourceTable = readonly (readonly [string, Readonly<Partial<Record<string, OperationName>>>])[];

const table = (ops: Readonly<Record<string, Readonly<Partial<Record<string, OperationName>>>>>): SubresourceTable => Object.entries(ops);

const BUCKET_SUBRESOURCE_OPS: SubresourceTable = table({
  acl: { GET: 'GetBucketAcl', PUT: 'PutBucketAcl' },
  cors: { GET: 'GetBucketCors', PUT: 'PutBucketCors', DELETE: 'DeleteBucketCors' },
  delete: { POST: 'DeleteObjects' },
  lifecycle: { GET: 'GetBucketLifecycleConfiguration', PUT: 'PutBucketLifecycleConfiguration', DELETE: 'DeleteBucketLifecycle' },
  notification: { GET: 'GetBucketNotificationConfiguration', PUT: 'PutBucketNotificationConfiguration' },
  policy: { GET: 'GetBucketPolicy', PUT: 'PutBucketPolicy', DELETE: 'DeleteBucketPolicy' },
  policyStatus: { GET: 'GetBucketPolicyStatus' },
  requestPayment: { GET: 'GetBucketRequestPayment' },
  tagging: { GET: 'GetBucketTagging', PUT: 'PutBucketTagging', DELETE: 'DeleteBucketTagging' },
  uploads: { GET: 'ListMultipartUploads' },
  versioning: { GET: 'GetBucketVersioning', PUT: 'PutBucketVersioning' },
  versions: { GET: 'ListObjectVersions' },
});

const OBJECT_SUBRESOURCE_OPS: SubresourceTable = table({
  acl: { GET: 'GetObjectAcl', PUT: 'PutObjectAcl' },
  attributes: { GET: 'GetObjectAttributes' },
  tagging: { GET: 'GetObjectTagging', PUT: 'PutObjectTagging', DELETE: 'DeleteObjectTagging' },
  uploads: { POST: 'CreateMultipartUpload' },
  // PUT with x-amz-copy-source is UploadPartCopy (resolveOperation).
  uploadId: { PUT: 'UploadPart', POST: 'CompleteMultipartUpload', DELETE: 'AbortMultipartUpload', GET: 'ListParts' },
});

function subresourceOp(ops: SubresourceTable, r: RouteInput, what: string): OperationName | undefined {
  if (r.query.size === 0) return undefined;
  for (const [sub, byMethod] of ops) {
    if (!r.query.has(sub)) continue;
    return byMethod[r.method] ?? notImplemented(`${r.method} on ${what} subresource '${sub}'`);
  }
  return undefined;
}

/** Bucket subresources we know of but do not serve yet: answered 501 NotImplemented, never misrouted. */
const UNSUPPORTED_BUCKET_SUBRESOURCES = [
  'abac', 'accelerate', 'analytics', 'encryption', 'intelligent-tiering', 'inventory', 'logging',
  'metadataConfiguration', 'metadataInventoryTable', 'metadataJournalTable', 'metadataTable', 'metrics',
  'object-lock', 'ownershipControls', 'publicAccessBlock', 'replication',
  'session', 'website',
] as const;

const UNSUPPORTED_OBJECT_SUBRESOURCES = [
  'encryption', 'legal-hold', 'renameObject', 'restore', 'retention', 'select', 'torrent',
] as const;

function notImplemented(what: string): never {
  throw new S3Error('NotImplemented', `${what} is not implemented.`);
}

export function resolveOperation(r: RouteInput): OperationName {
  const { method, bucket, key, query } = r;
  if (!bucket) {
    if (method === 'GET') return 'ListBuckets';
    throw new S3Error('MethodNotAllowed');
  }
  if (key === undefined) {
    // S3 Object Lambda's callback (sent to its own endpoint on AWS): no bucket can have this name.
    if (method === 'POST' && bucket === 'WriteGetObjectResponse') notImplemented('WriteGetObjectResponse');
    if (method === 'GET' && query.has('location')) return 'GetBucketLocation';
    const bucketOp = subresourceOp(BUCKET_SUBRESOURCE_OPS, r, 'bucket');
    if (bucketOp) return bucketOp;
    for (const sub of UNSUPPORTED_BUCKET_SUBRESOURCES) if (query.has(sub)) notImplemented(`Bucket subresource '${sub}'`);
    switch (method) {
      case 'GET':
        return query.get('list-type') === '2' ? 'ListObjectsV2' : 'ListObjects';
      case 'PUT':
        return 'CreateBucket';
      case 'HEAD':
        return 'HeadBucket';
      case 'DELETE':
        return 'DeleteBucket';
      case 'POST':
        // A browser form upload to the bucket URL (operations/post-object.ts).
        return 'PostObject';
      default:
        throw new S3Error('MethodNotAllowed');
    }
  }
  const objectOp = subresourceOp(OBJECT_SUBRESOURCE_OPS, r, 'object');
  if (objectOp === 'UploadPart' && r.headers['x-amz-copy-source'] !== undefined) return 'UploadPartCopy';
  if (objectOp) return objectOp;
  for (const sub of UNSUPPORTED_OBJECT_SUBRESOURCES) if (query.has(sub)) notImplemented(`Object subresource '${sub}'`);
  switch (method) {
    case 'PUT':
      return r.headers['x-amz-copy-source'] !== undefined ? 'CopyObject' : 'PutObject';
    case 'GET':
      return 'GetObject';
    case 'HEAD':
      return 'HeadObject';
    case 'DELETE':
      return 'DeleteObject';
    default:
      throw new S3Error('MethodNotAllowed');
  }
}
