// The S3 action names a bucket policy may name without a wildcard (AWS's "Actions defined by Amazon
// S3" that apply to buckets and objects), lower case: a name outside it is refused as a typo.
export const S3_POLICY_ACTIONS: ReadonlySet<string> = new Set(
  [
    'AbortMultipartUpload', 'CreateBucket', 'DeleteBucket', 'DeleteBucketPolicy', 'DeleteBucketWebsite', 'DeleteObject',
    'DeleteObjectTagging', 'DeleteObjectVersion', 'DeleteObjectVersionTagging', 'GetBucketAcl', 'GetBucketCORS',
    'GetBucketLocation', 'GetBucketLogging', 'GetBucketNotification', 'GetBucketObjectLockConfiguration', 'GetBucketOwnershipControls',
    'GetBucketPolicy', 'GetBucketPolicyStatus', 'GetBucketPublicAccessBlock', 'GetBucketRequestPayment', 'GetBucketTagging',
    'GetBucketVersioning', 'GetBucketWebsite', 'GetEncryptionConfiguration', 'GetLifecycleConfiguration', 'GetObject',
    'GetObjectAcl', 'GetObjectAttributes', 'GetObjectLegalHold', 'GetObjectRetention', 'GetObjectTagging', 'GetObjectVersion',
    'GetObjectVersionAcl', 'GetObjectVersionAttributes', 'GetObjectVersionTagging', 'ListAllMyBuckets', 'ListBucket',
    'ListBucketMultipartUploads', 'ListBucketVersions', 'ListMultipartUploadParts', 'PutBucketAcl', 'PutBucketCORS',
    'PutBucketLogging', 'PutBucketNotification', 'PutBucketObjectLockConfiguration', 'PutBucketOwnershipControls',
    'PutBucketPolicy', 'PutBucketPublicAccessBlock', 'PutBucketRequestPayment', 'PutBucketTagging', 'PutBucketVersioning',
    'PutBucketWebsite', 'PutEncryptionConfiguration', 'PutLifecycleConfiguration', 'PutObject', 'PutObjectAcl',
    'PutObjectLegalHold', 'PutObjectRetention', 'PutObjectTagging', 'PutObjectVersionAcl', 'PutObjectVersionTagging',
    'RestoreObject',
  ].map((a) => `s3:${a}`.toLowerCase()),
);
