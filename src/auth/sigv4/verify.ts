// AWS Signature Version 4 request verification for S3: Authorization header and presigned URLs.
import { timingSafeEqual } from 'node:crypto';
import { S3Error } from '../../errors/s3-errors.js';
import {
  ALGORITHM,
  canonicalHeaders,
  canonicalQueryString,
  canonicalRequest,
  parseQuery,
  reencodePath,
  stringToSign,
  type QueryParam,
} from './canonical.js';
import {
  UNSIGNED_PAYLOAD,
  extractPresignedParams,
  headerValue,
  parseAmzDate,
  parseAuthorizationHeader,
  parseCredential,
  parseHttpDate,
  parsePayloadMode,
  parseSignedHeaders,
  formatAmzDate,
  type Credential,
} from './parse.js';
import { deriveSigningKey, signWithKey } from './signing-key.js';
import type { PresignedMemo, PresignedRequest } from './presigned-memo.js';
import type { PayloadMode, SigV4Request, VerifiedAuth, VerifyOptions } from './types.js';

export const DEFAULT_MAX_SKEW_MS = 15 * 60 * 1000;
export const MAX_PRESIGNED_EXPIRES = 604800;

type Mechanism = 'header' | 'presigned';

/** Keep attacker-controlled strings short in error messages. */
function clip(s: string, n = 128): string {
  return s.length > n ? s.slice(0, n) + '...' : s;
}

function scopeError(mechanism: Mechanism, detail: string, extra: Record<string, string> = {}): S3Error {
  return mechanism === 'header'
    ? new S3Error('AuthorizationHeaderMalformed', `The authorization header is malformed; ${detail}`, extra)
    : new S3Error('AuthorizationQueryParametersError', `Error parsing the X-Amz-Credential parameter; ${detail}`, extra);
}

function checkScope(cred: Credential, amzDate: string, region: string, service: string, mechanism: Mechanism): void {
  if (cred.region !== region) {
    throw scopeError(mechanism, `the region '${clip(cred.region)}' is wrong; expecting '${region}'`, { Region: region });
  }
  if (cred.service !== service) {
    throw scopeError(mechanism, `incorrect service '${clip(cred.service)}'. This endpoint belongs to '${service}'.`);
  }
  if (cred.terminator !== 'aws4_request') {
    throw scopeError(mechanism, `incorrect terminal '${clip(cred.terminator)}'. This endpoint uses 'aws4_request'.`);
  }
  if (cred.date !== amzDate.slice(0, 8)) {
    throw scopeError(mechanism, 'Invalid credential date. Date is not the same as X-Amz-Date.');
  }
}

function lookupSecret(opts: VerifyOptions, accessKeyId: string): string {
  const secret = opts.getSecret(accessKeyId);
  if (secret === undefined) {
    throw new S3Error('InvalidAccessKeyId', undefined, { AWSAccessKeyId: clip(accessKeyId) });
  }
  return secret;
}

/** Constant-time comparison of a provided hex signature with the computed digest; malformed input is simply false. */
export function signatureMatches(provided: string, computed: Buffer): boolean {
  if (provided.length !== computed.length * 2 || !/^[0-9a-f]+$/.test(provided)) return false;
  const p = Buffer.from(provided, 'hex');
  return p.length === computed.length && timingSafeEqual(p, computed);
}

interface SignatureCheck {
  method: string;
  rawPath: string;
  canonicalQuery: string;
  canonicalHeaders: string;
  signedHeaders: readonly string[];
  payloadHash: string;
  amzDate: string;
  scope: string;
  signingKey: Buffer;
  provided: string;
  accessKeyId: string;
}

/**
 * Canonical URI for S3: the raw path exactly as sent (S3 neither normalises nor double-encodes). Clients differ
 * in which characters they percent-encode on the wire versus in their canonical request (e.g. '$' sent raw but
 * signed as %24, lower-case hex escapes), so when the raw path does not match, the AWS re-encoding of the
 * decoded path is tried too. The signature binds the decoded key either way, since both candidates decode to
 * the same bytes.
 */
function checkSignature(c: SignatureCheck): void {
  const rawUri = c.rawPath === '' ? '/' : c.rawPath;
  let first: { creq: string; sts: string } | undefined;
  // The re-encoded candidate is computed only when the raw path did not match (most requests do).
  for (const uri of [rawUri, undefined]) {
    const candidate = uri ?? reencodePath(c.rawPath);
    if (uri === undefined && candidate === rawUri) break;
    const creq = canonicalRequest({
      method: c.method,
      canonicalUri: candidate,
      canonicalQuery: c.canonicalQuery,
      canonicalHeaders: c.canonicalHeaders,
      signedHeaders: c.signedHeaders,
      payloadHash: c.payloadHash,
    });
    const sts = stringToSign(c.amzDate, c.scope, creq);
    if (signatureMatches(c.provided, signWithKey(c.signingKey, sts))) return;
    first ??= { creq, sts };
  }
  throw new S3Error('SignatureDoesNotMatch', undefined, {
    AWSAccessKeyId: clip(c.accessKeyId),
    StringToSign: first?.sts ?? '',
    SignatureProvided: clip(c.provided, 256),
    CanonicalRequest: clip(first?.creq ?? '', 16384),
  });
}

/**
 * AWS rejects requests carrying x-amz-* headers that are not covered by the signature (otherwise anyone
 * holding a presigned URL could add e.g. x-amz-acl or x-amz-meta-* to it). x-amz-content-sha256 is exempt:
 * its value is the payload-hash line of the canonical request, so it is covered anyway.
 */
function checkAmzHeadersSigned(headers: SigV4Request['headers'], signedHeaders: readonly string[]): void {
  // Made when a request carries an x-amz-* header to look up (most GETs carry none).
  let signed: Set<string> | undefined;
  const notSigned: string[] = [];
  for (const name in headers) {
    const lname = name.toLowerCase();
    if (!lname.startsWith('x-amz-') || lname === 'x-amz-content-sha256') continue;
    signed ??= new Set(signedHeaders.map((h) => h.toLowerCase()));
    if (headers[name] === undefined || signed.has(lname)) continue;
    notSigned.push(lname);
  }
  if (notSigned.length > 0) {
    throw new S3Error('AccessDenied', 'There were headers present in the request which were not signed', {
      HeadersNotSigned: clip(notSigned.join(', '), 1024),
    });
  }
}

function requireHost(signedHeaders: readonly string[], mechanism: Mechanism): void {
  if (signedHeaders.some((h) => h.toLowerCase() === 'host')) return;
  if (mechanism === 'header') {
    throw new S3Error('AuthorizationHeaderMalformed', "The authorization header is malformed; the 'host' header must be signed.");
  }
  throw new S3Error('AuthorizationQueryParametersError', "X-Amz-SignedHeaders must include the 'host' header.");
}

/** Request time of a header-authenticated request: x-amz-date, else Date (RFC 1123). */
function headerRequestTime(headers: SigV4Request['headers']): { amzDate: string; time: number } {
  const xAmzDate = headerValue(headers, 'x-amz-date');
  if (xAmzDate !== undefined) {
    const time = parseAmzDate(xAmzDate.trim());
    if (time !== undefined) return { amzDate: xAmzDate.trim(), time };
  } else {
    const date = headerValue(headers, 'date');
    const time = date === undefined ? undefined : parseHttpDate(date);
    if (time !== undefined) return { amzDate: formatAmzDate(time), time };
  }
  throw new S3Error('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
}

function verifyHeaderAuth(req: SigV4Request, params: readonly QueryParam[], authz: string, opts: VerifyOptions, service: string, now: number): VerifiedAuth {
  const { credential, signedHeaders, signature } = parseAuthorizationHeader(authz);
  requireHost(signedHeaders, 'header');

  const payloadHash = headerValue(req.headers, 'x-amz-content-sha256');
  if (payloadHash === undefined) {
    throw new S3Error('InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
  }
  const payload = parsePayloadMode(payloadHash);

  const { amzDate, time } = headerRequestTime(req.headers);
  checkScope(credential, amzDate, opts.region, service, 'header');
  const secret = lookupSecret(opts, credential.accessKeyId);

  const maxSkew = opts.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
  if (Math.abs(now - time) > maxSkew) {
    throw new S3Error('RequestTimeTooSkewed', undefined, {
      RequestTime: amzDate,
      ServerTime: new Date(now).toISOString(),
      MaxAllowedSkewMilliseconds: String(maxSkew),
    });
  }

  const signingKey = deriveSigningKey(secret, credential.date, credential.region, credential.service);
  const scope = `${credential.date}/${credential.region}/${credential.service}/aws4_request`;
  checkSignature({
    method: req.method,
    rawPath: req.rawPath,
    canonicalQuery: canonicalQueryString(params),
    canonicalHeaders: canonicalHeaders(req.headers, signedHeaders),
    signedHeaders,
    payloadHash,
    amzDate,
    scope,
    signingKey,
    provided: signature,
    accessKeyId: credential.accessKeyId,
  });
  checkAmzHeadersSigned(req.headers, signedHeaders);
  return { accessKeyId: credential.accessKeyId, method: 'header', payload, signingKey, signature, amzDate, scope };
}

function verifyPresigned(req: SigV4Request, params: readonly QueryParam[], opts: VerifyOptions, service: string, now: number, memoKey?: PresignedRequest): VerifiedAuth {
  const p = extractPresignedParams(params);
  if (p.algorithm !== ALGORITHM) {
    throw new S3Error('AuthorizationQueryParametersError', 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  }
  const credential = parseCredential(p.credential);
  if (!credential) {
    throw new S3Error(
      'AuthorizationQueryParametersError',
      'Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
    );
  }
  const time = parseAmzDate(p.amzDate);
  if (time === undefined) {
    throw new S3Error('AuthorizationQueryParametersError', 'X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd\'T\'HHmmss\'Z\'"');
  }
  // AWS's answers and messages (quoted by clients that met them: aws-cli#5464, fog#3528, minio-js#1312):
  // beyond a week or negative is 400 AuthorizationQueryParametersError; 0 is a URL that expired at
  // once, 403 AccessDenied "Request has expired" (checked below with the other expiry).
  if (!/^-?\d{1,16}$/.test(p.expires)) {
    throw new S3Error('AuthorizationQueryParametersError', 'X-Amz-Expires should be a number');
  }
  const expires = Number(p.expires);
  if (expires < 0) {
    throw new S3Error('AuthorizationQueryParametersError', 'X-Amz-Expires must be non-negative');
  }
  if (expires > MAX_PRESIGNED_EXPIRES) {
    throw new S3Error(
      'AuthorizationQueryParametersError',
      'X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds',
    );
  }
  const signedHeaders = parseSignedHeaders(p.signedHeaders);
  if (!signedHeaders) throw new S3Error('AuthorizationQueryParametersError', 'X-Amz-SignedHeaders is malformed.');
  requireHost(signedHeaders, 'presigned');
  checkScope(credential, p.amzDate, opts.region, service, 'presigned');
  const secret = lookupSecret(opts, credential.accessKeyId);

  const maxSkew = opts.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
  if (time - now > maxSkew) {
    throw new S3Error('AccessDenied', 'Request is not valid yet', {
      'X-Amz-Date': p.amzDate,
      ServerTime: new Date(now).toISOString(),
    });
  }
  if (expires === 0 || now > time + expires * 1000) {
    throw new S3Error('AccessDenied', 'Request has expired', {
      'X-Amz-Expires': p.expires,
      Expires: new Date(time + expires * 1000).toISOString(),
      ServerTime: new Date(now).toISOString(),
    });
  }

  const sentHash = headerValue(req.headers, 'x-amz-content-sha256');
  const payloadHash = sentHash ?? UNSIGNED_PAYLOAD;
  const payload: PayloadMode = parsePayloadMode(payloadHash);

  const signingKey = deriveSigningKey(secret, credential.date, credential.region, credential.service);
  const scope = `${credential.date}/${credential.region}/${credential.service}/aws4_request`;
  checkSignature({
    method: req.method,
    rawPath: req.rawPath,
    canonicalQuery: canonicalQueryString(params, (q) => q.name === 'X-Amz-Signature'),
    canonicalHeaders: canonicalHeaders(req.headers, signedHeaders),
    signedHeaders,
    payloadHash,
    amzDate: p.amzDate,
    scope,
    signingKey,
    provided: p.signature,
    accessKeyId: credential.accessKeyId,
  });
  checkAmzHeadersSigned(req.headers, signedHeaders);
  const auth: VerifiedAuth = {
    accessKeyId: credential.accessKeyId,
    method: 'presigned',
    payload,
    signingKey,
    signature: p.signature,
    amzDate: p.amzDate,
    scope,
  };
  if (memoKey !== undefined && opts.memo && signedHeaders.length === 1 && signedHeaders[0] === 'host') {
    opts.memo.set(memoKey, { auth, secret, time, expiresMs: expires * 1000 });
  }
  return auth;
}

/**
 * A presigned URL verified before (presigned-memo.ts), still within its time window, its key still
 * holding the secret it verified with, and no x-amz-* header added outside the signature: its earlier
 * answer. undefined: verify it in full (which also gives the right error for whatever changed).
 */
function rememberedPresigned(req: SigV4Request, key: PresignedRequest, opts: VerifyOptions & { memo: PresignedMemo }, now: number): VerifiedAuth | undefined {
  const entry = opts.memo.get(key);
  if (entry === undefined) return undefined;
  const maxSkew = opts.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
  if (entry.time - now > maxSkew || entry.expiresMs === 0 || now > entry.time + entry.expiresMs) return undefined;
  if (opts.getSecret(entry.auth.accessKeyId) !== entry.secret) return undefined;
  checkAmzHeadersSigned(req.headers, HOST_ONLY);
  return entry.auth;
}

const HOST_ONLY: readonly string[] = ['host'];

/** Returns undefined for an anonymous request (no Authorization header and no X-Amz-Algorithm/X-Amz-Signature query). */
export function verifyRequest(req: SigV4Request, opts: VerifyOptions): VerifiedAuth | undefined {
  const authz = headerValue(req.headers, 'authorization');
  let memoKey: PresignedRequest | undefined;
  if (opts.memo && authz === undefined && req.rawQuery.includes('X-Amz-Signature=')) {
    const now = opts.now.getTime();
    memoKey = {
      method: req.method,
      host: headerValue(req.headers, 'host'),
      rawPath: req.rawPath,
      rawQuery: req.rawQuery,
      contentSha256: headerValue(req.headers, 'x-amz-content-sha256'),
    };
    const remembered = Number.isFinite(now) ? rememberedPresigned(req, memoKey, opts as VerifyOptions & { memo: PresignedMemo }, now) : undefined;
    if (remembered !== undefined) return remembered;
  }
  const params = parseQuery(req.rawQuery);
  const presigned = params.some((p) => p.name === 'X-Amz-Algorithm' || p.name === 'X-Amz-Signature');
  if (authz === undefined && !presigned) return undefined;
  if (authz !== undefined && presigned) {
    throw new S3Error(
      'InvalidArgument',
      'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified',
      { ArgumentName: 'Authorization' },
    );
  }
  const now = opts.now.getTime();
  if (!Number.isFinite(now)) throw new S3Error('AccessDenied', 'Server clock unavailable');
  const service = opts.service ?? 's3';
  return authz !== undefined
    ? verifyHeaderAuth(req, params, authz, opts, service, now)
    : verifyPresigned(req, params, opts, service, now, memoKey);
}
