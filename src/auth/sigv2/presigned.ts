// Query-string authentication of Signature Version 2 (AWSAccessKeyId, Expires, Signature): what
// `aws s3 presign` of aws-cli v1 produces unless s3.signature_version is set. Presigned URLs only;
// SigV2 header auth is refused (every maintained client signs headers with SigV4).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { S3Error } from '../../errors/s3-errors.js';
import type { SigV4Request, VerifiedAuth } from '../sigv4/index.js';

/** Query parameters that belong to the signed resource (botocore HmacV1Auth.QSAOfInterest). */
const SUBRESOURCES = new Set([
  'accelerate', 'acl', 'cors', 'defaultObjectAcl', 'location', 'logging', 'partNumber', 'policy',
  'requestPayment', 'torrent', 'versioning', 'versionId', 'versions', 'website', 'uploads', 'uploadId',
  'response-content-type', 'response-content-language', 'response-expires', 'response-cache-control',
  'response-content-disposition', 'response-content-encoding', 'delete', 'lifecycle', 'tagging', 'restore',
  'storageClass', 'notification', 'replication', 'requestPayment', 'analytics', 'metrics', 'inventory',
  'select', 'select-type', 'object-lock',
]);

/** One week, as for SigV4 presigned URLs. */
const MAX_LIFETIME_S = 604800;

function header(req: SigV4Request, name: string): string {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : (v ?? '');
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, '%20'));
  } catch {
    throw new S3Error('AccessDenied', 'Query-string authentication parameters are malformed.');
  }
}

export function isPresignedV2(rawQuery: string): boolean {
  return /(^|&)AWSAccessKeyId=/.test(rawQuery) && /(^|&)Signature=/.test(rawQuery);
}

/**
 * Verifies a SigV2 presigned request. `resourcePath` is the encoded path as signed: `/bucket/key` (for
 * virtual-host requests the bucket is prepended by the caller).
 */
export function verifyPresignedV2(
  req: SigV4Request,
  resourcePath: string,
  opts: { now: Date; getSecret(accessKeyId: string): string | undefined },
): VerifiedAuth {
  const pairs = req.rawQuery.split('&').filter(Boolean).map((p) => {
    const eq = p.indexOf('=');
    return eq < 0 ? ([safeDecode(p), undefined] as const) : ([safeDecode(p.slice(0, eq)), safeDecode(p.slice(eq + 1))] as const);
  });
  const get = (name: string): string | undefined => pairs.find(([k]) => k === name)?.[1];
  const accessKeyId = get('AWSAccessKeyId') ?? '';
  const signature = get('Signature') ?? '';
  const expires = get('Expires') ?? '';
  if (!/^\d{1,12}$/.test(expires)) throw new S3Error('AccessDenied', 'Query-string authentication requires the Expires parameter.');
  const nowS = Math.floor(opts.now.getTime() / 1000);
  if (Number(expires) < nowS) {
    throw new S3Error('AccessDenied', 'Request has expired', {
      Expires: new Date(Number(expires) * 1000).toISOString(),
      ServerTime: opts.now.toISOString(),
    });
  }
  if (Number(expires) > nowS + MAX_LIFETIME_S) {
    throw new S3Error('AccessDenied', 'Query-string authentication version 2 requests are limited to 7 days.');
  }
  const secret = opts.getSecret(accessKeyId);
  if (secret === undefined) throw new S3Error('InvalidAccessKeyId');

  const sub = pairs
    .filter(([k]) => SUBRESOURCES.has(k))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => (v === undefined ? k : `${k}=${v}`));
  const amzHeaders = Object.keys(req.headers)
    .filter((h) => h.startsWith('x-amz-'))
    .sort()
    .map((h) => `${h}:${header(req, h).trim()}\n`)
    .join('');
  const stringToSign = [
    req.method,
    header(req, 'content-md5'),
    header(req, 'content-type'),
    expires,
    amzHeaders + resourcePath + (sub.length ? `?${sub.join('&')}` : ''),
  ].join('\n');
  const expected = createHmac('sha1', secret).update(stringToSign, 'utf8').digest();
  const given = Buffer.from(signature, 'base64');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new S3Error('SignatureDoesNotMatch');
  return {
    accessKeyId,
    method: 'presigned',
    payload: { kind: 'unsigned' },
    signingKey: Buffer.alloc(0),
    signature,
    amzDate: '',
    scope: '',
  };
}
