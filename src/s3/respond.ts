// The one place that writes S3 responses: data from handlers, errors from the error table.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { Refusal } from '../errors/refusal.js';
import { S3Error, isMetadataBusy, isMetadataUnavailable, isOutOfSpace, isS3Error, metadataBusyError, metadataUnavailableError } from '../errors/s3-errors.js';
import { toXml } from './xml.js';
import { bodyWithheld } from './body.js';
import { drainRequest } from '../http/request-drain.js';
import { isDirectBody } from '../storage/file-body.js';
import { endTogether } from '../http/end-together.js';
import type { S3RequestRecord } from './s3-request-record.js';

export type HeaderValue = string | number | string[];

export interface S3Response {
  status: number;
  headers?: Record<string, HeaderValue | undefined>;
  /** XML/text/bytes, or a stream for object bodies. Ignored for HEAD. */
  body?: string | Buffer | Readable;
}

export function xmlResponse(xml: string, status = 200, headers: Record<string, HeaderValue | undefined> = {}): S3Response {
  return { status, headers: { 'content-type': 'application/xml', ...headers }, body: xml };
}

function setHeaders(res: ServerResponse, headers: Record<string, HeaderValue | undefined>): void {
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) res.setHeader(name, value);
  }
}

export async function sendResponse(req: IncomingMessage, res: ServerResponse, r: S3Response): Promise<void> {
  res.statusCode = r.status;
  setHeaders(res, r.headers ?? {});
  const body = r.body;
  if (body instanceof Readable) {
    if (req.method === 'HEAD') {
      body.destroy();
      res.end();
      return;
    }
    // A failure mid-body destroys the socket: the client sees a short read, never a short "success".
    if (isDirectBody(body)) {
      // A stored file writes itself to the socket from reused buffers, with no pipe in between.
      try {
        await body.sendTo(res);
      } catch (err) {
        res.destroy();
        throw err;
      }
      res.end();
      return;
    }
    await pipeline(body, res);
    return;
  }
  if (body !== undefined && !res.hasHeader('content-length')) res.setHeader('content-length', Buffer.byteLength(body));
  endTogether(res, req.method === 'HEAD' ? undefined : body);
}

/** A storage quota's refusal (credits/quotas.ts) as S3's answer: QuotaExceeded, its figures as elements of the error. */
export function quotaExceeded(refusal: Refusal): S3Error {
  const x = refusal.extra;
  const extra: Record<string, string> = { Quota: String(x['quota']) };
  if (typeof x['bucket'] === 'string') extra['BucketName'] = x['bucket'];
  for (const [field, element] of [['quotaBytes', 'QuotaBytes'], ['storedBytes', 'StoredBytes'], ['reservedBytes', 'ReservedBytes'], ['requiredBytes', 'RequiredBytes']] as const) {
    extra[element] = String(x[field]);
  }
  return new S3Error('QuotaExceeded', refusal.message, extra);
}

/** Writes an S3 error; anything that is not an S3Error is logged and reported as InternalError. */
export function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
  info: { requestId: string; resource: string; log: Logger; record: S3RequestRecord },
): void {
  let e: S3Error;
  if (isS3Error(err)) {
    e = err;
  } else if (err instanceof Refusal && err.kind === 'quota_exceeded') {
    e = quotaExceeded(err);
  } else if (isOutOfSpace(err)) {
    // The operator's cue to free space; the client gets 507, and reads go on being served.
    info.log.warn({ err, requestId: info.requestId }, 'storage full: write refused');
    e = new S3Error('XS3edgeStorageFull');
  } else if (isMetadataBusy(err)) {
    // Another process held meta.db's lock for the whole wait (a backup, sqlite3 by hand): nothing was done.
    info.log.warn({ err, requestId: info.requestId }, 'metadata database busy: request refused');
    e = metadataBusyError();
  } else if (isMetadataUnavailable(err)) {
    // PostgreSQL restarting or failing over: the SDKs retry a 503.
    info.log.warn({ err, requestId: info.requestId }, 'metadata database unavailable');
    e = metadataUnavailableError();
  } else {
    info.log.error({ err, requestId: info.requestId }, 'internal error');
    e = new S3Error('InternalError');
  }
  // Also when the headers are out and the body is cut: the line says why.
  info.record.failed(e);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const xml = toXml(
    'Error',
    { Code: e.code, Message: e.message, ...e.extra, Resource: info.resource, RequestId: info.requestId },
    { namespace: false },
  );
  afterDrain(req, (close) => {
    // The request guard may have answered meanwhile (a body too slow while we drained it).
    if (res.headersSent) return;
    res.statusCode = e.status;
    setHeaders(res, e.headers);
    if (close) res.setHeader('connection', 'close');
    if (e.status === 304 || req.method === 'HEAD') {
      res.end();
      return;
    }
    res.setHeader('content-type', 'application/xml');
    res.setHeader('content-length', Buffer.byteLength(xml));
    res.end(xml);
  });
}

/**
 * Answers once the rest of the request body is read and discarded (src/http/request-drain.ts): a
 * client still sending would otherwise see a reset instead of the error. Past the drain's limits,
 * and for a client still waiting for "100 Continue", the answer closes the connection instead.
 */
function afterDrain(req: IncomingMessage, send: (close: boolean) => void): void {
  if (bodyWithheld(req)) {
    send(true);
    return;
  }
  void drainRequest(req).then((complete) => send(!complete));
}
