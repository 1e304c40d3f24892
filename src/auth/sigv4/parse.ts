// Parsing of the SigV4 Authorization header, presigned query parameters, credentials and dates.
// Every failure is an S3Error; nothing here can throw anything else.
import { S3Error } from '../../errors/s3-errors.js';
import { ALGORITHM, type QueryParam } from './canonical.js';
import type { PayloadMode } from './types.js';

export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
export const STREAMING_PAYLOAD = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD';
export const STREAMING_PAYLOAD_TRAILER = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER';
export const STREAMING_UNSIGNED_TRAILER = 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';

export interface Credential {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  terminator: string;
}

export interface ParsedAuthorization {
  credential: Credential;
  signedHeaders: string[];
  signature: string;
}

const HEADER_MALFORMED = 'The authorization header is malformed';
const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function headerMalformed(detail: string): S3Error {
  return new S3Error('AuthorizationHeaderMalformed', `${HEADER_MALFORMED}; ${detail}`);
}

/** Credential=AKID/YYYYMMDD/region/service/aws4_request (already decoded). undefined when malformed. */
export function parseCredential(value: string): Credential | undefined {
  const parts = value.split('/');
  if (parts.length !== 5) return undefined;
  const [accessKeyId, date, region, service, terminator] = parts as [string, string, string, string, string];
  if (accessKeyId === '' || date === '' || region === '' || service === '' || terminator === '') return undefined;
  return { accessKeyId, date, region, service, terminator };
}

/** 'host;x-amz-date' -> ['host', 'x-amz-date']; undefined when empty or containing a non-token name. */
export function parseSignedHeaders(value: string): string[] | undefined {
  if (value === '') return undefined;
  const names = value.split(';');
  for (const n of names) if (!TOKEN_RE.test(n)) return undefined;
  return names;
}

/**
 * Parses `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`. Components may be separated by
 * commas and/or whitespace in any combination and order. An empty Signature is accepted here (it then simply
 * fails verification as SignatureDoesNotMatch).
 */
export function parseAuthorizationHeader(header: string): ParsedAuthorization {
  const trimmed = header.trim();
  const firstSpace = trimmed.search(/\s/);
  const algorithm = firstSpace === -1 ? trimmed : trimmed.slice(0, firstSpace);
  if (algorithm !== ALGORITHM) {
    throw new S3Error(
      'InvalidRequest',
      'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.',
    );
  }
  const rest = firstSpace === -1 ? '' : trimmed.slice(firstSpace + 1);
  const fields = new Map<string, string>();
  for (const part of rest.split(/[\s,]+/)) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw headerMalformed(`incorrect authorization header component '${part.slice(0, 64)}'.`);
    const key = part.slice(0, eq);
    if (key !== 'Credential' && key !== 'SignedHeaders' && key !== 'Signature') {
      throw headerMalformed(`unknown authorization header component '${key.slice(0, 64)}'.`);
    }
    if (fields.has(key)) throw headerMalformed(`duplicate authorization header component '${key}'.`);
    fields.set(key, part.slice(eq + 1));
  }
  const cred = fields.get('Credential');
  const sh = fields.get('SignedHeaders');
  const sig = fields.get('Signature');
  if (cred === undefined) throw headerMalformed('missing Credential.');
  if (sh === undefined) throw headerMalformed('missing SignedHeaders.');
  if (sig === undefined) throw headerMalformed('missing Signature.');
  const credential = parseCredential(cred);
  if (!credential) {
    throw headerMalformed('the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".');
  }
  const signedHeaders = parseSignedHeaders(sh);
  if (!signedHeaders) throw headerMalformed('the SignedHeaders component is malformed.');
  return { credential, signedHeaders, signature: sig };
}

/** The last parseAmzDate's input and answer: the requests of one second share their x-amz-date. */
let lastAmzDate: string | undefined;
let lastAmzTime: number | undefined;

/** 20130524T000000Z -> ms since epoch, undefined when not a valid ISO 8601 basic UTC timestamp. */
export function parseAmzDate(s: string): number | undefined {
  if (s === lastAmzDate) return lastAmzTime;
  const time = parseAmzDateOnce(s);
  lastAmzDate = s;
  lastAmzTime = time;
  return time;
}

function parseAmzDateOnce(s: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return undefined;
  const back = new Date(0);
  back.setUTCFullYear(y, mo - 1, d); // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 19xx
  back.setUTCHours(h, mi, se === 60 ? 59 : se, 0);
  if (back.getUTCDate() !== d || back.getUTCMonth() !== mo - 1) return undefined; // e.g. 20130231
  return back.getTime();
}

/** ms since epoch -> 20130524T000000Z */
export function formatAmzDate(t: number): string {
  return new Date(t).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}Z$/, 'Z');
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** RFC 1123 'Fri, 24 May 2013 00:00:00 GMT' -> ms since epoch (the day name is not checked). */
export function parseHttpDate(s: string): number | undefined {
  const m = /^(?:[A-Za-z]{3}, )?(\d{1,2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) (?:GMT|UTC|\+0000)$/.exec(s.trim());
  if (!m) return undefined;
  const month = MONTHS.indexOf(m[2] ?? '');
  if (month < 0) return undefined;
  const d = Number(m[1]);
  const y = Number(m[3]);
  const h = Number(m[4]);
  const mi = Number(m[5]);
  const se = Number(m[6]);
  if (d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return undefined;
  const back = new Date(0);
  back.setUTCFullYear(y, month, d);
  back.setUTCHours(h, mi, se === 60 ? 59 : se, 0);
  if (back.getUTCDate() !== d || back.getUTCMonth() !== month) return undefined;
  return back.getTime();
}

/** Classifies x-amz-content-sha256. Anything other than the documented values is InvalidArgument. */
export function parsePayloadMode(value: string): PayloadMode {
  if (/^[0-9a-f]{64}$/.test(value)) return { kind: 'signed', sha256: value };
  switch (value) {
    case UNSIGNED_PAYLOAD:
      return { kind: 'unsigned' };
    case STREAMING_PAYLOAD:
      return { kind: 'streaming-signed', trailer: false };
    case STREAMING_PAYLOAD_TRAILER:
      return { kind: 'streaming-signed', trailer: true };
    case STREAMING_UNSIGNED_TRAILER:
      return { kind: 'streaming-unsigned-trailer' };
    default:
      throw new S3Error(
        'InvalidArgument',
        'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, ' +
          'STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.',
        { ArgumentName: 'x-amz-content-sha256', ArgumentValue: value.slice(0, 256) },
      );
  }
}

/** One header value as a string: undefined when absent, arrays joined with ','. */
export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  if (!Object.prototype.hasOwnProperty.call(headers, name)) return undefined;
  const v = headers[name];
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v.map(String).join(',') : String(v);
}

export interface PresignedParams {
  algorithm: string;
  credential: string;
  amzDate: string;
  expires: string;
  signedHeaders: string;
  signature: string;
}

const PRESIGN_NAMES = {
  'X-Amz-Algorithm': 'algorithm',
  'X-Amz-Credential': 'credential',
  'X-Amz-Date': 'amzDate',
  'X-Amz-Expires': 'expires',
  'X-Amz-SignedHeaders': 'signedHeaders',
  'X-Amz-Signature': 'signature',
} as const satisfies Record<string, keyof PresignedParams>;

function queryError(message: string): S3Error {
  return new S3Error('AuthorizationQueryParametersError', message);
}

/** Extracts the X-Amz-* presign parameters (decoded). Missing or repeated ones are AuthorizationQueryParametersError. */
export function extractPresignedParams(params: readonly QueryParam[]): PresignedParams {
  const found: Partial<Record<keyof PresignedParams, string>> = {};
  for (const p of params) {
    if (!Object.prototype.hasOwnProperty.call(PRESIGN_NAMES, p.name)) continue;
    const field = PRESIGN_NAMES[p.name as keyof typeof PRESIGN_NAMES];
    if (found[field] !== undefined) throw queryError(`Query-string authentication parameter ${p.name} was given more than once.`);
    found[field] = p.value;
  }
  const { algorithm, credential, amzDate, expires, signedHeaders, signature } = found;
  if (
    algorithm === undefined || credential === undefined || amzDate === undefined ||
    expires === undefined || signedHeaders === undefined || signature === undefined
  ) {
    throw queryError(
      'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, ' +
        'X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
    );
  }
  return { algorithm, credential, amzDate, expires, signedHeaders, signature };
}
