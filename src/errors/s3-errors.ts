// One table of S3 error codes with AWS spellings, HTTP status and the default message.
// Anything not in this table is reported to the client as InternalError (see respond.ts).

export const S3_ERRORS = {
  AccessDenied: [403, 'Access Denied'],
  AccessForbidden: [403, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec."],
  AuthorizationHeaderMalformed: [400, 'The authorization header is malformed.'],
  AuthorizationQueryParametersError: [400, 'Error parsing the X-Amz-Credential parameter.'],
  BadDigest: [400, 'The Content-MD5 or checksum value that you specified did not match what the server received.'],
  BadRequest: [400, 'Bad Request'],
  BucketAlreadyExists: [409, 'The requested bucket name is not available. Select a different name and try again.'],
  BucketAlreadyOwnedByYou: [409, 'Your previous request to create the named bucket succeeded and you already own it.'],
  BucketNotEmpty: [409, 'The bucket that you tried to delete is not empty.'],
  EntityTooLarge: [400, 'Your proposed upload exceeds the maximum allowed object size.'],
  EntityTooSmall: [400, 'Your proposed upload is smaller than the minimum allowed object size.'],
  ExpiredToken: [400, 'The provided token has expired.'],
  IncompleteBody: [400, 'You did not provide the number of bytes specified by the Content-Length HTTP header.'],
  InternalError: [500, 'We encountered an internal error. Please try again.'],
  InvalidAccessKeyId: [403, 'The AWS access key ID that you provided does not exist in our records.'],
  InvalidArgument: [400, 'Invalid Argument'],
  InvalidBucketName: [400, 'The specified bucket is not valid.'],
  InvalidDigest: [400, 'The Content-MD5 or checksum value that you specified is not valid.'],
  InvalidPart: [400, 'One or more of the specified parts could not be found.'],
  InvalidPartOrder: [400, 'The list of parts was not in ascending order.'],
  InvalidPolicyDocument: [400, 'The content of the form does not meet the conditions specified in the policy document.'],
  InvalidPartNumber: [416, 'The requested partnumber is not satisfiable'],
  InvalidRange: [416, 'The requested range is not satisfiable'],
  InvalidRequest: [400, 'Invalid Request'],
  InvalidTag: [400, 'Your request contains tag input that is not valid.'],
  InvalidURI: [400, "Couldn't parse the specified URI."],
  KeyTooLongError: [400, 'Your key is too long.'],
  MalformedPOSTRequest: [400, 'The body of your POST request is not well-formed multipart/form-data.'],
  // S3 sends this code (the error table's MaxPostPreDataLengthExceededError is not what the wire says).
  MaxPostPreDataLengthExceeded: [400, 'Your POST request fields preceding the upload file were too large.'],
  MalformedPolicy: [400, 'This policy contains invalid Json'],
  MalformedXML: [400, 'The XML that you provided was not well formed or did not validate against our published schema.'],
  MethodNotAllowed: [405, 'The specified method is not allowed against this resource.'],
  MissingContentLength: [411, 'You must provide the Content-Length HTTP header.'],
  MissingSecurityHeader: [400, 'Your request is missing a required header.'],
  NoSuchBucket: [404, 'The specified bucket does not exist.'],
  NoSuchBucketPolicy: [404, 'The bucket policy does not exist.'],
  NoSuchKey: [404, 'The specified key does not exist.'],
  NoSuchLifecycleConfiguration: [404, 'The lifecycle configuration does not exist.'],
  NoSuchUpload: [404, 'The specified multipart upload does not exist.'],
  NoSuchVersion: [404, 'The specified version does not exist.'],
  NoSuchCORSConfiguration: [404, 'The CORS configuration does not exist.'],
  NoSuchTagSet: [404, 'The TagSet does not exist.'],
  NotImplemented: [501, 'A header you provided implies functionality that is not implemented.'],
  NotModified: [304, 'Not Modified'],
  // No AWS code for a storage quota; 403 as MinIO's bucket quota is not (docs/COMPATIBILITY.md "Storage quotas"): SDKs never retry it.
  QuotaExceeded: [403, 'The upload would exceed a storage quota.'],
  PreconditionFailed: [412, 'At least one of the preconditions you specified did not hold.'],
  ConditionalRequestConflict: [409, 'A conflicting operation occurred. Retry the request.'],
  RequestTimeTooSkewed: [403, "The difference between the request time and the server's time is too large."],
  RequestTimeout: [400, 'Your socket connection to the server was not read from or written to within the timeout period.'],
  ServiceUnavailable: [503, 'Service is unable to handle request.'],
  SignatureDoesNotMatch: [403, 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'],
  SlowDown: [503, 'Please reduce your request rate.'],
  XAmzContentSHA256Mismatch: [400, "The provided 'x-amz-content-sha256' header does not match what was computed."],
  InvalidStorageClass: [400, 'The storage class you specified is not valid.'],
  TooManyBuckets: [400, 'You have attempted to create more buckets than allowed.'],
  UnexpectedContent: [400, 'This request does not support content.'],
  // No AWS code exists for a full disk; MinIO's is XMinioStorageFull with 507 (docs/COMPATIBILITY.md).
  XS3edgeStorageFull: [507, 'The storage backend is full. Please delete a few objects to proceed.'],
} as const satisfies Record<string, readonly [number, string]>;

export type S3ErrorCode = keyof typeof S3_ERRORS;

/** An error that maps to an S3 XML error response. `extra` fields become extra XML elements. */
export class S3Error extends Error {
  readonly code: S3ErrorCode;
  readonly status: number;
  readonly extra: Record<string, string>;
  /** Extra response headers (e.g. x-amz-bucket-region, Content-Range on 416). */
  readonly headers: Record<string, string>;

  constructor(
    code: S3ErrorCode,
    message?: string,
    extra: Record<string, string> = {},
    headers: Record<string, string> = {},
  ) {
    const [status, defaultMessage] = S3_ERRORS[code];
    super(message ?? defaultMessage);
    this.name = 'S3Error';
    this.code = code;
    this.status = status;
    this.extra = extra;
    this.headers = headers;
  }
}

export function isS3Error(err: unknown): err is S3Error {
  return err instanceof S3Error;
}

/** The storage backend cannot serve now (an upstream S3 down or refusing us): a 503, maybe with Retry-After. */
export function isStorageUnavailable(err: unknown): err is S3Error {
  return err instanceof S3Error && err.status === 503;
}

const OUT_OF_SPACE_CODES: ReadonlySet<unknown> = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL']);

/**
 * A write failed because the disk (or the quota, or SQLite's database file) is full: ENOSPC, EDQUOT or
 * SQLITE_FULL, also as the cause of a wrapping error. Answered as storage full, not InternalError.
 */
export function isOutOfSpace(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (OUT_OF_SPACE_CODES.has((e as { code?: unknown }).code)) return true;
  }
  return false;
}

/**
 * The metadata database is locked by another connection past the serving store's wait (SQLite's
 * SQLITE_BUSY: a backup, `sqlite3` by hand, an admin command's long transaction; DatabaseBusyError):
 * nothing was done, and a retry will likely succeed. Answered 503 SlowDown / the API's `busy`.
 */
export function isMetadataBusy(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) return true;
  }
  return false;
}

/** A 503 for a busy metadata database: S3 SlowDown, with the Retry-After the other 503s send. */
export function metadataBusyError(): S3Error {
  return new S3Error('SlowDown', 'The metadata database is busy (locked by another process); retry shortly.', {}, { 'Retry-After': '1' });
}

/** A 503 for a metadata database that does not answer (PostgreSQL restarting, failing over): S3 ServiceUnavailable, retried by the SDKs. */
export function metadataUnavailableError(): S3Error {
  return new S3Error('ServiceUnavailable', undefined, {}, { 'Retry-After': '1' });
}

/** Network failures of a database connection (node's codes on pg's errors). */
const CONNECTION_CODES: ReadonlySet<unknown> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** PostgreSQL SQLSTATEs of a server going away or refusing writes (a failover, a restart, a standby). */
const UNAVAILABLE_SQLSTATES: ReadonlySet<unknown> = new Set(['57P01', '57P02', '57P03', '25006', '53300']);
/** pg's own words for a connection lost or never given by the pool (it sets no code on them). */
const UNAVAILABLE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection terminated unexpectedly)/;

/**
 * The metadata database cannot serve now (PostgreSQL restarting, failing over, unreachable, or a
 * read-only standby): answered 503 so that clients retry, never InternalError. SQLSTATE class 08 is
 * PostgreSQL's connection exceptions.
 */
export function isMetadataUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code)) return true;
    if (typeof code === 'string' && code.length === 5 && code.startsWith('08')) return true;
    if (code === undefined && UNAVAILABLE_MESSAGES.test(String((e as { message?: unknown }).message ?? ''))) return true;
  }
  return false;
}
