// Where a project hostname's requests go, as a user gives it -> a checked origin, or one sentence naming
// the field that is wrong. Pure: the bucket named here is looked up (and its owner checked) by the service.
//
// - `url`: `http://` or `https://` host[:port], nothing else (no path, query, fragment or user name; one
//   trailing `/` is dropped). The host is a DNS name (IDN become punycode) or an IP literal. Names are
//   resolved and checked by the proxy when it connects (src/net/guarded-connector.ts: after DNS, so a name
//   that later resolves somewhere internal is refused too); what can be refused now is: an IP literal
//   the address policy refuses (loopback, private, link-local such as 169.254.169.254, ...) and
//   `localhost`, unless edge.allowPrivateOrigins is set.
// - `bucket`: a bucket name; `indexDocument` (default `index.html`, no `/`) is appended to paths ending in
//   `/`, `errorDocument` (optional) is served with status 404. Both are S3 keys of at most 1024 bytes.
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { isLdhLabel } from '../domains/normalize.js';
import type { Origin } from '../db/repos/hostname-model.js';
import { refusal, type AddressPolicy } from '../net/address-policy.js';


/** The operator's way round the policy, named wherever it refuses (a tenant reads it as: not here). */
const PRIVATE_HINT =
  ' (an operator who proxies to their own network allows it with --edge-allow-private-origins true, or S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS=true, on the server and the admin CLI alike)';
export class OriginError extends Error {
  override name = 'OriginError';
}

export type UrlOrigin = Extract<Origin, { kind: 'url' }>;

/** A bucket origin as given: the bucket by name, resolved to its id by the service. */
export interface BucketOriginInput {
  kind: 'bucket';
  bucket: string;
  indexDocument: string;
  errorDocument: string | null;
}

export type OriginInput = UrlOrigin | BucketOriginInput;

export const DEFAULT_INDEX_DOCUMENT = 'index.html';
export const MAX_KEY_BYTES = 1024;
const MAX_URL_CHARS = 1024;
const MAX_BUCKET_CHARS = 255;
const MAX_NAME_OCTETS = 253;

const FIELDS = { url: ['kind', 'url', 'preserveHost'], bucket: ['kind', 'bucket', 'indexDocument', 'errorDocument'] } as const;
const FORMS = '{ "kind": "url", "url": "https://origin.example.com" } or { "kind": "bucket", "bucket": "my-site" }';

/** `where` + field: the path a message names (`body/origin/url`, or `url` alone). */
function at(where: string, field: string): string {
  return where === '' ? field : `${where}/${field}`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks an origin given by a user; `where` prefixes field names in messages (`body/origin`), `policy`
 * is the proxy's address policy (edge.allowPrivateOrigins).
 */
export function parseOriginInput(input: unknown, policy: AddressPolicy, where = ''): OriginInput {
  const self = where === '' ? 'the origin' : where;
  if (!isRecord(input)) throw new OriginError(`${self} must be an object: ${FORMS}`);
  const kind = input['kind'] ?? ('url' in input ? 'url' : 'bucket' in input ? 'bucket' : undefined);
  if (kind !== 'url' && kind !== 'bucket') throw new OriginError(`${at(where, 'kind')} must be 'url' or 'bucket': ${FORMS}`);
  const extra = Object.keys(input).find((k) => !(FIELDS[kind] as readonly string[]).includes(k));
  if (extra !== undefined) throw new OriginError(`${self} has a field '${extra.slice(0, 64)}' that a ${kind} origin does not take (it takes ${FIELDS[kind].join(', ')})`);
  return kind === 'url' ? urlOrigin(input, policy, where) : bucketOrigin(input, where);
}

function urlOrigin(input: Record<string, unknown>, policy: AddressPolicy, where: string): UrlOrigin {
  const field = at(where, 'url');
  const preserveHost = input['preserveHost'] ?? false;
  if (typeof preserveHost !== 'boolean') throw new OriginError(`${at(where, 'preserveHost')} must be true or false`);
  return { kind: 'url', url: checkedUrl(input['url'], policy, field), preserveHost };
}

/** `http(s)://host[:port]` in its stored form: lower-case, punycode, no default port, no trailing dot or slash. */
export function checkedUrl(raw: unknown, policy: AddressPolicy, field = 'url'): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw new OriginError(`${field} must be a URL such as https://origin.example.com`);
  const text = raw.trim();
  if (text.length > MAX_URL_CHARS) throw new OriginError(`${field} is too long (at most ${MAX_URL_CHARS} characters)`);
  if (!/^https?:\/\//i.test(text)) throw new OriginError(`${field} must start with http:// or https://`);
  const authority = /^https?:\/\/([^/?#\\]*)(.*)$/is.exec(text);
  const rest = authority?.[2] ?? '';
  if (rest !== '' && rest !== '/') {
    throw new OriginError(`${field} must be scheme, host and port only: no path, query or fragment (the request's path is appended)`);
  }
  if ((authority?.[1] ?? '').includes('@')) throw new OriginError(`${field} must not carry a user name or password`);
  if (/\s/.test(authority?.[1] ?? '')) throw new OriginError(`${field} contains a space`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new OriginError(`${field} is not a valid URL`);
  }
  if (url.port === '0') throw new OriginError(`${field} has port 0`);
  const host = url.hostname.replace(/\.$/, '');
  checkHost(host, policy, field);
  return `${url.protocol}//${host}${url.port === '' ? '' : `:${url.port}`}`;
}

function checkHost(host: string, policy: AddressPolicy, field: string): void {
  const ip = host.startsWith('[') ? host.slice(1, -1) : host;
  if (isIP(ip) !== 0) {
    const refused = refusal(ip, policy);
    if (refused !== undefined) {
      throw new OriginError(`${field}: ${ip} is a ${refused} address; an origin must be reachable on the public internet${PRIVATE_HINT}`);
    }
    return;
  }
  // WHATWG URL has mapped IDN to punycode and lower-cased; what is left must be letters, digits and hyphens.
  const labels = host.split('.');
  if (host === '' || host.length > MAX_NAME_OCTETS || !labels.every(isLdhLabel) || domainToASCII(host) !== host) {
    throw new OriginError(`${field}: '${host.slice(0, 64)}' is not a valid host name (letters, digits and hyphens, at most ${MAX_NAME_OCTETS} characters)`);
  }
  if (!policy.allowPrivateAddresses && (host === 'localhost' || host.endsWith('.localhost'))) {
    throw new OriginError(`${field}: ${host} is this machine (loopback); an origin must be reachable on the public internet${PRIVATE_HINT}`);
  }
}

function bucketOrigin(input: Record<string, unknown>, where: string): BucketOriginInput {
  const bucket = input['bucket'];
  if (typeof bucket !== 'string' || bucket === '' || bucket.length > MAX_BUCKET_CHARS) {
    throw new OriginError(`${at(where, 'bucket')} must be the name of one of your buckets`);
  }
  const index = input['indexDocument'] ?? DEFAULT_INDEX_DOCUMENT;
  const indexDocument = checkedKey(index, at(where, 'indexDocument'));
  if (indexDocument.includes('/')) throw new OriginError(`${at(where, 'indexDocument')} must be a file name without '/' (it is appended to paths ending in '/')`);
  const error = input['errorDocument'] ?? null;
  return { kind: 'bucket', bucket, indexDocument, errorDocument: error === null ? null : checkedKey(error, at(where, 'errorDocument')) };
}

/** An object key: 1 to 1024 UTF-8 bytes, no control characters (XML 1.0 cannot carry them). */
function checkedKey(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw new OriginError(`${field} must be an object key (a non-empty string)`);
  if (Buffer.byteLength(value, 'utf8') > MAX_KEY_BYTES) throw new OriginError(`${field} is longer than ${MAX_KEY_BYTES} bytes`);
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new OriginError(`${field} contains a control character`);
  return value;
}
