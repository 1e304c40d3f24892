// Pure S3 routing: (method, bucket, key, query, headers) -> one operation. Table-tested in test/unit.
import { S3Error } from '../errors/s3-errors.js';

export type OperationName =
  | 'ListBuckets'
  | 'CreateBucket'
  | 'HeadBucket'
  | 'DeleteBucket'
  | 'GetBucketLocation'
  | 'GetBucketVersioning'
  | 'ListObjects'
  | 'ListObjectsV2'
  | 'PutObject'
  | 'GetObject'
  | 'HeadObject'
  | 'DeleteObject';

export interface RouteInput {
  method: string;
  bucket?: string;
  key?: string;
  query: ReadonlyMap<string, string>;
  headers: Record<string, string | string[] | undefined>;
}

/** Bucket subresources we know of but do not serve yet: answered 501 NotImplemented, never misrouted. */
const UNSUPPORTED_BUCKET_SUBRESOURCES = [
  'accelerate', 'acl', 'analytics', 'cors', 'delete', 'encryption', 'intelligent-tiering', 'inventory',
  'lifecycle', 'logging', 'metrics', 'notification', 'object-lock', 'ownershipControls', 'policy',
  'policyStatus', 'publicAccessBlock', 'replication', 'requestPayment', 'tagging', 'uploads', 'versions',
  'website',
] as const;

const UNSUPPORTED_OBJECT_SUBRESOURCES = [
  'acl', 'attributes', 'legal-hold', 'restore', 'retention', 'select', 'tagging', 'torrent', 'uploadId',
  'uploads',
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
    if (method === 'GET' && query.has('location')) return 'GetBucketLocation';
    if (method === 'GET' && query.has('versioning')) return 'GetBucketVersioning';
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
      default:
        throw new S3Error('MethodNotAllowed');
    }
  }
  for (const sub of UNSUPPORTED_OBJECT_SUBRESOURCES) if (query.has(sub)) notImplemented(`Object subresource '${sub}'`);
  switch (method) {
    case 'PUT':
      if (r.headers['x-amz-copy-source'] !== undefined) notImplemented('CopyObject');
      return 'PutObject';
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
