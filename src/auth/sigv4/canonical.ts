// Canonical request construction (AWS SigV4) and the AWS flavour of URI encoding.
//
// All encoding works on bytes, never on decoded JS strings, so malformed percent-escapes or invalid
// UTF-8 in a request can never make decodeURIComponent (or anything else) throw.
import { hash } from 'node:crypto';

export const ALGORITHM = 'AWS4-HMAC-SHA256';
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

const HEX_UPPER = '0123456789ABCDEF';

/** Bytes that AWS URI encoding leaves alone: A-Z a-z 0-9 - . _ ~ */
const UNRESERVED = new Uint8Array(256);
for (let c = 0x30; c <= 0x39; c++) UNRESERVED[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) UNRESERVED[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) UNRESERVED[c] = 1;
UNRESERVED[0x2d] = 1; // -
UNRESERVED[0x2e] = 1; // .
UNRESERVED[0x5f] = 1; // _
UNRESERVED[0x7e] = 1; // ~

/** Pre-computed '%XX' for every byte. */
const PCT: string[] = [];
for (let b = 0; b < 256; b++) PCT.push('%' + (HEX_UPPER[b >> 4] ?? '') + (HEX_UPPER[b & 15] ?? ''));

function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
}

/**
 * Percent-decodes `s` to raw bytes. A '%' not followed by two hex digits is kept literally.
 * With `plusAsSpace`, '+' decodes to a space (form decoding, used for query strings only).
 */
export function percentDecodeBytes(s: string, plusAsSpace: boolean): Buffer {
  const src = Buffer.from(s, 'utf8');
  if (!src.includes(0x25) && !(plusAsSpace && src.includes(0x2b))) return src;
  const out = Buffer.allocUnsafe(src.length);
  let j = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src[i] as number;
    if (c === 0x25 && i + 2 < src.length) {
      const hi = hexVal(src[i + 1] as number);
      const lo = hexVal(src[i + 2] as number);
      if (hi >= 0 && lo >= 0) {
        out[j++] = (hi << 4) | lo;
        i += 2;
        continue;
      }
      out[j++] = c;
    } else if (c === 0x2b && plusAsSpace) {
      out[j++] = 0x20;
    } else {
      out[j++] = c;
    }
  }
  return out.subarray(0, j);
}

/** AWS URI-encodes raw bytes: everything but unreserved characters (and '/' with keepSlash) becomes %XX, upper-case hex. */
export function awsEncodeBytes(bytes: Uint8Array, keepSlash: boolean): string {
  let out = '';
  let runStart = 0;
  // Copy runs of unreserved bytes in one go; they are ASCII so latin1 == utf8.
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (UNRESERVED[b] === 1 || (keepSlash && b === 0x2f)) continue;
    if (i > runStart) out += Buffer.from(bytes.buffer, bytes.byteOffset + runStart, i - runStart).toString('latin1');
    out += PCT[b];
    runStart = i + 1;
  }
  if (runStart === 0) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
  if (runStart < bytes.length) {
    out += Buffer.from(bytes.buffer, bytes.byteOffset + runStart, bytes.length - runStart).toString('latin1');
  }
  return out;
}

/** AWS URI encoding of a (decoded) string, UTF-8 bytes. `encodeSlash` false keeps '/' as is (object key paths). */
export function awsUriEncode(s: string, encodeSlash = true): string {
  return awsEncodeBytes(Buffer.from(s, 'utf8'), !encodeSlash);
}

/**
 * Canonical form of a path that was sent with some other percent-encoding: decode every %XX to bytes
 * ('+' stays a literal '+': paths are not form-encoded) and re-encode with AWS URI encoding, keeping '/'.
 * An encoded slash (%2F) stays encoded: it is part of a key segment, not a separator. A '%' not followed by
 * two hex digits is a literal '%'. The empty path is '/'.
 */
export function reencodePath(rawPath: string): string {
  if (rawPath === '') return '/';
  const src = Buffer.from(rawPath, 'utf8');
  let out = '';
  for (let i = 0; i < src.length; i++) {
    let b = src[i] as number;
    if (b === 0x25 && i + 2 < src.length) {
      const hi = hexVal(src[i + 1] as number);
      const lo = hexVal(src[i + 2] as number);
      if (hi >= 0 && lo >= 0) {
        b = (hi << 4) | lo;
        i += 2;
        out += UNRESERVED[b] === 1 ? String.fromCharCode(b) : PCT[b];
        continue;
      }
    }
    out += UNRESERVED[b] === 1 || b === 0x2f ? String.fromCharCode(b) : PCT[b];
  }
  return out;
}

/** Only unreserved characters (A-Z a-z 0-9 - . _ ~). */
function isPlain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f || UNRESERVED[c] !== 1) return false;
  }
  return true;
}

export interface QueryParam {
  /** Decoded name, UTF-8 (invalid sequences replaced). */
  name: string;
  value: string;
  /** AWS-encoded name and value, as they appear in the canonical query string. */
  encName: string;
  encValue: string;
}

/**
 * Splits a raw query string into parameters. A parameter without '=' has an empty value; empty segments
 * ('a=1&&b=2', a trailing '&') are skipped.
 *
 * '+' handling: a '+' in a query string is decoded as a space, the way AWS S3 (and URLSearchParams,
 * and form decoding in general) reads it. AWS SDKs (botocore, Go v2, JS v3, Java v2) always percent-encode
 * both space (%20) and '+' (%2B) in query strings, so for them the choice does not matter; AWS SDK for Java v1
 * sends spaces as '+' while signing them as %20, which this choice accepts, as AWS does. A client that
 * wants a literal plus must send %2B. Callers decoding the query for the operation itself must use the
 * same rule (URLSearchParams does), so that what was verified is what is executed.
 */
export function parseQuery(rawQuery: string): QueryParam[] {
  const out: QueryParam[] = [];
  if (rawQuery === '') return out;
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const rawName = eq === -1 ? part : part.slice(0, eq);
    const rawValue = eq === -1 ? '' : part.slice(eq + 1);
    // Most parameters are plain (X-Amz-Date, X-Amz-Signature, a prefix of letters): decoding and AWS
    // encoding give them back as they are, without the byte buffers below.
    if (isPlain(rawName) && isPlain(rawValue)) {
      out.push({ name: rawName, value: rawValue, encName: rawName, encValue: rawValue });
      continue;
    }
    const nameBytes = percentDecodeBytes(rawName, true);
    const valueBytes = percentDecodeBytes(rawValue, true);
    out.push({
      name: nameBytes.toString('utf8'),
      value: valueBytes.toString('utf8'),
      encName: awsEncodeBytes(nameBytes, false),
      encValue: awsEncodeBytes(valueBytes, false),
    });
  }
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Canonical query string: encoded pairs sorted by encoded name, then encoded value, 'name=value' joined by '&'. */
export function canonicalQueryString(params: readonly QueryParam[], exclude?: (p: QueryParam) => boolean): string {
  const kept = exclude ? params.filter((p) => !exclude(p)) : params.slice();
  kept.sort((a, b) => cmp(a.encName, b.encName) || cmp(a.encValue, b.encValue));
  let out = '';
  for (let i = 0; i < kept.length; i++) {
    const p = kept[i] as QueryParam;
    if (i > 0) out += '&';
    out += p.encName + '=' + p.encValue;
  }
  return out;
}

/** Trim and collapse inner whitespace runs to one space. */
function canonicalHeaderValue(v: string): string {
  return v.trim().replace(/\s+/g, ' ');
}

/**
 * Canonical headers block (each 'name:value\n') for the signed header names, in the order given.
 * Repeated headers (array values) are joined with ','. A signed header that is absent gets an empty value.
 */
export function canonicalHeaders(
  headers: Record<string, string | string[] | undefined>,
  signedHeaders: readonly string[],
): string {
  let out = '';
  for (const name of signedHeaders) {
    const lname = name.toLowerCase();
    const v = Object.prototype.hasOwnProperty.call(headers, lname) ? headers[lname] : undefined;
    let value: string;
    if (v === undefined) value = '';
    else if (Array.isArray(v)) value = v.map((x) => canonicalHeaderValue(String(x))).join(',');
    else value = canonicalHeaderValue(String(v));
    out += name + ':' + value + '\n';
  }
  return out;
}

export interface CanonicalRequestParts {
  method: string;
  canonicalUri: string;
  canonicalQuery: string;
  canonicalHeaders: string;
  signedHeaders: readonly string[];
  payloadHash: string;
}

export function canonicalRequest(p: CanonicalRequestParts): string {
  return (
    p.method + '\n' +
    p.canonicalUri + '\n' +
    p.canonicalQuery + '\n' +
    p.canonicalHeaders + '\n' +
    p.signedHeaders.join(';') + '\n' +
    p.payloadHash
  );
}

/** One-shot (crypto.hash, Node 20.12+): half of createHash's ~0.9 µs on a canonical request, which every header-signed request hashes. */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

export function stringToSign(amzDate: string, scope: string, canonicalReq: string): string {
  return ALGORITHM + '\n' + amzDate + '\n' + scope + '\n' + sha256Hex(canonicalReq);
}
