// Where a request points: bucket and key from path-style or virtual-host URLs. Keys are opaque: no
// path normalisation, '..' and backslashes are just characters.
import { S3Error } from '../errors/s3-errors.js';
import { hasNonXmlChar } from './xml.js';

export interface S3Address {
  bucket?: string;
  key?: string;
  /** Path as sent, still percent-encoded, without the query. */
  rawPath: string;
  rawQuery: string;
  /** Decoded query parameters; a name without '=' maps to ''. First value wins. */
  query: Map<string, string>;
  /** True when the bucket came from the Host header. */
  virtualHost: boolean;
}

const MAX_KEY_BYTES = 1024;

function decode(part: string, what: string): string {
  // Nothing to decode (most keys, names and values): no decodeURIComponent.
  if (part.indexOf('%') === -1) return part;
  try {
    return decodeURIComponent(part);
  } catch {
    throw new S3Error('InvalidURI', `Couldn't parse the specified URI: malformed ${what}.`);
  }
}

/** A query name or value: '+' is a space (form decoding), then percent-decoding. */
function decodeQueryPart(part: string): string {
  return decode(part.indexOf('+') === -1 ? part : part.replace(/\+/g, '%20'), 'query');
}

export function parseQuery(rawQuery: string): Map<string, string> {
  const query = new Map<string, string>();
  if (!rawQuery) return query;
  for (const pair of rawQuery.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const name = decodeQueryPart(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : decodeQueryPart(pair.slice(eq + 1));
    if (!query.has(name)) query.set(name, value);
  }
  return query;
}

// Keys with a character XML 1.0 cannot carry, even as a character reference (src/s3/xml.ts: C0
// controls other than tab, line feed and carriage return, which listings write as references, and
// U+FFFE/U+FFFF): AWS stores such keys and then lists them in XML no XML 1.0 parser reads unless
// encoding-type=url was asked; we refuse them when they are written, so every listing parses
// (docs/COMPATIBILITY.md "Keys are opaque"). Keys stored before that stay readable and deletable:
// requests that only name an existing key (`existing`) are not refused for them.

/**
 * The error for a key S3 cannot store, if any. `existing`: the request reads, deletes or copies from
 * a key rather than creating one, so a key written before such characters were refused is allowed.
 */
export function keyProblem(key: string, opts: { existing?: boolean } = {}): S3Error | undefined {
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes > MAX_KEY_BYTES) return new S3Error('KeyTooLongError', undefined, { Size: String(bytes), MaxSizeAllowed: String(MAX_KEY_BYTES) });
  if (key.includes('\u0000')) return new S3Error('InvalidArgument', 'Object key must not contain a NUL character.');
  if (!opts.existing && hasNonXmlChar(key)) {
    return new S3Error('InvalidArgument', 'Object key must not contain control characters other than tab, line feed and carriage return.');
  }
  return undefined;
}

export function validateKey(key: string, opts: { existing?: boolean } = {}): void {
  const problem = keyProblem(key, opts);
  if (problem) throw problem;
}

/** Host without port, lower-cased. */
function hostname(host: string | undefined): string {
  if (!host) return '';
  const h = host.toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
}

/** The bucket a virtual-hosted-style Host names (`<bucket>.<s3 domain>`), if it names one. */
export function virtualHostBucket(host: string | undefined, s3Domains: readonly string[]): string | undefined {
  const name = hostname(host);
  for (const domain of s3Domains) {
    const d = hostname(domain);
    if (name.length > d.length + 1 && name.endsWith('.' + d)) return name.slice(0, -(d.length + 1));
  }
  return undefined;
}

export function parseAddress(rawUrl: string, host: string | undefined, s3Domains: readonly string[]): S3Address {
  const q = rawUrl.indexOf('?');
  const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const rawQuery = q < 0 ? '' : rawUrl.slice(q + 1);
  if (!rawPath.startsWith('/')) throw new S3Error('InvalidURI');
  const query = parseQuery(rawQuery);

  const bucket = virtualHostBucket(host, s3Domains);
  if (bucket !== undefined) {
    const keyPart = rawPath.slice(1);
    return { bucket, key: keyPart ? decode(keyPart, 'key') : undefined, rawPath, rawQuery, query, virtualHost: true };
  }

  const slash = rawPath.indexOf('/', 1);
  const bucketPart = slash < 0 ? rawPath.slice(1) : rawPath.slice(1, slash);
  const keyPart = slash < 0 ? '' : rawPath.slice(slash + 1);
  return {
    bucket: bucketPart ? decode(bucketPart, 'bucket') : undefined,
    key: keyPart ? decode(keyPart, 'key') : undefined,
    rawPath,
    rawQuery,
    query,
    virtualHost: false,
  };
}
