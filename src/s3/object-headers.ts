// System and user metadata: from upload request headers into the record, and back into response headers.
import { validateHeaderValue, type IncomingMessage } from 'node:http';
import { S3Error } from '../errors/s3-errors.js';
import type { ObjectRecord } from '../db/repos/objects.js';
import { httpDate } from '../http/http-date.js';

export type StoredHeaders = Pick<
  ObjectRecord,
  'contentType' | 'contentEncoding' | 'contentDisposition' | 'contentLanguage' | 'cacheControl' | 'expires' | 'userMetadata'
>;

/** AWS's limit on the user-defined metadata of one object. */
const MAX_USER_METADATA_BYTES = 2048;

/** Where upload metadata comes from: a request's headers, or a POST form's fields (post-object.ts). */
export type HeaderSource = Pick<IncomingMessage, 'headers'>;

function one(req: HeaderSource, name: string): string | null {
  const v = req.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(', ') : v;
}

/** `aws-chunked` is transfer framing, never a property of the stored object. */
function stripAwsChunked(encoding: string | null): string | null {
  if (encoding === null) return null;
  const rest = encoding
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s && s.toLowerCase() !== 'aws-chunked');
  return rest.length ? rest.join(', ') : null;
}

export function pickObjectHeaders(req: HeaderSource): StoredHeaders {
  const userMetadata: Record<string, string> = {};
  let bytes = 0;
  for (const [name, value] of Object.entries(req.headers)) {
    if (!name.startsWith('x-amz-meta-') || value === undefined) continue;
    const v = Array.isArray(value) ? value.join(',') : value;
    const metaName = name.slice('x-amz-meta-'.length);
    bytes += Buffer.byteLength(metaName) + Buffer.byteLength(v);
    userMetadata[metaName] = v;
  }
  if (bytes > MAX_USER_METADATA_BYTES) {
    throw new S3Error('InvalidArgument', 'Your metadata headers exceed the maximum allowed metadata size.');
  }
  return {
    contentType: one(req, 'content-type') ?? 'binary/octet-stream',
    contentEncoding: stripAwsChunked(one(req, 'content-encoding')),
    contentDisposition: one(req, 'content-disposition'),
    contentLanguage: one(req, 'content-language'),
    cacheControl: one(req, 'cache-control'),
    expires: one(req, 'expires'),
    userMetadata,
  };
}

/** `response-*` query parameters that a signed GET may use to override response headers. */
const OVERRIDES: Record<string, string> = {
  'response-content-type': 'content-type',
  'response-content-language': 'content-language',
  'response-expires': 'expires',
  'response-cache-control': 'cache-control',
  'response-content-disposition': 'content-disposition',
  'response-content-encoding': 'content-encoding',
};

const OVERRIDE_LIST = Object.entries(OVERRIDES);

export function objectResponseHeaders(
  rec: ObjectRecord,
  query: ReadonlyMap<string, string>,
): Record<string, string> {
  const h: Record<string, string> = {
    'last-modified': httpDate(rec.lastModified),
    etag: rec.etag,
    'accept-ranges': 'bytes',
  };
  if (rec.contentType) h['content-type'] = rec.contentType;
  if (rec.contentEncoding) h['content-encoding'] = rec.contentEncoding;
  if (rec.contentDisposition) h['content-disposition'] = rec.contentDisposition;
  if (rec.contentLanguage) h['content-language'] = rec.contentLanguage;
  if (rec.cacheControl) h['cache-control'] = rec.cacheControl;
  if (rec.expires) h.expires = rec.expires;
  for (const name in rec.userMetadata) h[`x-amz-meta-${name}`] = rec.userMetadata[name] as string;
  if (query.size === 0) return h;
  for (const [param, name] of OVERRIDE_LIST) {
    const v = query.get(param);
    if (v === undefined) continue;
    try {
      validateHeaderValue(name, v);
    } catch {
      throw new S3Error('InvalidArgument', `Invalid value for ${param}.`, { ArgumentName: param });
    }
    h[name] = v;
  }
  return h;
}
