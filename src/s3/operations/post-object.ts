// POST Object: a browser uploads a file with an HTML form (multipart/form-data) to the bucket URL,
// authorized by a POST policy its server signed, not by a signed request. The fields before the file
// are read first (post-form.ts); the signature and the policy are checked (post-auth.ts,
// post-policy.ts) before a byte of the file is read; then the file is received, verified and committed
// exactly like a PutObject body. Nothing is stored unless every check passes. docs/COMPATIBILITY.md,
// "Browser POST uploads", lists every decision.
import { validateHeaderValue, type IncomingMessage } from 'node:http';
import type { AppContext } from '../../context.js';
import { S3Error } from '../../errors/s3-errors.js';
import { ANONYMOUS, type Principal } from '../../auth/principal.js';
import { keyProblem, type S3Address } from '../addressing.js';
import { bucketFor, policyAsks, type AskingRequest } from '../operation.js';
import { commitObject, singleBlobRecord } from '../object-writes.js';
import { pickObjectHeaders } from '../object-headers.js';
import { receiveObjectStream } from '../receive-upload.js';
import { parseUploadExpectations } from '../upload-checks.js';
import { xmlResponse, type S3Response } from '../respond.js';
import { toXml } from '../xml.js';
import { readPostForm } from '../post-form.js';
import { missingField, verifyPostSignature } from '../post-auth.js';
import { checkFileSize, checkPostPolicy, expandFilename, isExemptField, parsePostPolicy, type FormField } from '../post-policy.js';
import { CANNED_ACLS, objectAclOf } from './acl.js';
import { parseTaggingXml } from '../tagging.js';
import { versionHeaders } from '../versioning.js';
import { changeEvents } from '../object-events.js';
import { quotaTarget } from '../quota.js';
import type { S3RequestRecord } from '../s3-request-record.js';

export interface PostObjectRequest {
  ctx: AppContext;
  req: IncomingMessage;
  addr: S3Address;
  record: S3RequestRecord;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** Fields that become the object's headers, as the same headers do on PutObject. */
const STORED_HEADER_FIELDS = ['content-type', 'cache-control', 'content-disposition', 'content-encoding', 'content-language', 'expires'];

function isMultipartForm(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() === 'multipart/form-data';
}

/** The fields as the header record pickObjectHeaders and parseUploadExpectations read; values must be valid header values. */
function fieldsAsHeaders(fields: ReadonlyMap<string, FormField>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, { value }] of fields) {
    if (isExemptField(name)) continue;
    const stored = name.startsWith('x-amz-meta-') || STORED_HEADER_FIELDS.includes(name);
    if (stored) {
      try {
        validateHeaderValue(name, value);
        if (name.startsWith('x-amz-meta-') && !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) throw new Error('name');
      } catch {
        // It would be sent back as a header on every GET: refused now, as an invalid header would be.
        throw new S3Error('InvalidArgument', `Invalid value for the form field ${name}.`, { ArgumentName: name });
      }
    }
    headers[name] = value;
  }
  return headers;
}

/**
 * The principal a form's signature names and its policy, or undefined for a form without a signature
 * (an anonymous upload, which only the bucket's policy or public-read-write ACL lets in).
 */
async function authenticate(r: PostObjectRequest, fields: ReadonlyMap<string, FormField>): Promise<{ principal: Principal; policy: string } | undefined> {
  const { ctx } = r;
  const { value: signer, key: found } = await ctx.keys.verify((getSecret) => verifyPostSignature(fields, { region: ctx.config.region, getSecret }));
  if (!signer) return undefined;
  r.record.accessKeyId = signer.accessKeyId;
  if (!found || found.principal.accessKeyId !== signer.accessKeyId) throw new S3Error('InvalidAccessKeyId', undefined, { AWSAccessKeyId: signer.accessKeyId });
  return { principal: found.principal, policy: signer.policy };
}

/** The object's URL, as S3 gives it in Location: the request's own scheme and host, the key percent-encoded. */
function objectUrl(r: PostObjectRequest, bucket: string, key: string): string {
  const tls = (r.req.socket as { encrypted?: boolean }).encrypted === true;
  const host = r.req.headers.host ?? 'localhost';
  const path = r.addr.virtualHost ? `/${encodeURIComponent(key)}` : `/${bucket}/${encodeURIComponent(key)}`;
  return `${tls ? 'https' : 'http'}://${host}${path}`;
}

/** success_action_redirect (or the older `redirect`) when it is an absolute http(s) URL: S3 ignores any other. */
function redirectTarget(fields: ReadonlyMap<string, FormField>): URL | undefined {
  const raw = fields.get('success_action_redirect')?.value ?? fields.get('redirect')?.value;
  if (!raw) return undefined;
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

function successResponse(
  r: PostObjectRequest,
  fields: ReadonlyMap<string, FormField>,
  bucket: string,
  key: string,
  etag: string,
  versionId: string | undefined,
): S3Response {
  // x-amz-version-id on every form of the answer, as PutObject gives it on a versioned bucket.
  const version = versionHeaders(versionId);
  const location = objectUrl(r, bucket, key);
  const redirect = redirectTarget(fields);
  if (redirect) {
    // bucket, key and etag appended to the URL's own query, form-encoded (the key's `/` as %2F, the ETag quoted).
    const added = new URLSearchParams({ bucket, key, etag }).toString();
    const target = redirect.href.replace(/#.*$/, '');
    const sep = redirect.search === '' ? (target.endsWith('?') ? '' : '?') : '&';
    return { status: 303, headers: { location: `${target}${sep}${added}`, etag, 'content-length': '0', ...version } };
  }
  const status = fields.get('success_action_status')?.value;
  if (status === '201') {
    const xml = toXml('PostResponse', { Location: location, Bucket: bucket, Key: key, ETag: etag }, { namespace: false });
    return xmlResponse(xml, 201, { etag, location, ...version });
  }
  return { status: status === '200' ? 200 : 204, headers: { etag, location, ...version, ...(status === '200' ? { 'content-length': '0' } : {}) } };
}

export async function postObject(r: PostObjectRequest): Promise<S3Response> {
  const { ctx, req } = r;
  const bucketName = r.addr.bucket as string;
  if (!isMultipartForm(req.headers['content-type'])) {
    throw new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', {
      Condition: 'Bucket POST must be of the enclosure-type multipart/form-data',
    });
  }
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) throw new S3Error('MissingContentLength');
  const declared = req.headers['content-length'];
  const bound = declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : undefined;

  const form = await readPostForm(req);
  const { fields, file } = form;
  if (!file) throw new S3Error('InvalidArgument', 'POST requires exactly one file upload per request.', { ArgumentName: 'file', ArgumentValue: '0' });
  // From here on the file part waits unread: every answer below is given before a byte of it is stored.
  if (!fields.get('key')?.value) throw missingField('key');
  const signed = await authenticate(r, fields);
  const policy = signed && parsePostPolicy(signed.policy);
  const principal = signed?.principal ?? ANONYMOUS;
  const asking: AskingRequest = { ctx, req, addr: r.addr, principal, operation: 'PostObject', clientIp: r.record.clientIp };
  const keyAsked = expandFilename((fields.get('key') as FormField).value, file.filename);
  const bucket = await bucketFor(ctx, principal, 'ObjectWrite', bucketName, (name) => policyAsks(asking, name, keyAsked));

  // "All variables within the form are expanded prior to validating the POST policy."
  for (const [name, field] of fields) {
    if (!isExemptField(name)) fields.set(name, { name: field.name, value: expandFilename(field.value, file.filename) });
  }
  // An unsigned form has no policy to keep to: the bucket's own policy let it in.
  const range = policy && checkPostPolicy(policy, fields, { now: ctx.clock().getTime(), bucket: bucketName });
  const key = (fields.get('key') as FormField).value;
  if (key === '') throw missingField('key');
  const problem = keyProblem(key);
  if (problem) throw problem;
  const acl = fields.get('acl')?.value;
  // A canned ACL as on PutObject: public-read (or public-read-write) lets everyone read the object.
  if (acl !== undefined && !CANNED_ACLS.has(acl)) throw new S3Error('InvalidArgument', undefined, { ArgumentName: 'acl', ArgumentValue: acl });
  // `tagging`: a <Tagging> document, as PutObjectTagging takes it (its limits and errors).
  const taggingField = fields.get('tagging')?.value;
  const tagging = taggingField === undefined ? undefined : parseTaggingXml(Buffer.from(taggingField, 'utf8'));

  const headers = fieldsAsHeaders(fields);
  const meta = pickObjectHeaders({ headers });
  const expect = parseUploadExpectations({ headers }, { kind: 'unsigned' });
  const allowed = Math.min(ctx.config.maxObjectSize, range?.max ?? Infinity);
  // Room under the owner's and the bucket's storage quotas before a byte of the file is read: the file is
  // at most the request's length, and it is stopped as it streams past what the quotas leave.
  const quota = await ctx.quotas.reserve(quotaTarget(bucket), { upTo: bound });
  try {
    const maxSize = Math.min(allowed, quota.maxBytes);
    let received;
    try {
      received = await receiveObjectStream(ctx, file.stream, { bound, maxSize, expect, signal: r.signal });
    } catch (err) {
      if (err instanceof S3Error && err.code === 'EntityTooLarge') {
        // Past the quota's room, or the policy's maximum, the hasher stops the upload: the size it would have had is not known.
        if (maxSize < allowed) throw await quota.refusal(maxSize + 1);
        if (range && maxSize === range.max) {
          throw new S3Error('EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', { MaxSizeAllowed: String(range.max) });
        }
      }
      throw err;
    }
    const { staged, digests, release } = received;
    try {
      // The rest of the body (fields after the file, ignored) must be well-formed too.
      await form.done;
      checkFileSize(range, digests.size);
    } catch (err) {
      release();
      await staged.abort();
      throw err;
    }
    const record = singleBlobRecord({ bucketId: bucket.id, key }, staged, digests, meta, ctx.clock());
    if (tagging?.length) record.tagging = tagging;
    const objectAcl = objectAclOf(acl);
    if (objectAcl) record.acl = objectAcl;
    let versionId: string | undefined;
    try {
      const report = await changeEvents({ ctx, principal, clientIp: r.record.clientIp, requestId: r.record.requestId }, bucket, key);
      versionId = await commitObject(ctx, record, staged, {}, report && { report, name: 's3:ObjectCreated:Post' });
    } finally {
      release();
    }
    r.record.key = key;
    return successResponse(r, fields, bucketName, key, record.etag, versionId);
  } finally {
    await quota.release();
  }
}
