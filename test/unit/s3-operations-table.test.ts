// docs/COMPATIBILITY.md "Every S3 operation" is kept true: each row's operation, sent as the AWS SDK's
// S3 model sends it (method, path, query; botocore 1.43 service-2.json), is routed to that operation
// when the row says yes or partly, and is 501 NotImplemented when it says no. The doc and this table
// must list the same operations.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { resolveOperation, type RouteInput } from '../../src/s3/router.js';
import { parseQuery } from '../../src/s3/addressing.js';

const DOC = fileURLToPath(new URL('../../../docs/COMPATIBILITY.md', import.meta.url));

type Wire = [method: string, bucket: string | undefined, key: string | undefined, query: string, headers?: RouteInput['headers']];

/** Each operation's request as the SDK model gives it (required query parameters filled in). */
const REQUESTS: Record<string, Wire> = {
  AbortMultipartUpload: ['DELETE', 'b', 'k', 'uploadId=u'],
  CompleteMultipartUpload: ['POST', 'b', 'k', 'uploadId=u'],
  CopyObject: ['PUT', 'b', 'k', '', { 'x-amz-copy-source': '/src/obj' }],
  CreateBucket: ['PUT', 'b', undefined, ''],
  CreateBucketMetadataConfiguration: ['POST', 'b', undefined, 'metadataConfiguration'],
  CreateBucketMetadataTableConfiguration: ['POST', 'b', undefined, 'metadataTable'],
  CreateMultipartUpload: ['POST', 'b', 'k', 'uploads'],
  CreateSession: ['GET', 'b', undefined, 'session'],
  DeleteBucket: ['DELETE', 'b', undefined, ''],
  DeleteBucketAnalyticsConfiguration: ['DELETE', 'b', undefined, 'analytics&id=x'],
  DeleteBucketCors: ['DELETE', 'b', undefined, 'cors'],
  DeleteBucketEncryption: ['DELETE', 'b', undefined, 'encryption'],
  DeleteBucketIntelligentTieringConfiguration: ['DELETE', 'b', undefined, 'intelligent-tiering&id=x'],
  DeleteBucketInventoryConfiguration: ['DELETE', 'b', undefined, 'inventory&id=x'],
  DeleteBucketLifecycle: ['DELETE', 'b', undefined, 'lifecycle'],
  DeleteBucketMetadataConfiguration: ['DELETE', 'b', undefined, 'metadataConfiguration'],
  DeleteBucketMetadataTableConfiguration: ['DELETE', 'b', undefined, 'metadataTable'],
  DeleteBucketMetricsConfiguration: ['DELETE', 'b', undefined, 'metrics&id=x'],
  DeleteBucketOwnershipControls: ['DELETE', 'b', undefined, 'ownershipControls'],
  DeleteBucketPolicy: ['DELETE', 'b', undefined, 'policy'],
  DeleteBucketReplication: ['DELETE', 'b', undefined, 'replication'],
  DeleteBucketTagging: ['DELETE', 'b', undefined, 'tagging'],
  DeleteBucketWebsite: ['DELETE', 'b', undefined, 'website'],
  DeleteObject: ['DELETE', 'b', 'k', ''],
  DeleteObjectTagging: ['DELETE', 'b', 'k', 'tagging'],
  DeleteObjects: ['POST', 'b', undefined, 'delete'],
  DeletePublicAccessBlock: ['DELETE', 'b', undefined, 'publicAccessBlock'],
  GetBucketAbac: ['GET', 'b', undefined, 'abac'],
  GetBucketAccelerateConfiguration: ['GET', 'b', undefined, 'accelerate'],
  GetBucketAcl: ['GET', 'b', undefined, 'acl'],
  GetBucketAnalyticsConfiguration: ['GET', 'b', undefined, 'analytics&id=x'],
  GetBucketCors: ['GET', 'b', undefined, 'cors'],
  GetBucketEncryption: ['GET', 'b', undefined, 'encryption'],
  GetBucketIntelligentTieringConfiguration: ['GET', 'b', undefined, 'intelligent-tiering&id=x'],
  GetBucketInventoryConfiguration: ['GET', 'b', undefined, 'inventory&id=x'],
  GetBucketLifecycle: ['GET', 'b', undefined, 'lifecycle'],
  GetBucketLifecycleConfiguration: ['GET', 'b', undefined, 'lifecycle'],
  GetBucketLocation: ['GET', 'b', undefined, 'location'],
  GetBucketLogging: ['GET', 'b', undefined, 'logging'],
  GetBucketMetadataConfiguration: ['GET', 'b', undefined, 'metadataConfiguration'],
  GetBucketMetadataTableConfiguration: ['GET', 'b', undefined, 'metadataTable'],
  GetBucketMetricsConfiguration: ['GET', 'b', undefined, 'metrics&id=x'],
  GetBucketNotification: ['GET', 'b', undefined, 'notification'],
  GetBucketNotificationConfiguration: ['GET', 'b', undefined, 'notification'],
  GetBucketOwnershipControls: ['GET', 'b', undefined, 'ownershipControls'],
  GetBucketPolicy: ['GET', 'b', undefined, 'policy'],
  GetBucketPolicyStatus: ['GET', 'b', undefined, 'policyStatus'],
  GetBucketReplication: ['GET', 'b', undefined, 'replication'],
  GetBucketRequestPayment: ['GET', 'b', undefined, 'requestPayment'],
  GetBucketTagging: ['GET', 'b', undefined, 'tagging'],
  GetBucketVersioning: ['GET', 'b', undefined, 'versioning'],
  GetBucketWebsite: ['GET', 'b', undefined, 'website'],
  GetObject: ['GET', 'b', 'k', ''],
  GetObjectAcl: ['GET', 'b', 'k', 'acl'],
  GetObjectAttributes: ['GET', 'b', 'k', 'attributes'],
  GetObjectLegalHold: ['GET', 'b', 'k', 'legal-hold'],
  GetObjectLockConfiguration: ['GET', 'b', undefined, 'object-lock'],
  GetObjectRetention: ['GET', 'b', 'k', 'retention'],
  GetObjectTagging: ['GET', 'b', 'k', 'tagging'],
  GetObjectTorrent: ['GET', 'b', 'k', 'torrent'],
  GetPublicAccessBlock: ['GET', 'b', undefined, 'publicAccessBlock'],
  HeadBucket: ['HEAD', 'b', undefined, ''],
  HeadObject: ['HEAD', 'b', 'k', ''],
  ListBucketAnalyticsConfigurations: ['GET', 'b', undefined, 'analytics'],
  ListBucketIntelligentTieringConfigurations: ['GET', 'b', undefined, 'intelligent-tiering'],
  ListBucketInventoryConfigurations: ['GET', 'b', undefined, 'inventory'],
  ListBucketMetricsConfigurations: ['GET', 'b', undefined, 'metrics'],
  ListBuckets: ['GET', undefined, undefined, ''],
  ListDirectoryBuckets: ['GET', undefined, undefined, ''],
  ListMultipartUploads: ['GET', 'b', undefined, 'uploads'],
  ListObjectVersions: ['GET', 'b', undefined, 'versions'],
  ListObjects: ['GET', 'b', undefined, ''],
  ListObjectsV2: ['GET', 'b', undefined, 'list-type=2'],
  ListParts: ['GET', 'b', 'k', 'uploadId=u'],
  PostObject: ['POST', 'b', undefined, '', { 'content-type': 'multipart/form-data; boundary=x' }],
  PutBucketAbac: ['PUT', 'b', undefined, 'abac'],
  PutBucketAccelerateConfiguration: ['PUT', 'b', undefined, 'accelerate'],
  PutBucketAcl: ['PUT', 'b', undefined, 'acl'],
  PutBucketAnalyticsConfiguration: ['PUT', 'b', undefined, 'analytics&id=x'],
  PutBucketCors: ['PUT', 'b', undefined, 'cors'],
  PutBucketEncryption: ['PUT', 'b', undefined, 'encryption'],
  PutBucketIntelligentTieringConfiguration: ['PUT', 'b', undefined, 'intelligent-tiering&id=x'],
  PutBucketInventoryConfiguration: ['PUT', 'b', undefined, 'inventory&id=x'],
  PutBucketLifecycle: ['PUT', 'b', undefined, 'lifecycle'],
  PutBucketLifecycleConfiguration: ['PUT', 'b', undefined, 'lifecycle'],
  PutBucketLogging: ['PUT', 'b', undefined, 'logging'],
  PutBucketMetricsConfiguration: ['PUT', 'b', undefined, 'metrics&id=x'],
  PutBucketNotification: ['PUT', 'b', undefined, 'notification'],
  PutBucketNotificationConfiguration: ['PUT', 'b', undefined, 'notification'],
  PutBucketOwnershipControls: ['PUT', 'b', undefined, 'ownershipControls'],
  PutBucketPolicy: ['PUT', 'b', undefined, 'policy'],
  PutBucketReplication: ['PUT', 'b', undefined, 'replication'],
  PutBucketRequestPayment: ['PUT', 'b', undefined, 'requestPayment'],
  PutBucketTagging: ['PUT', 'b', undefined, 'tagging'],
  PutBucketVersioning: ['PUT', 'b', undefined, 'versioning'],
  PutBucketWebsite: ['PUT', 'b', undefined, 'website'],
  PutObject: ['PUT', 'b', 'k', ''],
  PutObjectAcl: ['PUT', 'b', 'k', 'acl'],
  PutObjectLegalHold: ['PUT', 'b', 'k', 'legal-hold'],
  PutObjectLockConfiguration: ['PUT', 'b', undefined, 'object-lock'],
  PutObjectRetention: ['PUT', 'b', 'k', 'retention'],
  PutObjectTagging: ['PUT', 'b', 'k', 'tagging'],
  PutPublicAccessBlock: ['PUT', 'b', undefined, 'publicAccessBlock'],
  RenameObject: ['PUT', 'b', 'k', 'renameObject'],
  RestoreObject: ['POST', 'b', 'k', 'restore'],
  SelectObjectContent: ['POST', 'b', 'k', 'select&select-type=2'],
  UpdateBucketMetadataInventoryTableConfiguration: ['PUT', 'b', undefined, 'metadataInventoryTable&id=x'],
  UpdateBucketMetadataJournalTableConfiguration: ['PUT', 'b', undefined, 'metadataJournalTable'],
  UpdateObjectEncryption: ['PUT', 'b', 'k', 'encryption'],
  UploadPart: ['PUT', 'b', 'k', 'partNumber=1&uploadId=u'],
  UploadPartCopy: ['PUT', 'b', 'k', 'partNumber=1&uploadId=u', { 'x-amz-copy-source': '/src/obj' }],
  WriteGetObjectResponse: ['POST', 'WriteGetObjectResponse', undefined, ''],
};

/** Rows whose operation the router knows by another name: the same request on the wire. */
const ROUTED_AS: Record<string, string> = {
  GetBucketLifecycle: 'GetBucketLifecycleConfiguration',
  PutBucketLifecycle: 'PutBucketLifecycleConfiguration',
  ListDirectoryBuckets: 'ListBuckets',
  GetBucketNotification: 'GetBucketNotificationConfiguration',
  PutBucketNotification: 'PutBucketNotificationConfiguration',
};

function docRows(): Map<string, string> {
  const text = readFileSync(DOC, 'utf8');
  const start = text.indexOf('\n## Every S3 operation\n');
  const end = text.indexOf('\n## ', start + 1);
  const rows = new Map<string, string>();
  for (const line of text.slice(start, end).split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | operation | request | status | notes |
    if (cells.length < 6 || !/^[A-Z][A-Za-z0-9]+$/.test(cells[1] ?? '')) continue;
    rows.set(cells[1] ?? '', cells[3] ?? '');
  }
  return rows;
}

function route([method, bucket, key, query, headers]: Wire): string {
  try {
    return resolveOperation({ method, bucket, key, query: parseQuery(query), headers: headers ?? {} });
  } catch (err) {
    return (err as { code: string }).code;
  }
}

t.test('the doc lists every operation once, with a known status', async (t) => {
  const rows = docRows();
  t.same([...rows.keys()].sort(), Object.keys(REQUESTS).sort(), 'the same operations as the SDK model (and PostObject)');
  for (const [name, status] of rows) t.ok(['yes', 'partly', 'no'].includes(status), `${name}: status ${status}`);
});

t.test('every row is what the router does', async (t) => {
  for (const [name, status] of docRows()) {
    const wire = REQUESTS[name];
    if (!wire) continue;
    const got = route(wire);
    if (status === 'no') t.equal(got, 'NotImplemented', `${name}: 501 NotImplemented`);
    else t.equal(got, ROUTED_AS[name] ?? name, `${name} (${status}): routed to it`);
  }
});
