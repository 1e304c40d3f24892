// The S3 surface: address -> operation -> SigV4 -> principal -> handler -> one responder.
import { SAFETY_HEADERS } from '../assets/content-safety.js';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from '../context.js';
import { parsePayloadMode, PresignedMemo, verifyRequest } from '../auth/sigv4/index.js';
import { lineWriter, type LineWriter } from '../log-format.js';
import { isPresignedV2, verifyPresignedV2 } from '../auth/sigv2/presigned.js';
import { S3Error } from '../errors/s3-errors.js';
import { parseAddress, validateKey, type S3Address } from './addressing.js';
import { resolveOperation, type OperationName } from './router.js';
import type { OperationHandler, S3Request } from './operation.js';
import type { PayloadMode, VerifiedAuth } from '../auth/sigv4/types.js';
import { ANONYMOUS, type Principal } from '../auth/principal.js';
import { sendError, sendResponse } from './respond.js';
import { trackContinue } from './body.js';
import { S3RequestRecord } from './s3-request-record.js';
import { countBodies } from '../http/counted-messages.js';
import {
  createBucketOp, deleteBucketOp, getBucketLocation, headBucket, listBuckets,
} from './operations/buckets.js';
import { getBucketVersioning, listObjectVersions, putBucketVersioning } from './operations/versioning.js';
import { listObjectsV1, listObjectsV2 } from './operations/list-objects.js';
import { putObject } from './operations/put-object.js';
import { postObject } from './operations/post-object.js';
import { getObject, headObject } from './operations/get-object.js';
import { deleteObject } from './operations/delete-object.js';
import { copyObject } from './operations/copy-object.js';
import { deleteObjects } from './operations/delete-objects.js';
import { deleteBucketCors, getBucketCors, putBucketCors } from './operations/bucket-cors.js';
import { deleteBucketTagging, getBucketTagging, putBucketTagging } from './operations/bucket-tagging.js';
import { getBucketAcl, getObjectAcl, putBucketAcl, putObjectAcl } from './operations/acl.js';
import { deleteObjectTagging, getObjectTagging, putObjectTagging } from './operations/object-tagging.js';
import { getObjectAttributes } from './operations/get-object-attributes.js';
import { getBucketRequestPayment } from './operations/bucket-config.js';
import { getBucketNotificationConfiguration, putBucketNotificationConfiguration } from './operations/bucket-notification.js';
import { deleteBucketPolicy, getBucketPolicy, getBucketPolicyStatus, putBucketPolicy } from './operations/bucket-policy.js';
import { deleteBucketLifecycle, getBucketLifecycleConfiguration, putBucketLifecycleConfiguration } from './operations/bucket-lifecycle.js';
import { actualCorsHeaders, preflightResponse } from './cors.js';
import { createMultipartUpload } from './operations/multipart/create.js';
import { uploadPart, uploadPartCopy } from './operations/multipart/upload-part.js';
import { completeMultipartUpload } from './operations/multipart/complete.js';
import { abortMultipartUpload, listMultipartUploads, listParts } from './operations/multipart/list.js';

/** Operations that create an object under the key they address: only these refuse a key XML cannot list. */
const CREATES_KEY: ReadonlySet<OperationName> = new Set(['PutObject', 'CopyObject', 'CreateMultipartUpload', 'CompleteMultipartUpload']);

const SAFETY: readonly string[] = Object.entries(SAFETY_HEADERS).flat();

/** PostObject is not here: its form, not the request, is signed (the branch in handleS3). */
const HANDLERS: Record<Exclude<OperationName, 'PostObject'>, OperationHandler> = {
  ListBuckets: listBuckets,
  CreateBucket: createBucketOp,
  HeadBucket: headBucket,
  DeleteBucket: deleteBucketOp,
  GetBucketLocation: getBucketLocation,
  GetBucketVersioning: getBucketVersioning,
  PutBucketVersioning: putBucketVersioning,
  ListObjectVersions: listObjectVersions,
  ListObjects: listObjectsV1,
  ListObjectsV2: listObjectsV2,
  PutObject: putObject,
  GetObject: getObject,
  HeadObject: headObject,
  DeleteObject: deleteObject,
  CopyObject: copyObject,
  DeleteObjects: deleteObjects,
  GetBucketCors: getBucketCors,
  PutBucketCors: putBucketCors,
  DeleteBucketCors: deleteBucketCors,
  GetBucketAcl: getBucketAcl,
  PutBucketAcl: putBucketAcl,
  GetObjectAcl: getObjectAcl,
  PutObjectAcl: putObjectAcl,
  GetObjectTagging: getObjectTagging,
  PutObjectTagging: putObjectTagging,
  DeleteObjectTagging: deleteObjectTagging,
  GetBucketTagging: getBucketTagging,
  PutBucketTagging: putBucketTagging,
  DeleteBucketTagging: deleteBucketTagging,
  GetObjectAttributes: getObjectAttributes,
  GetBucketPolicy: getBucketPolicy,
  PutBucketPolicy: putBucketPolicy,
  DeleteBucketPolicy: deleteBucketPolicy,
  GetBucketPolicyStatus: getBucketPolicyStatus,
  GetBucketLifecycleConfiguration: getBucketLifecycleConfiguration,
  PutBucketLifecycleConfiguration: putBucketLifecycleConfiguration,
  DeleteBucketLifecycle: deleteBucketLifecycle,
  PutBucketNotificationConfiguration: putBucketNotificationConfiguration,
  GetBucketNotificationConfiguration: getBucketNotificationConfiguration,
  GetBucketRequestPayment: getBucketRequestPayment,
  CreateMultipartUpload: createMultipartUpload,
  UploadPart: uploadPart,
  UploadPartCopy: uploadPartCopy,
  CompleteMultipartUpload: completeMultipartUpload,
  AbortMultipartUpload: abortMultipartUpload,
  ListParts: listParts,
  ListMultipartUploads: listMultipartUploads,
};

/**
 * Request ids: 16 hex digits, a random per-handler prefix and a counter. Unique within the process and
 * unlikely to repeat across restarts, without a random draw per request.
 */
function requestIdGenerator(): () => string {
  const prefix = randomBytes(3).toString('hex').toUpperCase();
  let seq = 0;
  return () => prefix + (seq++ % 0x10000000000).toString(16).toUpperCase().padStart(10, '0');
}

/** "The client went away", as an AbortSignal made only for the handlers that ask for one. */
class ClientGone {
  gone = false;
  private controller?: AbortController;

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.gone) this.controller.abort();
    return this.controller.signal;
  }

  abort(): void {
    this.gone = true;
    this.controller?.abort();
  }
}

/**
 * The request as an operation's handler sees it. A class, not an object literal: a literal with the
 * `signal` getter is made in dictionary mode (~0.35 µs to create, and slow to read from, on every S3
 * request).
 */
class HandlerRequest implements S3Request {
  constructor(
    readonly ctx: AppContext,
    readonly req: IncomingMessage,
    readonly addr: S3Address,
    readonly auth: VerifiedAuth,
    readonly principal: Principal,
    readonly operation: OperationName,
    readonly clientIp: string,
    readonly requestId: string,
    private readonly client: ClientGone,
  ) {}

  get signal(): AbortSignal {
    return this.client.signal;
  }
}

/**
 * A write that names a bucket deleted meanwhile (by another process, while this one still had it
 * cached) fails on the bucket foreign key: that is NoSuchBucket, not an internal error.
 */
function bucketGone(err: unknown, addr: S3Address | undefined): unknown {
  if (!(err instanceof Error) || (err as NodeJS.ErrnoException).code !== 'SQLITE_CONSTRAINT_FOREIGNKEY' || addr?.bucket === undefined) return err;
  return new S3Error('NoSuchBucket', undefined, { BucketName: addr.bucket });
}

/**
 * An unsigned request's verification: no key, and a body checked by its x-amz-content-sha256 when that
 * names a digest. Chunk signatures need a key, so an unsigned request cannot send them.
 */
function anonymousAuth(req: IncomingMessage): VerifiedAuth {
  const declared = req.headers['x-amz-content-sha256'];
  const payload: PayloadMode = typeof declared === 'string' ? parsePayloadMode(declared) : { kind: 'unsigned' };
  if (payload.kind === 'streaming-signed') {
    throw new S3Error('InvalidRequest', 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD needs a signed request: sign it, or send the body unsigned.');
  }
  return { accessKeyId: '', method: 'header', payload, signingKey: EMPTY, signature: '', amzDate: '', scope: '' };
}

const EMPTY = Buffer.alloc(0);

export type S3Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createS3Handler(ctx: AppContext): S3Handler {
  const newRequestId = requestIdGenerator();
  const lines = lineWriter(ctx.log);
  const memo = new PresignedMemo();
  return (req, res) => handleS3(ctx, lines, memo, newRequestId(), req, res);
}

async function handleS3(ctx: AppContext, lines: LineWriter, memo: PresignedMemo, requestId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.setHeader('x-amz-request-id', requestId);
  res.setHeader('x-amz-id-2', requestId);
  res.setHeader('server', 's3edge');
  // Object bytes on this origin (presigned links opened in a browser, response-content-type=text/html)
  // are inert, as on the CDN: S3 clients ignore both headers, browsers never run what they are given.
  for (let i = 0; i < SAFETY.length; i += 2) res.setHeader(SAFETY[i] as string, SAFETY[i + 1] as string);
  trackContinue(req, res);
  const rawUrl = req.url ?? '/';
  let addr: S3Address | undefined;
  const client = new ClientGone();
  const record = new S3RequestRecord(requestId, req.method ?? 'GET', ctx.clients.clientIp(req.socket.remoteAddress, req.headers));
  countBodies(req, res, record);
  let handling = true;
  // 'close' comes once the response is over, or when the client left: the one log line is written then.
  const onClose = (): void => {
    if (handling && !res.writableFinished) client.abort();
    record.write(lines, res, ctx.requestMetrics);
  };
  res.once('close', onClose);
  try {
    addr = parseAddress(rawUrl, req.headers.host, ctx.config.s3Domains);
    record.bucket = addr.bucket ?? null;
    record.key = addr.key ?? null;
    // Browsers never sign preflights: answered from the bucket's CORS rules alone.
    if (req.method === 'OPTIONS') {
      record.operation = 'CorsPreflight';
      await sendResponse(req, res, await preflightResponse(ctx, req, addr.bucket));
      return;
    }
    // Only a browser's request (it names its Origin) has CORS headers to answer with.
    if (req.headers.origin !== undefined) {
      const cors = await actualCorsHeaders(ctx, req, addr.bucket);
      if (cors) for (const name in cors) res.setHeader(name, cors[name] as string);
    }
    const op = resolveOperation({ method: req.method ?? 'GET', bucket: addr.bucket, key: addr.key, query: addr.query, headers: req.headers });
    record.operation = op;
    if (addr.key !== undefined) validateKey(addr.key, { existing: !CREATES_KEY.has(op) });
    if (op === 'PostObject') {
      // A browser form upload: authenticated by the signed policy in the form, not by the request.
      const result = await postObject({
        ctx, req, addr, record,
        get signal() {
          return client.signal;
        },
      });
      await ctx.durability.sync();
      await sendResponse(req, res, result);
      return;
    }
    const signed = { method: req.method ?? 'GET', rawPath: addr.rawPath, rawQuery: addr.rawQuery, headers: req.headers };
    const now = ctx.clock();
    const v2Path = addr.virtualHost ? `/${addr.bucket}${addr.rawPath}` : addr.rawPath;
    const { value: auth, key: found } = await ctx.keys.verify((getSecret) =>
      isPresignedV2(signed.rawQuery)
        ? verifyPresignedV2(signed, v2Path, { now, getSecret })
        : verifyRequest(signed, { region: ctx.config.region, now, maxSkewMs: ctx.config.maxSkewSeconds * 1000, getSecret, memo }),
    );
    let principal: Principal = ANONYMOUS;
    if (auth) {
      record.accessKeyId = auth.accessKeyId;
      if (!found || found.principal.accessKeyId !== auth.accessKeyId) throw new S3Error('InvalidAccessKeyId');
      principal = found.principal;
    }
    const asked = new HandlerRequest(ctx, req, addr, auth ?? anonymousAuth(req), principal, op, record.clientIp, requestId, client);
    const result = await HANDLERS[op](asked);
    // A write is acknowledged only once its commit is on disk (one flush shared by concurrent writes).
    if (req.method !== 'GET' && req.method !== 'HEAD') await ctx.durability.sync();
    await sendResponse(req, res, result);
  } catch (err) {
    if (client.gone) {
      res.destroy();
      return;
    }
    sendError(req, res, bucketGone(err, addr), { requestId, resource: addr?.rawPath ?? '/', log: ctx.log, record });
  } finally {
    handling = false;
  }
}
