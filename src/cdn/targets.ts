// What a CDN URL names, from the raw request target (never normalised: `..` and `//` are just bytes):
//   /<32 hex asset id>/<percent-encoded file name>[?expires=&signature=]   an asset
//   /b/<bucket>/<percent-encoded key>                                      an object of a public bucket
// Other query parameters are ignored; they never change what is served.
import { pathOf } from '../http/request-target.js';

export interface AssetTarget {
  id: string;
  /** Percent-decoded. */
  fileName: string;
  expires?: string;
  signature?: string;
}

export interface BucketObjectTarget {
  bucket: string;
  /** Percent-decoded; otherwise the bytes as sent. */
  key: string;
}

const MAX_KEY_BYTES = 1024;

function decode(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/**
 * `/<32 hex id>/<one percent-encoded segment>[?query]` -> the asset target; anything else undefined.
 * Only `expires` and `signature` are read from the query, each at most once.
 */
export function parseCdnTarget(url: string | undefined): AssetTarget | undefined {
  if (!url) return undefined;
  const q = url.indexOf('?');
  const m = /^\/([0-9a-f]{32})\/([^/]+)$/.exec(pathOf(url));
  if (!m) return undefined;
  const fileName = decode(m[2] as string);
  if (fileName === undefined) return undefined;
  const target: AssetTarget = { id: m[1] as string, fileName };
  if (q >= 0) {
    const params = new URLSearchParams(url.slice(q + 1));
    const expires = params.getAll('expires');
    const signature = params.getAll('signature');
    if (expires.length === 1 && signature.length === 1) {
      target.expires = expires[0] as string;
      target.signature = signature[0] as string;
    }
  }
  return target;
}

/**
 * `/b/<bucket>/<key>[?query]` -> bucket name and key; undefined for anything else (no key, bad
 * percent-encoding, a key S3 could not hold). The query is ignored entirely.
 */
export function parseBucketTarget(url: string | undefined): BucketObjectTarget | undefined {
  if (!url) return undefined;
  const path = pathOf(url);
  if (!path.startsWith('/b/')) return undefined;
  const rest = path.slice(3);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  const bucket = decode(rest.slice(0, slash));
  const key = decode(rest.slice(slash + 1));
  if (bucket === undefined || key === undefined || key === '') return undefined;
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES || key.includes('\u0000')) return undefined;
  return { bucket, key };
}
